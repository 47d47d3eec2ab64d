import { isoString } from '../platform/iso-dates.js'
import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Store } from '../store/types.js'
import { GIT_LIMITS, type ProtectedTagT, type TagAccessT } from '../../schemas/git.js'
import { gitErrors } from './errors.js'
import { allows, PatternRules, type PatternRuleKind, type WriteLevel } from './pattern-rules.js'
import type { Repo } from './repositories.js'

type TagRuleFields = { create: TagAccessT, update: TagAccessT, delete: TagAccessT }

export type TagChange = 'create' | 'update' | 'delete'

/** A tag rule as the pre-receive hook gets it: what this caller may do to matching tags. */
export interface TagPolicyRule { pattern: string, create: boolean, update: boolean, delete: boolean }

const TAG_RULES: PatternRuleKind<TagRuleFields, ProtectedTagT> = {
  collection: 'git_protected_tags',
  refKind: 'tag',
  limit: GIT_LIMITS.protectedTagsPerRepo,
  noun: 'protected-tag',
  defaults: { create: 'admin', update: 'nobody', delete: 'nobody' },
  view: (record) => ({ id: record._id, pattern: record.pattern, create: record.create, update: record.update, delete: record.delete, createdAt: isoString(record.createdAt), updatedAt: isoString(record.updatedAt) })
}

/**
 * Protected-tag rules: who may create, move or delete tags matching a
 * pattern (by default only admins create them and nobody moves or deletes
 * them, so a release tag stays where it was pushed). Judged by the same
 * pre-receive hook as branches, and by the REST tag routes.
 */
export class ProtectedTags extends PatternRules<TagRuleFields, ProtectedTagT> {
  constructor (store: Store, deps: { clock: Clock, newId: IdGenerator }) {
    super(store, TAG_RULES, deps)
  }

  /** The tag rules a push by a caller of `level` is held to, for the pre-receive hook. */
  async policy (repo: Repo, level: WriteLevel): Promise<TagPolicyRule[]> {
    return (await this.records(repo)).map((rule) => ({ pattern: rule.pattern, create: allows(rule.create, level), update: allows(rule.update, level), delete: allows(rule.delete, level) }))
  }

  /** What the REST tag routes ask before they create or delete a tag. */
  async check (repo: Repo, tag: string, level: WriteLevel, change: TagChange): Promise<void> {
    for (const rule of await this.matching(repo, tag)) {
      const who = rule[change]
      if (who !== 'write' && !allows(who, level)) throw gitErrors.tagProtected({ tag, pattern: rule.pattern, who, change })
    }
  }
}
