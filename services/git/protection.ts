import { badRequest, conflict, forbidden, notFound } from '../errors.js'
import { DuplicateKeyError } from '../store/errors.js'
import { isoString } from '../iso-dates.js'
import type { Clock } from '../clock.js'
import type { IdGenerator } from '../ids.js'
import type { Store, StoreCollection, WithId } from '../store/types.js'
import { GIT_LIMITS, type ProtectedBranchBodyT, type ProtectedBranchT, type PushAccessT } from '../../schemas/git.js'
import { checkRefPattern, matchesRefPattern } from './names.js'
import type { Repo } from './repositories.js'
import type { TagPolicyRule } from './tag-protection.js'

type RuleRecord = {
  repoId: string
  pattern: string
  push: PushAccessT
  allowForcePush: boolean
  allowDelete: boolean
  merge?: PushAccessT
  requiredApprovals?: number
  createdAt: Date
  updatedAt: Date
}

/** How much a caller may change in a repository: a writer (`git.write`, write deploy key) or an admin (`git.admin`). */
export type WriteLevel = 'write' | 'admin'

/** A push's rules as the pre-receive hook gets them: already decided for this caller, matched with matchesRefPattern. */
export interface PushPolicy {
  defaultBranch: string
  /** Protected-branch rules. */
  rules: Array<{ pattern: string, push: boolean, forcePush: boolean, delete: boolean }>
  /** Protected-tag rules. */
  tags: TagPolicyRule[]
}

function toView (record: WithId<RuleRecord>): ProtectedBranchT {
  const { _id, repoId: _repo, createdAt, updatedAt, ...rest } = record
  return { id: _id, ...rest, merge: rest.merge ?? 'write', requiredApprovals: rest.requiredApprovals ?? 0, createdAt: isoString(createdAt), updatedAt: isoString(updatedAt) }
}

const mayPush = (push: PushAccessT, level: WriteLevel): boolean => push === 'write' || (push === 'admin' && level === 'admin')

/**
 * Protected-branch rules. Enforced in two places from the same rules: the
 * REST branch routes ask `check…` here, and pushes are judged inside git by
 * the pre-receive hook, which gets `policy(…)` for its caller.
 */
export class ProtectedBranches {
  private readonly rules: StoreCollection<RuleRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator }) {
    this.rules = store.collection<RuleRecord>('git_protected_branches')
  }

  async init (): Promise<void> {
    await this.rules.createIndex({ repoId: 1, pattern: 1 }, { unique: true })
  }

  async list (repo: Repo): Promise<ProtectedBranchT[]> {
    return (await this.records(repo)).map(toView)
  }

  async create (repo: Repo, input: ProtectedBranchBodyT): Promise<ProtectedBranchT> {
    const pattern = checkRefPattern(input.pattern, 'body.pattern', 'branch')
    if (await this.rules.countDocuments({ repoId: repo._id }) >= GIT_LIMITS.protectedBranchesPerRepo) {
      throw badRequest('APP_GIT_TOO_MANY_RULES', `At most ${GIT_LIMITS.protectedBranchesPerRepo} protected-branch rules per repository`, { limit: GIT_LIMITS.protectedBranchesPerRepo })
    }
    const now = this.deps.clock.now()
    const record = { _id: this.deps.newId(), repoId: repo._id, pattern, push: input.push ?? 'write', allowForcePush: input.allowForcePush ?? false, allowDelete: input.allowDelete ?? false, merge: input.merge ?? 'write', requiredApprovals: input.requiredApprovals ?? 0, createdAt: now, updatedAt: now }
    try {
      await this.rules.insertOne(record)
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw conflict('APP_GIT_RULE_EXISTS', `A rule for "${pattern}" exists already`)
      throw error
    }
    return toView(record)
  }

  async update (repo: Repo, ruleId: string, input: Partial<ProtectedBranchBodyT>): Promise<ProtectedBranchT> {
    const changes: Partial<RuleRecord> = { updatedAt: this.deps.clock.now() }
    if (input.pattern !== undefined) changes.pattern = checkRefPattern(input.pattern, 'body.pattern', 'branch')
    if (input.push !== undefined) changes.push = input.push
    if (input.allowForcePush !== undefined) changes.allowForcePush = input.allowForcePush
    if (input.allowDelete !== undefined) changes.allowDelete = input.allowDelete
    if (input.merge !== undefined) changes.merge = input.merge
    if (input.requiredApprovals !== undefined) changes.requiredApprovals = input.requiredApprovals
    let updated: WithId<RuleRecord> | null
    try {
      updated = await this.rules.findOneAndUpdate({ _id: ruleId, repoId: repo._id }, { $set: changes }, { returnDocument: 'after' })
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw conflict('APP_GIT_RULE_EXISTS', `A rule for "${input.pattern ?? ''}" exists already`)
      throw error
    }
    if (updated === null) throw ruleNotFound()
    return toView(updated)
  }

  async delete (repo: Repo, ruleId: string): Promise<void> {
    const { deletedCount } = await this.rules.deleteOne({ _id: ruleId, repoId: repo._id })
    if (deletedCount === 0) throw ruleNotFound()
  }

  async deleteForRepo (repo: Repo): Promise<void> {
    await this.rules.deleteMany({ repoId: repo._id })
  }

  /** The patterns of the rules that match `branch`. */
  async matching (repo: Repo, branch: string): Promise<Array<WithId<RuleRecord>>> {
    return (await this.records(repo)).filter((rule) => matchesRefPattern(rule.pattern, branch))
  }

  /** The rules a push by a caller of `level` is held to, for the pre-receive hook. */
  async policy (repo: Repo, level: WriteLevel): Promise<Omit<PushPolicy, 'tags'>> {
    return {
      defaultBranch: repo.defaultBranch,
      rules: (await this.records(repo)).map((rule) => ({
        pattern: rule.pattern,
        push: mayPush(rule.push, level),
        forcePush: rule.allowForcePush && mayPush(rule.push, level),
        delete: rule.allowDelete && mayPush(rule.push, level)
      }))
    }
  }

  /** What the REST routes ask before they create or delete a branch. */
  async check (repo: Repo, branch: string, level: WriteLevel, change: 'create' | 'delete'): Promise<void> {
    for (const rule of await this.matching(repo, branch)) {
      if (!mayPush(rule.push, level)) throw protectedBranch(branch, `only ${rule.push === 'admin' ? 'git.admin holders' : 'nobody'} may change it`)
      if (change === 'delete' && !rule.allowDelete) throw protectedBranch(branch, 'it may not be deleted')
    }
  }

  private async records (repo: Repo): Promise<Array<WithId<RuleRecord>>> {
    return await this.rules.find({ repoId: repo._id }, { sort: { pattern: 1 } }).toArray()
  }
}

function ruleNotFound (): Error {
  return notFound('APP_GIT_RULE_NOT_FOUND', 'Protected-branch rule not found')
}

function protectedBranch (branch: string, why: string): Error {
  return forbidden('APP_GIT_BRANCH_PROTECTED', `Branch "${branch}" is protected: ${why}`)
}
