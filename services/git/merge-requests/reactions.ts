import { DuplicateKeyError } from '../../store/errors.js'
import type { Clock } from '../../platform/clock.js'
import type { IdGenerator } from '../../platform/ids.js'
import type { Store, StoreCollection } from '../../store/types.js'
import { REACTIONS, type ReactionEmojiT, type ReactionT } from '../../../schemas/git-merge-requests.js'
import { gitErrors } from '../errors.js'
import type { Comment } from './comments.js'
import type { Mr } from './records.js'

type ReactionRecord = {
  /** A merge request's id or a comment's id: reactions on both live here, told apart by `on`. */
  on: 'mr' | 'comment'
  subjectId: string
  mrId: string
  userId: string
  emoji: ReactionEmojiT
  createdAt: Date
}

/** What a reaction is on: a merge request, or one of its comments. */
export interface ReactionSubject { on: 'mr' | 'comment', id: string, mrId: string }

export const onMergeRequest = (mr: Mr): ReactionSubject => ({ on: 'mr', id: mr._id, mrId: mr._id })
export const onComment = (comment: Comment): ReactionSubject => ({ on: 'comment', id: comment._id, mrId: comment.mrId })

/** Reactions (a fixed set of emoji) on merge requests and comments: one of each emoji per user and subject. */
export class Reactions {
  private readonly records: StoreCollection<ReactionRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator }) {
    this.records = store.collection<ReactionRecord>('git_mr_reactions')
  }

  async init (): Promise<void> {
    await this.records.createIndex({ on: 1, subjectId: 1, userId: 1, emoji: 1 }, { unique: true })
    await this.records.createIndex({ mrId: 1 })
  }

  async list ({ on, id }: ReactionSubject): Promise<ReactionT[]> {
    const all = await this.records.find({ on, subjectId: id }, { sort: { createdAt: 1, _id: 1 } }).toArray()
    return REACTIONS
      .map((emoji) => ({ emoji, userIds: all.filter((reaction) => reaction.emoji === emoji).map((reaction) => reaction.userId) }))
      .filter((reaction) => reaction.userIds.length > 0)
      .map((reaction) => ({ ...reaction, count: reaction.userIds.length }))
  }

  async add (subject: ReactionSubject, userId: string, emoji: ReactionEmojiT): Promise<ReactionT[]> {
    const { on, id, mrId } = subject
    try {
      await this.records.insertOne({ _id: this.deps.newId(), on, subjectId: id, mrId, userId, emoji, createdAt: this.deps.clock.now() })
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw gitErrors.reactionExists({ emoji })
      throw error
    }
    return await this.list(subject)
  }

  async remove (subject: ReactionSubject, userId: string, emoji: ReactionEmojiT): Promise<ReactionT[]> {
    const { deletedCount } = await this.records.deleteOne({ on: subject.on, subjectId: subject.id, userId, emoji })
    if (deletedCount === 0) throw gitErrors.reactionNotFound({ emoji })
    return await this.list(subject)
  }

  async deleteForMergeRequests (mrIds: string[]): Promise<void> {
    await this.records.deleteMany({ mrId: { $in: mrIds } })
  }
}
