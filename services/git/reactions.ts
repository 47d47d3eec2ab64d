import { DuplicateKeyError } from '../store/errors.js'
import { conflict, notFound } from '../errors.js'
import type { Clock } from '../clock.js'
import type { IdGenerator } from '../ids.js'
import type { Store, StoreCollection } from '../store/types.js'
import { REACTIONS, type ReactionEmojiT, type ReactionT } from '../../schemas/git-merge-requests.js'

type ReactionRecord = {
  /** A merge request's id or a comment's id: reactions on both live here, told apart by `on`. */
  on: 'mr' | 'comment'
  subjectId: string
  mrId: string
  userId: string
  emoji: ReactionEmojiT
  createdAt: Date
}

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

  async list (on: ReactionRecord['on'], subjectId: string): Promise<ReactionT[]> {
    const all = await this.records.find({ on, subjectId }, { sort: { createdAt: 1, _id: 1 } }).toArray()
    return REACTIONS
      .map((emoji) => ({ emoji, userIds: all.filter((reaction) => reaction.emoji === emoji).map((reaction) => reaction.userId) }))
      .filter((reaction) => reaction.userIds.length > 0)
      .map((reaction) => ({ ...reaction, count: reaction.userIds.length }))
  }

  async add (on: ReactionRecord['on'], subjectId: string, mrId: string, userId: string, emoji: ReactionEmojiT): Promise<ReactionT[]> {
    try {
      await this.records.insertOne({ _id: this.deps.newId(), on, subjectId, mrId, userId, emoji, createdAt: this.deps.clock.now() })
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw conflict('APP_GIT_REACTION_EXISTS', `You reacted with "${emoji}" already`)
      throw error
    }
    return await this.list(on, subjectId)
  }

  async remove (on: ReactionRecord['on'], subjectId: string, userId: string, emoji: ReactionEmojiT): Promise<ReactionT[]> {
    const { deletedCount } = await this.records.deleteOne({ on, subjectId, userId, emoji })
    if (deletedCount === 0) throw notFound('APP_GIT_REACTION_NOT_FOUND', `You have not reacted with "${emoji}"`)
    return await this.list(on, subjectId)
  }

  async deleteForMergeRequests (mrIds: string[]): Promise<void> {
    await this.records.deleteMany({ mrId: { $in: mrIds } })
  }
}
