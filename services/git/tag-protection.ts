import { badRequest, conflict, forbidden, notFound } from '../errors.js'
import { DuplicateKeyError } from '../store/errors.js'
import { isoString } from '../iso-dates.js'
import type { Clock } from '../clock.js'
import type { IdGenerator } from '../ids.js'
import type { Store, StoreCollection, WithId } from '../store/types.js'
import { GIT_LIMITS, type ProtectedTagBodyT, type ProtectedTagT, type TagAccessT } from '../../schemas/git.js'
import { checkRefPattern, matchesRefPattern } from './names.js'
import type { Repo } from './repositories.js'
import type { WriteLevel } from './protection.js'

type TagRuleRecord = {
  repoId: string
  pattern: string
  create: TagAccessT
  update: TagAccessT
  delete: TagAccessT
  createdAt: Date
  updatedAt: Date
}

export type TagChange = 'create' | 'update' | 'delete'

/** A tag rule as the pre-receive hook gets it: what this caller may do to matching tags. */
export interface TagPolicyRule { pattern: string, create: boolean, update: boolean, delete: boolean }

const may = (access: TagAccessT, level: WriteLevel): boolean => access === 'write' || (access === 'admin' && level === 'admin')

function toView (record: WithId<TagRuleRecord>): ProtectedTagT {
  return { id: record._id, pattern: record.pattern, create: record.create, update: record.update, delete: record.delete, createdAt: isoString(record.createdAt), updatedAt: isoString(record.updatedAt) }
}

const ruleNotFound = (): Error => notFound('APP_GIT_RULE_NOT_FOUND', 'Protected-tag rule not found')
const ruleExists = (pattern: string): Error => conflict('APP_GIT_RULE_EXISTS', `A tag rule for "${pattern}" exists already`)
const VERB: Record<TagChange, string> = { create: 'create it', update: 'move it', delete: 'delete it' }

/**
 * Protected-tag rules: who may create, move or delete tags matching a
 * pattern (by default only admins create them and nobody moves or deletes
 * them, so a release tag stays where it was pushed). Judged by the same
 * pre-receive hook as branches, and by the REST tag routes.
 */
export class ProtectedTags {
  private readonly rules: StoreCollection<TagRuleRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator }) {
    this.rules = store.collection<TagRuleRecord>('git_protected_tags')
  }

  async init (): Promise<void> {
    await this.rules.createIndex({ repoId: 1, pattern: 1 }, { unique: true })
  }

  async list (repo: Repo): Promise<ProtectedTagT[]> {
    return (await this.records(repo)).map(toView)
  }

  async create (repo: Repo, input: ProtectedTagBodyT): Promise<ProtectedTagT> {
    const pattern = checkRefPattern(input.pattern, 'body.pattern', 'tag')
    if (await this.rules.countDocuments({ repoId: repo._id }) >= GIT_LIMITS.protectedTagsPerRepo) {
      throw badRequest('APP_GIT_TOO_MANY_RULES', `At most ${GIT_LIMITS.protectedTagsPerRepo} protected-tag rules per repository`, { limit: GIT_LIMITS.protectedTagsPerRepo })
    }
    const now = this.deps.clock.now()
    const record = { _id: this.deps.newId(), repoId: repo._id, pattern, create: input.create ?? 'admin', update: input.update ?? 'nobody', delete: input.delete ?? 'nobody', createdAt: now, updatedAt: now }
    try {
      await this.rules.insertOne(record)
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw ruleExists(pattern)
      throw error
    }
    return toView(record)
  }

  async update (repo: Repo, ruleId: string, input: Partial<ProtectedTagBodyT>): Promise<ProtectedTagT> {
    const changes: Partial<TagRuleRecord> = { updatedAt: this.deps.clock.now() }
    if (input.pattern !== undefined) changes.pattern = checkRefPattern(input.pattern, 'body.pattern', 'tag')
    for (const change of ['create', 'update', 'delete'] as const) if (input[change] !== undefined) changes[change] = input[change]
    let updated: WithId<TagRuleRecord> | null
    try {
      updated = await this.rules.findOneAndUpdate({ _id: ruleId, repoId: repo._id }, { $set: changes }, { returnDocument: 'after' })
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw ruleExists(changes.pattern ?? '')
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

  /** The tag rules a push by a caller of `level` is held to, for the pre-receive hook. */
  async policy (repo: Repo, level: WriteLevel): Promise<TagPolicyRule[]> {
    return (await this.records(repo)).map((rule) => ({ pattern: rule.pattern, create: may(rule.create, level), update: may(rule.update, level), delete: may(rule.delete, level) }))
  }

  /** What the REST tag routes ask before they create or delete a tag. */
  async check (repo: Repo, tag: string, level: WriteLevel, change: TagChange): Promise<void> {
    for (const rule of await this.records(repo)) {
      if (matchesRefPattern(rule.pattern, tag) && !may(rule[change], level)) {
        throw forbidden('APP_GIT_TAG_PROTECTED', `Tag "${tag}" is protected by "${rule.pattern}": ${rule[change] === 'admin' ? 'only git.admin holders' : 'nobody'} may ${VERB[change]}`)
      }
    }
  }

  private async records (repo: Repo): Promise<Array<WithId<TagRuleRecord>>> {
    return await this.rules.find({ repoId: repo._id }, { sort: { pattern: 1 } }).toArray()
  }
}
