import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Store, StoreCollection } from '../store/types.js'
import type { ListQueryT, PageOf } from '../../schemas/tracker.js'
import type { CommentBodyT, CommentT, ReactionSummaryT } from '../../schemas/tracker-work-items.js'
import { ownsOrAdmin, requireWritable, type TrackerScope } from './access.js'
import { trackerErrors } from './errors.js'
import type { FollowUps } from './follow-ups.js'
import type { ItemStore } from './item-store.js'
import type { TrackerMembers } from './members.js'
import { keysetPage, listScope, sortPlan } from './paging.js'
import { TRACKER_COLLECTIONS, type CommentRecord, type ItemRecord, type ReactionRecord, type Subscription } from './records.js'
import { richText } from './text.js'
import type { NotifiedChange } from './notifications.js'
import type { WorkItems } from './work-items.js'

export const COMMENT_EFFECTS = 'commentEffects'
const ORDER = sortPlan([['createdAt', 1], ['_id', 1]])
const EMOJI = /^(?:\p{Extended_Pictographic}|\p{Emoji_Component}|\u200d|\ufe0f){1,16}$/u

export const commentActivityId = (itemId: string, commentId: string): string => `${itemId}:comment:${commentId}`

function summarize (reactions: ReactionRecord[]): ReactionSummaryT[] {
  const byEmoji = new Map<string, string[]>()
  for (const reaction of reactions) byEmoji.set(reaction.emoji, [...(byEmoji.get(reaction.emoji) ?? []), reaction.userId])
  return [...byEmoji].map(([emoji, userIds]) => ({ emoji, count: userIds.length, userIds }))
}

function toView (record: CommentRecord, reactions: ReactionRecord[]): CommentT {
  return {
    id: record._id,
    itemId: record.itemId,
    authorId: record.authorId,
    format: record.format,
    body: record.body,
    bodyJson: record.bodyJson,
    text: record.text,
    reactions: summarize(reactions),
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt),
    editedAt: record.editedAt === null ? null : isoString(record.editedAt)
  }
}

/**
 * Comments on work items, and reactions on items and comments. A comment's
 * effects (its activity entry, its author and the members it mentions
 * subscribed) follow it under derived ids, guarded by a follow-up so a
 * crash between the comment and its effects is finished later.
 */
export class TrackerComments {
  readonly records: StoreCollection<CommentRecord>
  readonly reactions: StoreCollection<ReactionRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, cursors: Cursors, items: ItemStore, workItems: WorkItems, members: TrackerMembers, followUps: FollowUps, guestsSeeAll: (lpId: string) => Promise<boolean>, notify?: (change: NotifiedChange) => Promise<void> }) {
    this.records = store.collection<CommentRecord>(TRACKER_COLLECTIONS.comments)
    this.reactions = store.collection<ReactionRecord>(TRACKER_COLLECTIONS.reactions)
    deps.followUps.on(COMMENT_EFFECTS, async (task) => { await this.applyEffects(String(task.commentId)) })
  }

  async init (): Promise<void> {
    await this.records.createIndex({ itemId: 1, createdAt: 1, _id: 1 })
    await this.records.createIndex({ lpId: 1 })
    await this.reactions.createIndex({ on: 1, subjectId: 1, userId: 1, emoji: 1 }, { unique: true })
    await this.reactions.createIndex({ itemId: 1 })
    await this.reactions.createIndex({ lpId: 1 })
  }

  async list (scope: TrackerScope, itemId: string, page: ListQueryT): Promise<PageOf<CommentT>> {
    await this.deps.workItems.visible(scope, itemId)
    const { docs, nextCursor } = await keysetPage(this.records, { itemId }, ORDER, page, this.deps.cursors, listScope(scope.projectId, `comments:${itemId}`, null, ORDER))
    const reactions = docs.length === 0 ? [] : await this.reactions.find({ on: 'comment', subjectId: { $in: docs.map((doc) => doc._id) } }, { sort: { createdAt: 1, _id: 1 } }).toArray()
    return { items: docs.map((doc) => toView(doc, reactions.filter((reaction) => reaction.subjectId === doc._id))), nextCursor }
  }

  async create (scope: TrackerScope, itemId: string, input: CommentBodyT): Promise<CommentT> {
    requireWritable(scope)
    const item = await this.deps.workItems.visible(scope, itemId)
    const text = this.text(input)
    const now = this.deps.clock.now()
    const record: CommentRecord = {
      _id: this.deps.newId(), projectId: item.projectId, lpId: item.lpId, itemId, authorId: scope.actor.userId, format: text.format, body: text.markdown, bodyJson: text.json, text: text.text, mentions: text.mentions, createdAt: now, updatedAt: now, editedAt: null
    }
    await this.deps.followUps.guard({ kind: COMMENT_EFFECTS, commentId: record._id }, async () => { await this.records.insertOne(record) })
    return toView(record, [])
  }

  async update (scope: TrackerScope, itemId: string, commentId: string, input: CommentBodyT): Promise<CommentT> {
    requireWritable(scope)
    await this.deps.workItems.visible(scope, itemId)
    const comment = await this.record(itemId, commentId)
    if (comment.authorId !== scope.actor.userId) throw trackerErrors.notYours({ owner: 'author', action: 'edit this comment' })
    const text = this.text(input)
    const now = this.deps.clock.now()
    let updated: CommentRecord | null = null
    await this.deps.followUps.guard({ kind: COMMENT_EFFECTS, commentId }, async () => {
      updated = await this.records.findOneAndUpdate({ _id: commentId, itemId }, { $set: { format: text.format, body: text.markdown, bodyJson: text.json, text: text.text, mentions: text.mentions, newMentions: text.mentions.filter((userId) => !comment.mentions.includes(userId)), updatedAt: now, editedAt: now } }, { returnDocument: 'after' })
    })
    if (updated === null) throw trackerErrors.commentNotFound()
    return toView(updated, await this.reactions.find({ on: 'comment', subjectId: commentId }).toArray())
  }

  /** The comment goes, then its reactions (left-overs of a cut-short delete are never shown and go with the item). */
  async delete (scope: TrackerScope, itemId: string, commentId: string): Promise<void> {
    requireWritable(scope)
    await this.deps.workItems.visible(scope, itemId)
    const comment = await this.record(itemId, commentId)
    if (!ownsOrAdmin(scope, comment.authorId)) throw trackerErrors.notYours({ owner: 'author', action: 'delete this comment' })
    await this.records.deleteOne({ _id: commentId })
    await this.reactions.deleteMany({ on: 'comment', subjectId: commentId })
  }

  /** Idempotent: the activity entry and subscriptions of a comment that exists. */
  private async applyEffects (commentId: string): Promise<void> {
    const comment = await this.records.findOne({ _id: commentId })
    if (comment === null) return
    const item = { _id: comment.itemId, projectId: comment.projectId, lpId: comment.lpId }
    await this.deps.items.record(item, commentActivityId(comment.itemId, comment._id), comment.authorId, { field: 'comment', from: null, to: comment._id }, comment.createdAt)
    const people: Subscription[] = [{ userId: comment.authorId, reason: 'commenter' }]
    const target = await this.deps.items.items.findOne({ _id: comment.itemId }, { projection: { createdBy: 1, assignees: 1 } })
    const project = await this.deps.guestsSeeAll(comment.lpId)
    const guestSees = (userId: string): boolean => project || target?.createdBy === userId || target?.assignees.includes(userId) === true
    for (const userId of await this.deps.members.mentionable(comment.lpId, comment.mentions, guestSees)) people.push({ userId, reason: 'mentioned' })
    if (target !== null && this.deps.notify !== undefined) {
      // A new comment tells the subscribers; an edit only whom it newly mentions. One change per version of the comment.
      await this.deps.notify({
        item: { ...item, createdBy: target.createdBy },
        changeId: `comment-${comment._id}-${comment.updatedAt.getTime()}`,
        commentId: comment._id,
        actorId: comment.authorId,
        at: comment.updatedAt,
        fields: ['comment'],
        named: comment.editedAt === null ? people : people.filter((person) => comment.newMentions?.includes(person.userId) === true),
        toSubscribers: comment.editedAt === null
      })
    }
    await this.deps.items.subscribe(item, people, comment.updatedAt)
  }

  // ------------------------------------------------------------ reactions

  async reactionsOf (scope: TrackerScope, itemId: string, commentId?: string): Promise<ReactionSummaryT[]> {
    const subject = await this.subject(scope, itemId, commentId)
    return summarize(await this.reactions.find({ on: subject.on, subjectId: subject.id }, { sort: { createdAt: 1, _id: 1 } }).toArray())
  }

  async react (scope: TrackerScope, itemId: string, emoji: string, commentId?: string): Promise<ReactionSummaryT[]> {
    requireWritable(scope)
    if (!EMOJI.test(emoji)) throw trackerErrors.invalidValue({ path: 'body.emoji', problem: 'must be one emoji' })
    const subject = await this.subject(scope, itemId, commentId)
    try {
      await this.reactions.insertOne({ _id: this.deps.newId(), projectId: scope.projectId, lpId: scope.project._id, itemId, on: subject.on, subjectId: subject.id, userId: scope.actor.userId, emoji, createdAt: this.deps.clock.now() })
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw trackerErrors.reactionExists({ emoji })
      throw error
    }
    return await this.reactionsOf(scope, itemId, commentId)
  }

  async unreact (scope: TrackerScope, itemId: string, emoji: string, commentId?: string): Promise<ReactionSummaryT[]> {
    requireWritable(scope)
    const subject = await this.subject(scope, itemId, commentId)
    const { deletedCount } = await this.reactions.deleteOne({ on: subject.on, subjectId: subject.id, userId: scope.actor.userId, emoji })
    if (deletedCount === 0) throw trackerErrors.reactionNotFound({ emoji })
    return await this.reactionsOf(scope, itemId, commentId)
  }

  /** Everything hanging off a deleted item. */
  async purgeItem (itemId: string): Promise<void> {
    await this.records.deleteMany({ itemId })
    await this.reactions.deleteMany({ itemId })
  }

  async purge (lpId: string): Promise<void> {
    await this.records.deleteMany({ lpId })
    await this.reactions.deleteMany({ lpId })
  }

  private text (input: CommentBodyT): ReturnType<typeof richText> {
    const text = richText(input.body, input.bodyJson, 'body.body')
    if (text.text === '' && text.mentions.length === 0) throw trackerErrors.invalidValue({ path: input.bodyJson === undefined ? 'body.body' : 'body.bodyJson', problem: 'is empty' })
    return text
  }

  private async subject (scope: TrackerScope, itemId: string, commentId: string | undefined): Promise<{ on: 'item' | 'comment', id: string, item: ItemRecord }> {
    const item = await this.deps.workItems.visible(scope, itemId)
    if (commentId === undefined) return { on: 'item', id: itemId, item }
    await this.record(itemId, commentId)
    return { on: 'comment', id: commentId, item }
  }

  private async record (itemId: string, commentId: string): Promise<CommentRecord> {
    const comment = await this.records.findOne({ _id: commentId, itemId })
    if (comment === null) throw trackerErrors.commentNotFound()
    return comment
  }
}
