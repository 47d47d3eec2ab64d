import { AppError, badRequest, conflict, forbidden } from '../errors.js'
import type { CommitDiffT, CommitT } from '../../schemas/git.js'
import type { BlockerT, MergeBodyT, MergeCheckT, MergeResultT } from '../../schemas/git-merge-requests.js'
import { conflictsError, type MergePlumbing } from './merge-tree.js'
import type { MergeRequests, Mr } from './merge-requests.js'
import { mergeLevel, type ProtectedBranches, type WriteLevel } from './protection.js'
import type { RepoReader } from './reader.js'
import type { Repo } from './repositories.js'
import type { Reviews } from './reviews.js'
import type { Signature } from './writer.js'

/** Who asks: a user and how much they may change (`git.admin`, `git.write`, or null for read-only). */
export interface MergeCaller { userId: string, level: WriteLevel | null }

type AccessT = 'write' | 'admin' | 'nobody'
const mayMerge = (access: AccessT, level: WriteLevel | null): boolean => level !== null && (access === 'write' || (access === 'admin' && level === 'admin'))

/** How a blocker refuses a merge: status and code, in the order merge-check lists them. */
const REFUSALS: Record<BlockerT['code'], [number, string]> = {
  not_open: [409, 'APP_GIT_MR_NOT_OPEN'],
  permission: [403, 'APP_FORBIDDEN'],
  branch_protected: [403, 'APP_GIT_BRANCH_PROTECTED'],
  draft: [409, 'APP_GIT_MR_DRAFT'],
  source_missing: [409, 'APP_GIT_MR_SOURCE_MISSING'],
  target_missing: [409, 'APP_GIT_MR_TARGET_MISSING'],
  stale_head: [409, 'APP_GIT_MR_HEAD_CHANGED'],
  conflicts: [409, 'APP_GIT_MR_CONFLICTS'],
  approvals: [409, 'APP_GIT_MR_APPROVALS_REQUIRED'],
  changes_requested: [409, 'APP_GIT_MR_CHANGES_REQUESTED']
}

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

  async check (repo: Repo, iid: number, caller: MergeCaller, expectedHeadSha?: string): Promise<MergeCheckT> {
    return await this.evaluate(repo, await this.deps.mergeRequests.get(repo, iid), caller, expectedHeadSha)
  }

  async merge (repo: Repo, iid: number, caller: MergeCaller, input: MergeBodyT): Promise<MergeResultT> {
    const mr = await this.deps.mergeRequests.get(repo, iid)
    const method = input.method ?? 'merge'
    if (input.deleteSourceBranch === true) {
      if (mr.sourceBranch === repo.defaultBranch) throw badRequest('APP_GIT_DEFAULT_BRANCH', `"${mr.sourceBranch}" is the default branch and is kept`)
      await this.deps.protection.check(repo, mr.sourceBranch, caller.level ?? 'write', 'delete')
    }
    const check = await this.evaluate(repo, mr, caller, input.expectedHeadSha)
    if (check.blockers.length > 0) throw refusal(check)
    const { headSha, targetSha, mergeBaseSha } = check
    const [merger, author] = await Promise.all([this.deps.signature(caller.userId), this.deps.signature(mr.authorId)])
    const message = input.commitMessage ?? defaultMessage(mr, method)
    const commitSha = await this.deps.plumbing.build(repo.gitDir, { method, target: targetSha, head: headSha, mergeBase: mergeBaseSha, message, merger, author })
    await this.deps.plumbing.moveBranch(repo.gitDir, mr.targetBranch, commitSha, targetSha, `plinth: merge !${mr.iid} (${method})`)
    const sourceDeleted = input.deleteSourceBranch === true && await this.deps.plumbing.deleteBranch(repo.gitDir, mr.sourceBranch, headSha)
    const merged = await this.deps.mergeRequests.markMerged(mr, caller.userId, method, commitSha, sourceDeleted)
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

  private async evaluate (repo: Repo, mr: Mr, caller: MergeCaller, expectedHeadSha?: string): Promise<MergeCheckT> {
    const blockers: BlockerT[] = []
    const block = (code: BlockerT['code'], message: string): void => { blockers.push({ code, message }) }
    const open = mr.state === 'open'
    if (!open) block('not_open', `The merge request is ${mr.state}`)
    const rules = await this.deps.protection.matching(repo, mr.targetBranch)
    if (caller.level === null) block('permission', 'Merging needs the "git.write" permission')
    else {
      const refusing = rules.find((rule) => !mayMerge(mergeLevel(rule), caller.level))
      if (refusing !== undefined) block('branch_protected', `"${mr.targetBranch}" is protected by "${refusing.pattern}": ${mergeLevel(refusing) === 'admin' ? 'only git.admin holders' : 'nobody'} may merge into it`)
    }
    if (mr.draft) block('draft', 'The merge request is a draft: mark it ready first')
    const targetExists = await this.deps.reader.refExists(repo.gitDir, `refs/heads/${mr.targetBranch}`)
    if (!mr.sourceBranchExists) block('source_missing', `The source branch "${mr.sourceBranch}" no longer exists`)
    if (!targetExists) block('target_missing', `The target branch "${mr.targetBranch}" no longer exists`)
    if (expectedHeadSha !== undefined && expectedHeadSha !== mr.headSha) block('stale_head', `The source head is ${mr.headSha}, not ${expectedHeadSha}: review the new commits first`)
    let conflicts: string[] = []
    let fastForward = false
    if (open && mr.sourceBranchExists && targetExists) {
      fastForward = await this.deps.plumbing.isAncestor(repo.gitDir, mr.targetSha, mr.headSha)
      if (!fastForward) conflicts = (await this.deps.plumbing.mergeTree(repo.gitDir, mr.targetSha, mr.headSha)).conflicts
      if (conflicts.length > 0) block('conflicts', conflictsError(conflicts).message)
    }
    const required = Math.max(0, ...rules.map((rule) => rule.requiredApprovals ?? 0))
    const tally = await this.deps.reviews.tally(mr._id)
    const given = tally.approvedBy.filter((userId) => userId !== mr.authorId).length
    if (given < required) block('approvals', `${required} approval${required === 1 ? '' : 's'} required, ${given} given`)
    if (tally.changesRequestedBy.length > 0) block('changes_requested', `Changes requested by ${tally.changesRequestedBy.length} reviewer${tally.changesRequestedBy.length === 1 ? '' : 's'}`)
    blockers.sort((a, b) => ORDER.indexOf(a.code) - ORDER.indexOf(b.code))
    return {
      mergeable: blockers.length === 0,
      headSha: mr.headSha,
      targetSha: mr.targetSha,
      mergeBaseSha: mr.mergeBaseSha,
      fastForward,
      conflicts,
      approvals: { required, given },
      blockers
    }
  }
}

const ORDER = Object.keys(REFUSALS) as Array<BlockerT['code']>

/** The first blocker's status and code, with every blocker in the message. */
function refusal (check: MergeCheckT): AppError {
  const [first, ...rest] = check.blockers
  const [status, code] = REFUSALS[first.code]
  const message = rest.length === 0 ? first.message : `${first.message}; also: ${rest.map((blocker) => blocker.message).join('; ')}`
  if (first.code === 'conflicts') return conflictsError(check.conflicts)
  if (first.code === 'stale_head') return conflict(code, message, { actual: check.headSha })
  if (first.code === 'permission') return forbidden(code, message, { permission: 'git.write' })
  return new AppError(code, status, message)
}

function defaultMessage (mr: Mr, method: string): string {
  const body = mr.description === '' ? '' : `\n\n${mr.description}`
  if (method === 'squash') return `${mr.title}${body}\n`
  return `Merge branch '${mr.sourceBranch}' into '${mr.targetBranch}'\n\n${mr.title}${body}\n\nMerge request !${mr.iid}\n`
}
