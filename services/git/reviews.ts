import { badRequest, conflict, forbidden, notFound } from '../errors.js'
import { isoString } from '../iso-dates.js'
import type { Clock } from '../clock.js'
import type { IdGenerator } from '../ids.js'
import type { Store, StoreCollection, WithId } from '../store/types.js'
import type { ReviewStateT, ReviewT } from '../../schemas/git-merge-requests.js'

type ReviewRecord = {
  mrId: string
  authorId: string
  state: ReviewStateT
  body: string
  commitSha: string
  stale: boolean
  dismissed: boolean
  dismissedBy: string | null
  createdAt: Date
}

/** What the merge check needs of a merge request's reviews: approvals that count, and who still asks for changes. */
export interface ReviewTally { approvedBy: string[], changesRequestedBy: string[] }

function toView (record: WithId<ReviewRecord>): ReviewT {
  const { _id, mrId: _mr, createdAt, ...rest } = record
  return { id: _id, ...rest, createdAt: isoString(createdAt) }
}

/**
 * Reviews of merge requests: approve, request changes or comment, on the
 * source head of the moment. A push to the source makes earlier reviews
 * stale, and only each reviewer's latest review that is neither stale nor
 * dismissed counts, so an approval always speaks for the code being merged.
 */
export class Reviews {
  private readonly records: StoreCollection<ReviewRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator }) {
    this.records = store.collection<ReviewRecord>('git_mr_reviews')
  }

  async init (): Promise<void> {
    await this.records.createIndex({ mrId: 1, createdAt: 1 })
  }

  async list (mrId: string): Promise<ReviewT[]> {
    return (await this.all(mrId)).map(toView)
  }

  /** A review on `headSha` by `authorId`; an author may comment on their own merge request but not judge it. */
  async create (mr: { id: string, authorId: string, headSha: string, open: boolean }, authorId: string, input: { state: ReviewStateT, body?: string }): Promise<ReviewT> {
    if (!mr.open) throw conflict('APP_GIT_MR_NOT_OPEN', 'The merge request is closed or merged')
    if (input.state !== 'commented' && authorId === mr.authorId) throw forbidden('APP_GIT_MR_SELF_REVIEW', 'The author of a merge request cannot approve it or request changes on it')
    const body = (input.body ?? '').trim()
    if (input.state !== 'approved' && body === '') throw badRequest('APP_GIT_REVIEW_BODY_REQUIRED', 'Say what to change, or what the comment is')
    const record = { _id: this.deps.newId(), mrId: mr.id, authorId, state: input.state, body, commitSha: mr.headSha, stale: false, dismissed: false, dismissedBy: null, createdAt: this.deps.clock.now() }
    await this.records.insertOne(record)
    return toView(record)
  }

  async dismiss (mrId: string, reviewId: string, by: string): Promise<ReviewT> {
    const review = await this.records.findOneAndUpdate({ _id: reviewId, mrId, state: { $ne: 'commented' } }, { $set: { dismissed: true, dismissedBy: by } }, { returnDocument: 'after' })
    if (review === null) throw notFound('APP_GIT_REVIEW_NOT_FOUND', 'No approval or change request with this id on this merge request')
    return toView(review)
  }

  /** After the source moved: what was reviewed is no longer what would be merged. */
  async markStale (mrId: string, headSha: string): Promise<void> {
    await this.records.updateMany({ mrId, stale: false, commitSha: { $ne: headSha } }, { $set: { stale: true } })
  }

  async tally (mrId: string): Promise<ReviewTally> {
    const latest = new Map<string, WithId<ReviewRecord>>()
    for (const review of await this.all(mrId)) {
      if (review.state !== 'commented') latest.set(review.authorId, review)
    }
    const counted = [...latest.values()].filter((review) => !review.stale && !review.dismissed)
    return {
      approvedBy: counted.filter((review) => review.state === 'approved').map((review) => review.authorId),
      changesRequestedBy: counted.filter((review) => review.state === 'changes_requested').map((review) => review.authorId)
    }
  }

  async deleteForMergeRequests (mrIds: string[]): Promise<void> {
    await this.records.deleteMany({ mrId: { $in: mrIds } })
  }

  private async all (mrId: string): Promise<Array<WithId<ReviewRecord>>> {
    return await this.records.find({ mrId }, { sort: { createdAt: 1, _id: 1 } }).toArray()
  }
}
