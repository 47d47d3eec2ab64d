import type { Clock } from '../clock.js'
import type { IdGenerator } from '../ids.js'
import type { Store } from '../store/types.js'
import type { GitCli } from './git-cli.js'
import { MergePlumbing } from './merge-tree.js'
import { MergeRequests } from './merge-requests.js'
import { MergeService } from './merges.js'
import type { ProtectedBranches } from './protection.js'
import type { RepoReader } from './reader.js'
import type { Repo, Repositories } from './repositories.js'
import { Reviews } from './reviews.js'
import { Comments } from './comments.js'
import { Reactions } from './reactions.js'
import { Suggestions } from './suggestions.js'
import type { Transport } from './transport.js'
import type { RepoLabels } from './labels.js'
import type { Signature } from './writer.js'

/** Merge requests, their reviews and merging, as the git plugin hands them to the routes. */
export interface MergeRequestFamily {
  mergeRequests: MergeRequests
  reviews: Reviews
  merging: MergeService
  comments: Comments
  reactions: Reactions
  suggestions: Suggestions
}

export interface MergeRequestFamilyDeps {
  clock: Clock
  newId: IdGenerator
  git: GitCli
  reader: RepoReader
  repositories: Repositories
  protection: ProtectedBranches
  labels: RepoLabels
  transport: Transport
  signature: (userId: string) => Promise<Signature>
  canRead: (repo: Repo, userId: string) => Promise<boolean>
  /** Where a failure after a push goes: the push itself has succeeded and cannot be told. */
  onError: (error: unknown) => void
}

/**
 * Builds the merge-request services and joins them to the repository's
 * events: a deleted repository takes its merge requests and reviews along,
 * every push brings the open merge requests up to date, a moved branch
 * outdates the inline comments on files it changed, and a deleted label
 * leaves the merge requests that carried it.
 */
export async function mergeRequestFamily (store: Store, deps: MergeRequestFamilyDeps): Promise<MergeRequestFamily> {
  const plumbing = new MergePlumbing({ git: deps.git, reader: deps.reader, clock: deps.clock })
  const reviews = new Reviews(store, deps)
  const mergeRequests = new MergeRequests(store, { ...deps, merges: plumbing, reviews })
  const comments = new Comments(store, { ...deps, plumbing })
  const reactions = new Reactions(store, deps)
  await Promise.all([reviews.init(), mergeRequests.init(), comments.init(), reactions.init()])
  mergeRequests.onMoved(async (repo, mr) => { await comments.markOutdated(repo, mr) })
  deps.labels.onDelete(async (repo, labelId) => { await mergeRequests.records.updateMany({ repoId: repo._id, labelIds: labelId }, { $pull: { labelIds: labelId } }) })
  const merging = new MergeService({ reader: deps.reader, plumbing, mergeRequests, reviews, protection: deps.protection, signature: deps.signature })
  deps.repositories.onDelete(async (repo) => {
    const ids = await mergeRequests.deleteForRepo(repo)
    await Promise.all([reviews.deleteForMergeRequests(ids), comments.deleteForMergeRequests(ids), reactions.deleteForMergeRequests(ids)])
  })
  deps.transport.onPushed(async (repo) => { await mergeRequests.afterPush(repo).catch(deps.onError) })
  const suggestions = new Suggestions({ git: deps.git, clock: deps.clock, comments, mergeRequests, protection: deps.protection, signature: deps.signature })
  return { mergeRequests, reviews, merging, comments, reactions, suggestions }
}
