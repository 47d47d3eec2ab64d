import { isoString } from '../platform/iso-dates.js'
import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Store } from '../store/types.js'
import { GIT_LIMITS, type ProtectedBranchT, type PushAccessT } from '../../schemas/git.js'
import { gitErrors } from './errors.js'
import { allows, PatternRules, type PatternRuleKind, type WriteLevel } from './pattern-rules.js'
import type { Repo } from './repositories.js'
import type { TagPolicyRule } from './tag-protection.js'

type BranchRuleFields = {
  push: PushAccessT
  allowForcePush: boolean
  allowDelete: boolean
  // Absent on rules stored before merge settings existed; read as the defaults.
  merge?: PushAccessT
  // True when the rule's writer named `merge`; otherwise merging is never looser than pushing (mergeLevel).
  mergeExplicit?: boolean
  requiredApprovals?: number
}

/** A rule body as the routes pass it: `merge: null` goes back to following `push`. */
export type BranchRuleInput = Partial<Omit<BranchRuleFields, 'merge' | 'mergeExplicit'> & { pattern: string, merge: PushAccessT | null }>

const STRICTNESS: PushAccessT[] = ['write', 'admin', 'nobody']

/**
 * Who may merge into a rule's branches. A merge moves the branch as a push
 * does, so a rule that freezes pushing (`push: nobody` or `admin`) freezes
 * merging too, unless its writer set a looser `merge` explicitly. Rules
 * stored before the flag existed read as not explicit: their `merge: write`
 * was the old default, not a choice.
 */
export function mergeLevel (rule: Pick<BranchRuleFields, 'push' | 'merge' | 'mergeExplicit'>): PushAccessT {
  const merge = rule.merge ?? 'write'
  if (rule.mergeExplicit === true) return merge
  return STRICTNESS[Math.max(STRICTNESS.indexOf(rule.push), STRICTNESS.indexOf(merge))]
}

/** A body's `merge` as stored: a level given is explicit, null or absent-on-create follows `push`. */
function mergeChoice ({ merge, ...rest }: BranchRuleInput): Partial<BranchRuleFields> & { pattern?: string } {
  if (merge === undefined) return rest
  return { ...rest, merge: merge ?? 'write', mergeExplicit: merge !== null }
}

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
  defaults: { push: 'write', allowForcePush: false, allowDelete: false, merge: 'write', mergeExplicit: false, requiredApprovals: 0 },
  view: (record) => {
    const { _id, repoId: _repo, createdAt, updatedAt, ...rest } = record
    return {
      id: _id,
      ...rest,
      merge: mergeLevel(rest),
      mergeExplicit: rest.mergeExplicit === true,
      requiredApprovals: rest.requiredApprovals ?? 0,
      createdAt: isoString(createdAt),
      updatedAt: isoString(updatedAt)
    }
  }
}

/**
 * Protected-branch rules. Enforced in two places from the same rules: the
 * REST branch routes ask `check…` here, and pushes are judged inside git by
 * the pre-receive hook, which gets `policy(…)` for its caller.
 */
export class ProtectedBranches extends PatternRules<BranchRuleFields, ProtectedBranchT> {
  constructor (store: Store, deps: { clock: Clock, newId: IdGenerator }) {
    super(store, BRANCH_RULES, deps)
  }

  override async create (repo: Repo, input: BranchRuleInput & { pattern: string }): Promise<ProtectedBranchT> {
    return await super.create(repo, { ...mergeChoice(input), pattern: input.pattern })
  }

  override async update (repo: Repo, ruleId: string, input: BranchRuleInput): Promise<ProtectedBranchT> {
    return await super.update(repo, ruleId, mergeChoice(input))
  }

  /** The rules a push by a caller of `level` is held to, for the pre-receive hook. */
  async policy (repo: Repo, level: WriteLevel): Promise<Omit<PushPolicy, 'tags'>> {
    return {
      defaultBranch: repo.defaultBranch,
      rules: (await this.records(repo)).map((rule) => ({
        pattern: rule.pattern,
        push: allows(rule.push, level),
        forcePush: rule.allowForcePush && allows(rule.push, level),
        delete: rule.allowDelete && allows(rule.push, level)
      }))
    }
  }

  /** What the REST routes ask before they create or delete a branch. */
  async check (repo: Repo, branch: string, level: WriteLevel, change: 'create' | 'delete'): Promise<void> {
    for (const rule of await this.matching(repo, branch)) {
      if (!allows(rule.push, level)) throw gitErrors.branchProtected({ branch, why: `only ${rule.push === 'admin' ? 'git.admin holders' : 'nobody'} may change it` })
      if (change === 'delete' && !rule.allowDelete) throw gitErrors.branchProtected({ branch, why: 'it may not be deleted' })
    }
  }
}
