import type { WithId } from '../../store/types.js'
import type { MergeMethodT, MergeRequestT } from '../../../schemas/git-merge-requests.js'

/*
 * A merge request as stored, apart from the service that writes it
 * (merge-requests.ts), so the services beside it (reviews, comments,
 * reactions, suggestions, merges) name it without importing their caller.
 */

export type MrState = MergeRequestT['state']

export type MrRecord = {
  repoId: string
  iid: number
  title: string
  description: string
  draft: boolean
  state: MrState
  sourceBranch: string
  targetBranch: string
  headSha: string
  targetSha: string
  mergeBaseSha: string
  sourceBranchExists: boolean
  authorId: string
  assignees: string[]
  reviewers: string[]
  /** Ids of the repository's labels: a rename needs no change here. */
  labelIds: string[]
  /**
   * `source:target` while open, the merge request's own id otherwise:
   * a unique index on it (with repoId) lets one open merge request per pair
   * of branches win, however many are created at once.
   */
  openPair: string
  createdAt: Date
  updatedAt: Date
  closedAt: Date | null
  closedBy: string | null
  mergedAt: Date | null
  mergedBy: string | null
  mergeMethod: MergeMethodT | null
  mergeCommitSha: string | null
}

export type Mr = WithId<MrRecord>
