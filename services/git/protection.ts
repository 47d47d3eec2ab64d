import { forbidden } from '../errors.js'
import { isoString } from '../iso-dates.js'
import type { Clock } from '../clock.js'
import type { IdGenerator } from '../ids.js'
import type { Store } from '../store/types.js'
import { GIT_LIMITS, type ProtectedBranchT, type PushAccessT } from '../../schemas/git.js'
import { PatternRules, type PatternRuleKind } from './pattern-rules.js'
import type { Repo } from './repositories.js'
import type { TagPolicyRule } from './tag-protection.js'

type BranchRuleFields = {
  push: PushAccessT
  allowForcePush: boolean
  allowDelete: boolean
  // Absent on rules stored before merge settings existed; read as the defaults.
  merge?: PushAccessT
  requiredApprovals?: number
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

const BRANCH_RULES: PatternRuleKind<BranchRuleFields, ProtectedBranchT> = {
  collection: 'git_protected_branches',
  refKind: 'branch',
  limit: GIT_LIMITS.protectedBranchesPerRepo,
  noun: 'protected-branch',
  notFound: 'Protected-branch rule not found',
  exists: (pattern) => `A rule for "${pattern}" exists already`,
  defaults: { push: 'write', allowForcePush: false, allowDelete: false, merge: 'write', requiredApprovals: 0 },
  view: (record) => {
    const { _id, repoId: _repo, createdAt, updatedAt, ...rest } = record
    return { id: _id, ...rest, merge: rest.merge ?? 'write', requiredApprovals: rest.requiredApprovals ?? 0, createdAt: isoString(createdAt), updatedAt: isoString(updatedAt) }
  }
}

const mayPush = (push: PushAccessT, level: WriteLevel): boolean => push === 'write' || (push === 'admin' && level === 'admin')

/**
 * Protected-branch rules. Enforced in two places from the same rules: the
 * REST branch routes ask `check…` here, and pushes are judged inside git by
 * the pre-receive hook, which gets `policy(…)` for its caller.
 */
export class ProtectedBranches extends PatternRules<BranchRuleFields, ProtectedBranchT> {
  constructor (store: Store, deps: { clock: Clock, newId: IdGenerator }) {
    super(store, BRANCH_RULES, deps)
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
}

function protectedBranch (branch: string, why: string): Error {
  return forbidden('APP_GIT_BRANCH_PROTECTED', `Branch "${branch}" is protected: ${why}`)
}
