import { BoundedMap } from '../cache/bounded-map.js'
import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import { DuplicateKeyError, IndexNotFoundError } from '../store/errors.js'
import type { Filter, IndexKey, SharedReads, Store, StoreCollection } from '../store/types.js'
import { defaultIndexName } from '../store/semantics/indexes.js'
import { trackerErrors } from './errors.js'
import {
  TRACKER_COLLECTIONS, type ActivityEntry, type ActivityRecord, type ItemRecord, type OutboxChange, type SubscriberRecord, type Subscription
} from './records.js'

/**
 * Where work items, their activity and their subscribers are kept, and the
 * one way an item is written. A write is one update, conditional on the
 * version read, that also leaves the write's effects (activity entries,
 * people to subscribe) in the item's `outbox`. The effects are then written
 * out under ids derived from the change, so writing them twice writes them
 * once. If that second step is cut short, the next write of the item (or the
 * next read of its activity) writes them out first, since the next write
 * replaces the outbox.
 */

/** The item fields holding an id or null, null on most items: indexed only where they hold one (ItemStore.init). */
const SPARSE_FIELDS = new Set(['cycleId', 'parentId', 'typeId', 'estimatePointId', 'intake.status'])

/** The item fields holding lists, indexed per element on MongoDB only (ItemStore.init). */
const LIST_FIELDS = ['assignees', 'labelIds', 'moduleIds'] as const

export const activityId = (itemId: string, changeId: string, index: number): string => `${itemId}:${changeId}:${index}`
export const subscriberId = (itemId: string, userId: string): string => `${itemId}:${userId}`

/** Projects whose next item number a process keeps; one forgotten costs one indexed read, never a wrong number. */
const NUMBERED_PROJECTS = 10_000

/** What an insert found: the item inserted, the reserved id already taken by an earlier try, or its number taken. */
export type InsertOutcome = 'inserted' | 'existed' | 'numberTaken'

export interface WriteOptions {
  /** The version the client read (If-Match): another one is 412. */
  ifMatch?: number
  /** What the write may not find (e.g. `archivedAt: null`); a miss is a changed item, retried by the caller. */
  expect?: Filter
}

/** Hands an item's outbox change to the webhook engine (docs/webhooks.md, "The tracker"); idempotent per change. */
export type PublishItemChange = (item: ItemRecord, change: OutboxChange) => Promise<void>

/** Fans an item's outbox change out as notifications (services/tracker/notifications.ts); idempotent per change. */
export type NotifyItemChange = (item: ItemRecord, change: OutboxChange) => Promise<void>

/** An index holding only documents whose `field` is a string; a whole one of the same name from before is replaced. */
async function partialIndex (collection: StoreCollection<any>, key: IndexKey, field: string): Promise<void> {
  const name = defaultIndexName(key)
  const before = (await collection.listIndexes()).find((index) => index.name === name)
  // Processes starting together on one database may both replace it: the one that finds it gone has nothing to drop.
  if (before !== undefined && before.partialFilterExpression === undefined) {
    await collection.dropIndex(name).catch((error: unknown) => { if (!(error instanceof IndexNotFoundError)) throw error })
  }
  await collection.createIndex(key, { partialFilterExpression: { [field]: { $gte: '' } } })
}

export class ItemStore {
  readonly items: StoreCollection<ItemRecord>
  readonly activity: StoreCollection<ActivityRecord>
  readonly subscribers: StoreCollection<SubscriberRecord>
  private readonly numbers = new BoundedMap<string, Promise<{ next: number }>>(NUMBERED_PROJECTS)

  constructor (private readonly store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, publish?: PublishItemChange, notify?: NotifyItemChange }) {
    this.items = store.collection<ItemRecord>(TRACKER_COLLECTIONS.items)
    this.activity = store.collection<ActivityRecord>(TRACKER_COLLECTIONS.activity)
    this.subscribers = store.collection<SubscriberRecord>(TRACKER_COLLECTIONS.subscribers)
  }

  /**
   * The access paths: by key (the number), by each field lists narrow on
   * with the number after it (lists go newest first), the board order, the
   * sync order, and what automations look for. Compound indexes hold at most
   * one list field each (assignees, labels, modules), and only on MongoDB:
   * the embedded engine keys an array by its document, not per element
   * (docs/store.md), so no filter on a list field can use such an index there
   * (equality, `$in`, `$all` and `$size` read the array through `json_each`),
   * and every insert and write would still maintain it. Ones an earlier
   * version made there are dropped.
   *
   * The optional references (cycle, parent, type, estimate point, intake)
   * are null on most items, and only ever looked up by an id: their indexes
   * are partial (SPARSE_FIELDS), so a plain create writes 8 index entries,
   * not 13. A filter on null (`isEmpty`) is answered through `(lpId, seq)`,
   * where most items qualify. Whole ones an earlier version made are made
   * again as partial ones.
   */
  async init (): Promise<void> {
    await this.items.createIndex({ lpId: 1, seq: 1 }, { unique: true })
    for (const field of ['stateId', 'priorityRank', 'cycleId', 'parentId', 'createdBy', 'typeId']) {
      await this.itemIndex({ lpId: 1, [field]: 1, seq: 1 })
    }
    for (const field of LIST_FIELDS) {
      if (this.store.engine !== 'sqlite') await this.items.createIndex({ lpId: 1, [field]: 1, seq: 1 })
      else if ((await this.items.listIndexes()).some((index) => index.name === `lpId_1_${field}_1_seq_1`)) await this.items.dropIndex(`lpId_1_${field}_1_seq_1`)
    }
    await this.items.createIndex({ lpId: 1, sortOrder: 1, _id: 1 })
    await this.items.createIndex({ lpId: 1, updatedAt: 1, _id: 1 })
    // The webhook sweep's order in a platform project with subscriptions (services/webhooks/sources/tracker.ts).
    await this.items.createIndex({ projectId: 1, updatedAt: 1, _id: 1 })
    await this.items.createIndex({ lpId: 1, stateGroup: 1, completedAt: 1 })
    await this.itemIndex({ lpId: 1, 'intake.status': 1, seq: 1 })
    await this.itemIndex({ lpId: 1, estimatePointId: 1 })
    await this.activity.createIndex({ itemId: 1, at: 1, _id: 1 })
    await this.activity.createIndex({ lpId: 1, at: 1, _id: 1 })
    await this.activity.createIndex({ lpId: 1, field: 1, to: 1 })
    // Only the burndown's cycle moves read it, by a cycle's id; a create's entry (`from: null`) then costs it nothing.
    await partialIndex(this.activity, { lpId: 1, field: 1, from: 1 }, 'from')
    await this.subscribers.createIndex({ itemId: 1, _id: 1 })
    await this.subscribers.createIndex({ lpId: 1, userId: 1 })
  }

  /** An item index, partial on the sparse field it holds. */
  private async itemIndex (key: IndexKey): Promise<void> {
    const sparse = Object.keys(key).find((field) => SPARSE_FIELDS.has(field))
    if (sparse === undefined) await this.items.createIndex(key)
    else await partialIndex(this.items, key, sparse)
  }

  /** Reads whose caller never changes what comes back (lists): the embedded engine hands out its cached, frozen documents. */
  shared (): SharedReads<ItemRecord> {
    return this.store.extensions.shared<ItemRecord>(TRACKER_COLLECTIONS.items)
  }

  change (actorId: string, entries: ActivityEntry[], subscribe: Subscription[] = [], automation = false): OutboxChange {
    return { id: this.deps.newId(), at: this.deps.clock.now(), actorId, automation, entries, subscribe }
  }

  /** A live item of the project, read shared (a get by key reads nothing else but the project). */
  async find (lpId: string, itemId: string): Promise<ItemRecord | null> {
    const item = await this.store.extensions.shared<ItemRecord>(TRACKER_COLLECTIONS.items).findOne({ _id: itemId })
    return item === null || item.lpId !== lpId || item.deletedAt !== null ? null : item
  }

  async findBySeq (lpId: string, seq: number): Promise<ItemRecord | null> {
    const item = await this.store.extensions.shared<ItemRecord>(TRACKER_COLLECTIONS.items).findOne({ lpId, seq })
    return item === null || item.deletedAt !== null ? null : item
  }

  /**
   * The project's next item number, without a write of its own: the process
   * counts on from the highest number taken (a deleted item keeps its number
   * as a tombstone, so none is given twice), and the unique index on
   * (lpId, seq) refuses a number another process gave first (`insert`
   * answers `numberTaken` and the count moves past the highest taken, never
   * back below what this process has handed out). A number whose create
   * failed before its insert may be given again after a restart: no item
   * ever had it.
   */
  async nextNumber (lpId: string): Promise<number> {
    let counter = this.numbers.get(lpId)
    if (counter === undefined) {
      counter = this.highest(lpId)
      this.numbers.set(lpId, counter)
      counter.catch(() => this.forget(lpId, counter as Promise<{ next: number }>))
    }
    return (await counter).next++
  }

  private async highest (lpId: string): Promise<{ next: number }> {
    const last = await this.items.findOne({ lpId }, { sort: { seq: -1 }, projection: { seq: 1 } })
    return { next: (last?.seq ?? 0) + 1 }
  }

  private forget (lpId: string, counter: Promise<{ next: number }>): void {
    if (this.numbers.get(lpId) === counter) this.numbers.delete(lpId)
  }

  /**
   * Another process gave `taken`: count on past it and past the highest now
   * stored, but never back, since this process's creates in flight hold the
   * numbers between (forgetting the count would give them again).
   */
  private async passTaken (lpId: string, taken: number): Promise<void> {
    const highest = await this.highest(lpId)
    const counter = this.numbers.get(lpId)
    if (counter === undefined) return
    const count = await counter
    count.next = Math.max(count.next, taken + 1, highest.next)
  }

  /** A new item with its first change in its outbox; `existed` when an earlier try already inserted it (same reserved id). */
  async insert (record: ItemRecord): Promise<InsertOutcome> {
    try {
      await this.items.insertOne(record)
    } catch (error) {
      if (!(error instanceof DuplicateKeyError)) throw error
      if (Object.hasOwn(error.keyValue, '_id')) return 'existed'
      if (!Object.hasOwn(error.keyValue, 'seq')) throw error
      await this.passTaken(record.lpId, record.seq)
      return 'numberTaken'
    }
    await this.flush(record)
    return 'inserted'
  }

  /**
   * One conditional write: `set` and the change's outbox, the version bumped.
   * Null when the item changed since it was read (the caller reads it again
   * and recomputes), 412 when that was the version the client named.
   */
  async write (item: ItemRecord, set: Partial<ItemRecord>, change: OutboxChange, options: WriteOptions = {}): Promise<ItemRecord | null> {
    if (options.ifMatch !== undefined && options.ifMatch !== item.version) throw trackerErrors.versionMismatch({ what: 'work item', expected: options.ifMatch, actual: item.version })
    await this.ensureFlushed(item)
    const updated = await this.items.findOneAndUpdate(
      { _id: item._id, version: item.version, deletedAt: null, ...options.expect },
      { $set: { ...set, outbox: change, version: item.version + 1, updatedAt: change.at, updatedBy: change.actorId } },
      { returnDocument: 'after' }
    )
    if (updated === null) {
      if (options.ifMatch !== undefined) {
        const now = await this.items.findOne({ _id: item._id, deletedAt: null }, { projection: { version: 1 } })
        if (now === null) throw trackerErrors.itemNotFound()
        if (now.version !== options.ifMatch) throw trackerErrors.versionMismatch({ what: 'work item', expected: options.ifMatch, actual: now.version })
      }
      return null
    }
    await this.flush(updated)
    return updated
  }

  /** Writes out the outbox if its first entry is not there yet (a cut-short write). */
  async ensureFlushed (item: ItemRecord): Promise<void> {
    const change = item.outbox
    if (change === null) return
    if (change.entries.length > 0 && await this.activity.findOne({ _id: activityId(item._id, change.id, 0) }, { projection: { _id: 1 } }) !== null) return
    await this.flush(item)
  }

  /**
   * The outbox's webhook event and notifications, then its activity (all or none: one
   * insertMany) and its subscriptions, each idempotent. The event goes
   * first: the activity's first entry is what ensureFlushed takes as written
   * out, so a flush the activity shows as done has published too.
   */
  async flush (item: ItemRecord): Promise<void> {
    const change = item.outbox
    if (change === null) return
    if (this.deps.publish !== undefined) await this.deps.publish(item, change)
    if (this.deps.notify !== undefined) await this.deps.notify(item, change)
    if (change.entries.length > 0) {
      const entries: ActivityRecord[] = change.entries.map((entry, index) => ({
        _id: activityId(item._id, change.id, index),
        projectId: item.projectId,
        lpId: item.lpId,
        itemId: item._id,
        changeId: change.id,
        field: entry.field,
        from: entry.from ?? null,
        to: entry.to ?? null,
        actorId: change.actorId,
        automation: change.automation,
        at: change.at
      }))
      try {
        // One entry (a create, most patches) goes by insertOne, which the embedded engine commits with the other
        // inserts of the event-loop turn (group commit) rather than in a transaction of its own.
        if (entries.length === 1) await this.activity.insertOne(entries[0])
        else await this.activity.insertMany(entries)
      } catch (error) {
        if (!(error instanceof DuplicateKeyError)) throw error
      }
    }
    await this.subscribe(item, change.subscribe, change.at)
  }

  /** Subscriptions by derived id: a person is subscribed once, with the first reason. */
  async subscribe (item: Pick<ItemRecord, '_id' | 'projectId' | 'lpId'>, people: Subscription[], at: Date): Promise<void> {
    const seen = new Set<string>()
    for (const { userId, reason } of people) {
      if (seen.has(userId)) continue
      seen.add(userId)
      try {
        await this.subscribers.insertOne({ _id: subscriberId(item._id, userId), projectId: item.projectId, lpId: item.lpId, itemId: item._id, userId, reason, createdAt: at })
      } catch (error) {
        if (!(error instanceof DuplicateKeyError)) throw error
      }
    }
  }

  /** Activity written beside an item's own writes (comments, links, relations, attachments), by derived id. */
  async record (item: Pick<ItemRecord, '_id' | 'projectId' | 'lpId'>, id: string, actorId: string, entry: ActivityEntry, at: Date): Promise<void> {
    try {
      await this.activity.insertOne({ _id: id, projectId: item.projectId, lpId: item.lpId, itemId: item._id, changeId: id, field: entry.field, from: entry.from ?? null, to: entry.to ?? null, actorId, automation: false, at })
    } catch (error) {
      if (!(error instanceof DuplicateKeyError)) throw error
    }
  }

  async purge (lpId: string): Promise<void> {
    for (const collection of [this.activity, this.subscribers, this.items] as Array<StoreCollection<{ lpId: string }>>) {
      for (;;) {
        const page = await collection.find({ lpId }, { limit: 1000, projection: { _id: 1 } }).toArray()
        if (page.length === 0) break
        await collection.deleteMany({ _id: { $in: page.map((doc) => doc._id) } })
      }
    }
  }
}
