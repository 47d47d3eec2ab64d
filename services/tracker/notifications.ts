import { createHash } from 'node:crypto'
import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import { isoString } from '../platform/iso-dates.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Filter, Store, StoreCollection, WithId } from '../store/types.js'
import type { PageOf } from '../../schemas/tracker.js'
import {
  NOTIFICATION_KINDS, type NotificationKindT, type NotificationListQueryT, type NotificationPatchT, type NotificationPreferencesPatchT,
  type NotificationPreferencesT, type NotificationT
} from '../../schemas/tracker-notifications.js'
import { trackerErrors } from './errors.js'
import { keysetPage, listScope, sortPlan } from './paging.js'
import { TRACKER_COLLECTIONS, type ItemRecord, type OutboxChange, type SubscriberRecord, type Subscription } from './records.js'

/**
 * Each person's notifications, per platform project. They are fanned out
 * by the write's own effects: an item write's from its outbox (before its
 * activity, which is what marks the outbox written out, so a crash in
 * between writes them on the next flush), a comment's by its follow-up.
 * Ids are derived from the item, the change and the person, so a change
 * written out twice notifies once, and one person gets one notification per
 * change, of the strongest kind they have enabled, never for their own.
 */

export type NotificationRecord = WithId<{
  projectId: string
  lpId: string
  itemId: string
  userId: string
  kind: NotificationKindT
  changeId: string
  commentId: string | null
  fields: string[]
  actorId: string
  at: Date
  readAt: Date | null
  snoozedUntil: Date | null
  archivedAt: Date | null
}>

export type PreferencesRecord = WithId<{ projectId: string, userId: string } & NotificationPreferencesT>

/** What the fan-out needs of a change: the item, who made it, what it touched and the people it names. */
export interface NotifiedChange {
  item: Pick<ItemRecord, '_id' | 'projectId' | 'lpId' | 'createdBy'>
  changeId: string
  commentId: string | null
  actorId: string
  at: Date
  fields: string[]
  /** People the change itself names: assigned or mentioned by it. */
  named: Subscription[]
  /** Whether the item's subscribers hear of it (a comment's edit tells only whom it newly mentions). */
  toSubscribers: boolean
}

export const NOTIFICATION_COLLECTIONS = { notifications: 'tracker_notifications', preferences: 'tracker_notification_preferences' } as const
const ORDER = sortPlan([['at', -1], ['_id', -1]])
const ALL_ON: NotificationPreferencesT = { assigned: true, mentioned: true, created: true, subscribed: true }

export const notificationId = (itemId: string, changeId: string, userId: string): string =>
  createHash('sha256').update(`${itemId}\n${changeId}\n${userId}`).digest('base64url').slice(0, 32)
const preferencesId = (projectId: string, userId: string): string => `${projectId}:${userId}`

function toView (record: NotificationRecord): NotificationT {
  const at = (value: Date | null): string | null => value === null ? null : isoString(value)
  return {
    id: record._id,
    kind: record.kind,
    lpId: record.lpId,
    itemId: record.itemId,
    commentId: record.commentId,
    changeId: record.changeId,
    fields: record.fields,
    actorId: record.actorId,
    createdAt: isoString(record.at),
    readAt: at(record.readAt),
    snoozedUntil: at(record.snoozedUntil),
    archivedAt: at(record.archivedAt)
  }
}

export class TrackerNotifications {
  readonly records: StoreCollection<NotificationRecord>
  readonly preferences: StoreCollection<PreferencesRecord>
  private readonly subscribers: StoreCollection<SubscriberRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, cursors: Cursors }) {
    this.records = store.collection<NotificationRecord>(NOTIFICATION_COLLECTIONS.notifications)
    this.preferences = store.collection<PreferencesRecord>(NOTIFICATION_COLLECTIONS.preferences)
    this.subscribers = store.collection<SubscriberRecord>(TRACKER_COLLECTIONS.subscribers)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ userId: 1, projectId: 1, at: -1, _id: -1 })
    await this.records.createIndex({ userId: 1, projectId: 1, readAt: 1 })
    await this.records.createIndex({ lpId: 1 })
  }

  /** An item write's notifications, from its outbox (ItemStore.flush calls this before the activity). */
  async itemChanged (item: ItemRecord, change: OutboxChange): Promise<void> {
    if (item.draft) return
    await this.fanOut({
      item,
      changeId: change.id,
      commentId: null,
      actorId: change.actorId,
      at: change.at,
      fields: [...new Set(change.entries.map((entry) => entry.field))],
      named: change.subscribe,
      // A new item's only subscribers are the ones its create names (and its creator, the actor): no read finds more.
      toSubscribers: change.entries.length > 0 && change.entries[0].field !== 'created'
    })
  }

  /** One notification per person the change concerns, but its actor; by derived id, so twice is once. */
  async fanOut (change: NotifiedChange): Promise<void> {
    const reasons = new Map<string, Set<NotificationKindT>>()
    const add = (userId: string, kind: NotificationKindT): void => {
      if (userId === change.actorId) return
      const kinds = reasons.get(userId) ?? new Set()
      kinds.add(kind)
      reasons.set(userId, kinds)
    }
    for (const { userId, reason } of change.named) {
      if (reason === 'assignee') add(userId, 'assigned')
      if (reason === 'mentioned') add(userId, 'mentioned')
    }
    if (change.toSubscribers) {
      const subscribers = await this.subscribers.find({ itemId: change.item._id }, { projection: { userId: 1 } }).toArray()
      for (const { userId } of subscribers) add(userId, userId === change.item.createdBy ? 'created' : 'subscribed')
    }
    if (reasons.size === 0) return
    const userIds = [...reasons.keys()]
    const saved = await this.preferences.find({ _id: { $in: userIds.map((userId) => preferencesId(change.item.projectId, userId)) } }).toArray()
    const preferenceOf = new Map(saved.map((record) => [record.userId, record]))
    const records: NotificationRecord[] = []
    for (const [userId, kinds] of reasons) {
      const enabled = preferenceOf.get(userId) ?? ALL_ON
      // The strongest reason the person has enabled; an assignee or the creator is a subscriber too.
      const kind = NOTIFICATION_KINDS.find((candidate) => kinds.has(candidate) && enabled[candidate]) ??
        (enabled.subscribed && (kinds.has('assigned') || kinds.has('created')) ? 'subscribed' : undefined)
      if (kind === undefined) continue
      records.push({
        _id: notificationId(change.item._id, change.changeId, userId),
        projectId: change.item.projectId,
        lpId: change.item.lpId,
        itemId: change.item._id,
        userId,
        kind,
        changeId: change.changeId,
        commentId: change.commentId,
        fields: change.fields,
        actorId: change.actorId,
        at: change.at,
        readAt: null,
        snoozedUntil: null,
        archivedAt: null
      })
    }
    if (records.length === 0) return
    try {
      await this.records.insertMany(records)
    } catch (error) {
      if (!(error instanceof DuplicateKeyError)) throw error
      // Written out before (a flush again): insert one by one what is missing.
      for (const record of records) {
        try {
          await this.records.insertOne(record)
        } catch (again) {
          if (!(again instanceof DuplicateKeyError)) throw again
        }
      }
    }
  }

  async list (projectId: string, userId: string, query: NotificationListQueryT): Promise<PageOf<NotificationT>> {
    const view = query.view ?? 'inbox'
    const filter = this.viewFilter(projectId, userId, view)
    const { docs, nextCursor } = await keysetPage(this.records, filter, ORDER, query, this.deps.cursors, listScope(projectId, `notifications:${userId}`, { view }, ORDER))
    return { items: docs.map(toView), nextCursor }
  }

  async unreadCount (projectId: string, userId: string): Promise<number> {
    return await this.records.countDocuments(this.viewFilter(projectId, userId, 'unread'))
  }

  /** Read or unread, snoozed until a future instant or woken, archived or back in the inbox. */
  async update (projectId: string, userId: string, notificationId: string, patch: NotificationPatchT): Promise<NotificationT> {
    const now = this.deps.clock.now()
    const set: Partial<NotificationRecord> = {}
    if (patch.read !== undefined) set.readAt = patch.read ? now : null
    if (patch.archived !== undefined) set.archivedAt = patch.archived ? now : null
    if (patch.snoozedUntil !== undefined) {
      const until = patch.snoozedUntil === null ? null : new Date(patch.snoozedUntil)
      if (until !== null && until.getTime() <= now.getTime()) throw trackerErrors.invalidValue({ path: 'body.snoozedUntil', problem: 'must be in the future' })
      set.snoozedUntil = until
    }
    const updated = await this.records.findOneAndUpdate({ _id: notificationId, projectId, userId }, { $set: set }, { returnDocument: 'after' })
    if (updated === null) throw trackerErrors.notificationNotFound()
    return toView(updated)
  }

  /** Every unread notification of the inbox (snoozed and archived ones aside) becomes read. */
  async markAllRead (projectId: string, userId: string): Promise<number> {
    const { modifiedCount } = await this.records.updateMany(this.viewFilter(projectId, userId, 'unread'), { $set: { readAt: this.deps.clock.now() } })
    return modifiedCount
  }

  async preferencesOf (projectId: string, userId: string): Promise<NotificationPreferencesT> {
    const record = await this.preferences.findOne({ _id: preferencesId(projectId, userId) })
    return record === null ? { ...ALL_ON } : { assigned: record.assigned, mentioned: record.mentioned, created: record.created, subscribed: record.subscribed }
  }

  async setPreferences (projectId: string, userId: string, patch: NotificationPreferencesPatchT): Promise<NotificationPreferencesT> {
    const next = { ...await this.preferencesOf(projectId, userId), ...patch }
    await this.preferences.updateOne({ _id: preferencesId(projectId, userId) }, { $set: { projectId, userId, ...next } }, { upsert: true })
    return next
  }

  /** A purged tracker project's notifications go with it. */
  async purge (lpId: string): Promise<void> {
    await this.records.deleteMany({ lpId })
  }

  private viewFilter (projectId: string, userId: string, view: NonNullable<NotificationListQueryT['view']>): Filter {
    const now = this.deps.clock.now()
    const mine = { projectId, userId }
    if (view === 'archived') return { ...mine, archivedAt: { $ne: null } }
    if (view === 'snoozed') return { ...mine, archivedAt: null, snoozedUntil: { $gt: now } }
    const awake = { $or: [{ snoozedUntil: null }, { snoozedUntil: { $lte: now } }] }
    return view === 'unread' ? { ...mine, archivedAt: null, readAt: null, ...awake } : { ...mine, archivedAt: null, ...awake }
  }
}
