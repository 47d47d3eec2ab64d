import type { Clock } from '../clock.js'
import type { IdGenerator } from '../ids.js'
import type { Store } from '../store/types.js'
import type { GitCli } from './git-cli.js'
import { MergePlumbing } from './merge-tree.js'
import { MergeRequests } from './merge-requests.js'
import { MergeService } from './merges.js'
import type { ProtectedBranches } from './protection.js'
import type { RepoReader } from './reader.js'
import type { Repositories } from './repositories.js'
import { Reviews } from './reviews.js'
import type { Transport } from './transport.js'
import type { Signature } from './writer.js'

/** Merge requests, their reviews and merging, as the git plugin hands them to the routes. */
export interface MergeRequestFamily {
  mergeRequests: MergeRequests
  reviews: Reviews
  merging: MergeService
}

export interface MergeRequestFamilyDeps {
  clock: Clock
  newId: IdGenerator
  git: GitCli
  reader: RepoReader
  repositories: Repositories
  protection: ProtectedBranches
  transport: Transport
  signature: (userId: string) => Promise<Signature>
  /** Where a failure after a push goes: the push itself has succeeded and cannot be told. */
  onError: (error: unknown) => void
}

/**
 * Builds the merge-request services and joins them to the repository's
 * events: a deleted repository takes its merge requests and reviews along,
 * and every push brings the open merge requests up to date.
 */
export async function mergeRequestFamily (store: Store, deps: MergeRequestFamilyDeps): Promise<MergeRequestFamily> {
  const plumbing = new MergePlumbing({ git: deps.git, reader: deps.reader, clock: deps.clock })
  const reviews = new Reviews(store, deps)
  const mergeRequests = new MergeRequests(store, { ...deps, merges: plumbing, reviews })
  await Promise.all([reviews.init(), mergeRequests.init()])
  const merging = new MergeService({ reader: deps.reader, plumbing, mergeRequests, reviews, protection: deps.protection, signature: deps.signature })
  deps.repositories.onDelete(async (repo) => { await reviews.deleteForMergeRequests(await mergeRequests.deleteForRepo(repo)) })
  deps.transport.onPushed(async (repo) => { await mergeRequests.afterPush(repo).catch(deps.onError) })
  return { mergeRequests, reviews, merging }
}
