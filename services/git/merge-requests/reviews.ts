import { isoString } from '../../platform/iso-dates.js'
import type { Clock } from '../../platform/clock.js'
import type { IdGenerator } from '../../platform/ids.js'
import type { Store, StoreCollection, WithId } from '../../store/types.js'
import type { ReviewStateT, ReviewT } from '../../../schemas/git-merge-requests.js'
import { gitErrors } from '../errors.js'
import type { Mr } from './records.js'

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

  async list (mr: Mr): Promise<ReviewT[]> {
    return (await this.all(mr._id)).map(toView)
  }

  /** A review on the source head of the moment by `authorId`; an author may comment on their own merge request but not judge it. */
  async create (mr: Mr, authorId: string, input: { state: ReviewStateT, body?: string }): Promise<ReviewT> {
    if (mr.state !== 'open') throw gitErrors.mrNotOpen()
    if (input.state !== 'commented' && authorId === mr.authorId) throw gitErrors.mrSelfReview()
    const body = (input.body ?? '').trim()
    if (input.state !== 'approved' && body === '') throw gitErrors.reviewBodyRequired()
    const record = { _id: this.deps.newId(), mrId: mr._id, authorId, state: input.state, body, commitSha: mr.headSha, stale: false, dismissed: false, dismissedBy: null, createdAt: this.deps.clock.now() }
    await this.records.insertOne(record)
    return toView(record)
  }

  async dismiss (mr: Mr, reviewId: string, by: string): Promise<ReviewT> {
    const review = await this.records.findOneAndUpdate({ _id: reviewId, mrId: mr._id, state: { $ne: 'commented' } }, { $set: { dismissed: true, dismissedBy: by } }, { returnDocument: 'after' })
    if (review === null) throw gitErrors.reviewNotFound()
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
