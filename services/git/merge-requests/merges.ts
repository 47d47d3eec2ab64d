import { commonErrors, type AppError } from '../../platform/errors.js'
import type { CommitDiffT, CommitT } from '../../../schemas/git.js'
import type { BlockerT, MergeBodyT, MergeCheckT, MergeResultT } from '../../../schemas/git-merge-requests.js'
import { actorLevel, type RepoActor } from '../access.js'
import { gitErrors } from '../errors.js'
import { mergeLevel, type ProtectedBranches } from '../protection.js'
import type { WriteLevel } from '../pattern-rules.js'
import type { RepoReader } from '../reader.js'
import type { Repo } from '../repositories.js'
import type { Signature } from '../writer.js'
import type { MergePlumbing } from './merge-tree.js'
import type { MergeRequests } from './merge-requests.js'
import type { Mr } from './records.js'
import type { Reviews } from './reviews.js'

type AccessT = 'write' | 'admin' | 'nobody'
const mayMerge = (access: AccessT, level: WriteLevel | null): boolean => level !== null && (access === 'write' || (access === 'admin' && level === 'admin'))

/** The order merge-check lists blockers in; a refused merge answers with the first one's code. */
const ORDER: Array<BlockerT['code']> = [
  'not_open', 'permission', 'branch_protected', 'draft', 'source_missing', 'target_missing', 'stale_head', 'conflicts', 'approvals', 'changes_requested'
]

/** One reason a merge may not happen: its code in merge-check, and the refusal it makes, naming the other blockers after its own. */
interface Blocked { code: BlockerT['code'], refusal: (others?: string[]) => AppError }

export interface MergeServiceDeps {
  reader: RepoReader
  plumbing: MergePlumbing
  mergeRequests: MergeRequests
  reviews: Reviews
  protection: ProtectedBranches
  signature: (userId: string) => Promise<Signature>
}

/**
 * Whether a merge request may be merged, with every reason it may not at
 * once, and the merge itself. The merge re-runs the check on the branches
 * as they are, builds the commits without a working tree and moves the
 * target by compare-and-swap from the head it checked.
 */
export class MergeService {
  constructor (private readonly deps: MergeServiceDeps) {}

  /**
   * Whether `actor` may merge now, every blocker at once. Who may merge is
   * decided here: writers and `git.admin` holders, as far as the target's
   * protected-branch rules let them (`mergeLevel`).
   */
  async check (repo: Repo, mr: Mr, actor: RepoActor, expectedHeadSha?: string): Promise<MergeCheckT> {
    const { check } = await this.evaluate(repo, mr, actor, expectedHeadSha)
    return check
  }

  async merge (repo: Repo, mr: Mr, actor: RepoActor, input: MergeBodyT): Promise<MergeResultT> {
    const method = input.method ?? 'merge'
    if (input.deleteSourceBranch === true) {
      if (mr.sourceBranch === repo.defaultBranch) throw gitErrors.defaultBranch({ branch: mr.sourceBranch, merging: true })
      await this.deps.protection.check(repo, mr.sourceBranch, actorLevel(actor) ?? 'write', 'delete')
    }
    const { check, blocked } = await this.evaluate(repo, mr, actor, input.expectedHeadSha)
    if (blocked.length > 0) {
      const [first, ...rest] = blocked
      throw first.refusal(rest.map((blocker) => blocker.refusal().message))
    }
    const { headSha, targetSha, mergeBaseSha } = check
    const [merger, author] = await Promise.all([this.deps.signature(actor.userId), this.deps.signature(mr.authorId)])
    const message = input.commitMessage ?? defaultMessage(mr, method)
    const commitSha = await this.deps.plumbing.build(repo.gitDir, { method, target: targetSha, head: headSha, mergeBase: mergeBaseSha, message, merger, author })
    await this.deps.plumbing.moveBranch(repo.gitDir, mr.targetBranch, commitSha, targetSha, `plinth: merge !${mr.iid} (${method})`)
    const sourceDeleted = input.deleteSourceBranch === true && await this.deps.plumbing.deleteBranch(repo.gitDir, mr.sourceBranch, headSha)
    const merged = await this.deps.mergeRequests.markMerged(mr, actor.userId, method, commitSha, sourceDeleted)
    // Other merge requests into (or out of) these branches see the move at once.
    await this.deps.mergeRequests.afterPush(repo)
    return { mergeRequest: await this.deps.mergeRequests.view(merged), method, commitSha, sourceBranchDeleted: sourceDeleted }
  }

  async diff (repo: Repo, mr: Mr): Promise<CommitDiffT> {
    return await this.deps.plumbing.diff(repo.gitDir, mr.mergeBaseSha, mr.headSha)
  }

  async commits (repo: Repo, mr: Mr): Promise<{ items: CommitT[], truncated: boolean }> {
    return await this.deps.plumbing.commits(repo.gitDir, mr.mergeBaseSha, mr.headSha)
  }

  private async evaluate (repo: Repo, mr: Mr, actor: RepoActor, expectedHeadSha?: string): Promise<{ check: MergeCheckT, blocked: Blocked[] }> {
    const blocked: Blocked[] = []
    const block = (code: BlockerT['code'], refusal: Blocked['refusal']): void => { blocked.push({ code, refusal }) }
    const open = mr.state === 'open'
    if (!open) block('not_open', (others) => gitErrors.mrNotOpen({ state: mr.state, others }))
    const rules = await this.deps.protection.matching(repo, mr.targetBranch)
    const level = actorLevel(actor)
    if (level === null) block('permission', () => commonErrors.forbidden({ permission: 'git.write' }))
    else {
      const refusing = rules.find((rule) => !mayMerge(mergeLevel(rule), level))
      if (refusing !== undefined) {
        const why = `${mergeLevel(refusing) === 'admin' ? 'only git.admin holders' : 'nobody'} may merge into it`
        block('branch_protected', (others) => gitErrors.branchProtected({ branch: mr.targetBranch, pattern: refusing.pattern, why, others }))
      }
    }
    if (mr.draft) block('draft', (others) => gitErrors.mrDraft({ others }))
    const targetExists = await this.deps.reader.refExists(repo.gitDir, `refs/heads/${mr.targetBranch}`)
    if (!mr.sourceBranchExists) block('source_missing', (others) => gitErrors.mrSourceMissing({ branch: mr.sourceBranch, others }))
    if (!targetExists) block('target_missing', (others) => gitErrors.mrTargetMissing({ branch: mr.targetBranch, others }))
    if (expectedHeadSha !== undefined && expectedHeadSha !== mr.headSha) {
      block('stale_head', (others) => gitErrors.mrHeadChanged({ actual: mr.headSha, expected: expectedHeadSha, others }))
    }
    let conflicts: string[] = []
    let fastForward = false
    if (open && mr.sourceBranchExists && targetExists) {
      fastForward = await this.deps.plumbing.isAncestor(repo.gitDir, mr.targetSha, mr.headSha)
      if (!fastForward) conflicts = (await this.deps.plumbing.mergeTree(repo.gitDir, mr.targetSha, mr.headSha)).conflicts
      const files = conflicts
      if (files.length > 0) block('conflicts', (others) => gitErrors.mrConflicts({ files, others }))
    }
    const required = Math.max(0, ...rules.map((rule) => rule.requiredApprovals ?? 0))
    const tally = await this.deps.reviews.tally(mr._id)
    const given = tally.approvedBy.filter((userId) => userId !== mr.authorId).length
    if (given < required) block('approvals', (others) => gitErrors.mrApprovalsRequired({ required, given, others }))
    const count = tally.changesRequestedBy.length
    if (count > 0) block('changes_requested', (others) => gitErrors.mrChangesRequested({ count, others }))
    blocked.sort((a, b) => ORDER.indexOf(a.code) - ORDER.indexOf(b.code))
    const check = {
      mergeable: blocked.length === 0,
      headSha: mr.headSha,
      targetSha: mr.targetSha,
      mergeBaseSha: mr.mergeBaseSha,
      fastForward,
      conflicts,
      approvals: { required, given },
      blockers: blocked.map(({ code, refusal }) => ({ code, message: refusal().message }))
    }
    return { check, blocked }
  }
}

function defaultMessage (mr: Mr, method: string): string {
  const body = mr.description === '' ? '' : `\n\n${mr.description}`
  if (method === 'squash') return `${mr.title}${body}\n`
  return `Merge branch '${mr.sourceBranch}' into '${mr.targetBranch}'\n\n${mr.title}${body}\n\nMerge request !${mr.iid}\n`
}
