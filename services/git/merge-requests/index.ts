import type { Clock } from '../../platform/clock.js'
import type { IdGenerator } from '../../platform/ids.js'
import type { Store } from '../../store/types.js'
import type { GitCli } from '../git-cli.js'
import type { RepoLabels } from '../labels.js'
import type { ProtectedBranches } from '../protection.js'
import type { RepoReader } from '../reader.js'
import type { Repo, Repositories } from '../repositories.js'
import type { Transport } from '../transport.js'
import type { Signature } from '../writer.js'
import { Comments } from './comments.js'
import { MergePlumbing } from './merge-tree.js'
import { MergeRequests } from './merge-requests.js'
import { MergeService } from './merges.js'
import { Reactions } from './reactions.js'
import { Reviews } from './reviews.js'
import { Suggestions } from './suggestions.js'

/** Merge requests, their reviews, comments and reactions, and merging. */
export interface MergeRequestServices {
  mergeRequests: MergeRequests
  reviews: Reviews
  merging: MergeService
  comments: Comments
  reactions: Reactions
  suggestions: Suggestions
}

/** What merge requests are built from: their ports, and the git family's services they follow. */
export interface MergeRequestPorts {
  store: Store
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
 * Builds the merge-request services, their indexes made, and joins them to
 * the repository's events: a deleted repository takes its merge requests and
 * reviews along, every push brings the open merge requests up to date, a
 * moved branch outdates the inline comments on files it changed, and a
 * deleted label leaves the merge requests that carried it.
 */
export async function buildMergeRequestServices (ports: MergeRequestPorts): Promise<MergeRequestServices> {
  const { store, clock, newId } = ports
  const plumbing = new MergePlumbing({ git: ports.git, reader: ports.reader, clock })
  const reviews = new Reviews(store, { clock, newId })
  const mergeRequests = new MergeRequests(store, { ...ports, merges: plumbing, reviews })
  const comments = new Comments(store, { clock, newId, git: ports.git, reader: ports.reader, plumbing })
  const reactions = new Reactions(store, { clock, newId })
  await Promise.all([reviews.init(), mergeRequests.init(), comments.init(), reactions.init()])
  mergeRequests.onMoved(async (repo, mr) => { await comments.markOutdated(repo, mr) })
  ports.labels.onDelete(async (repo, labelId) => { await mergeRequests.dropLabel(repo, labelId) })
  ports.repositories.onDelete(async (repo) => {
    const ids = await mergeRequests.deleteForRepo(repo)
    await Promise.all([reviews.deleteForMergeRequests(ids), comments.deleteForMergeRequests(ids), reactions.deleteForMergeRequests(ids)])
  })
  ports.transport.onPushed(async (repo) => { await mergeRequests.afterPush(repo).catch(ports.onError) })
  const merging = new MergeService({ reader: ports.reader, plumbing, mergeRequests, reviews, protection: ports.protection, signature: ports.signature })
  const suggestions = new Suggestions({ git: ports.git, clock, comments, mergeRequests, protection: ports.protection, signature: ports.signature })
  return { mergeRequests, reviews, merging, comments, reactions, suggestions }
}
