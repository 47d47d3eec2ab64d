import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import type { RecordChange, RecordChangeBatch, RecordChangeFeed } from '../collections/record-changes.js'
import { projectCollectionName } from '../projects/naming.js'
import type { Document, Store, StoreCollection, WithId } from '../store/types.js'
import { retryUpsertRace } from '../platform/upsert-race.js'
import { recordEvent } from '../webhooks/sources/records.js'
import type { WebhookEventInput } from '../webhooks/source.js'

/**
 * The change feed of record writes (docs/auxiliary.md, "Record webhooks").
 *
 * The Store has no transaction across collections, so an entry cannot be
 * committed with its record. It is written BEFORE the record write instead
 * and settled after it: published to the webhook engine and removed when the
 * write was made, removed when it was not. By the time a write is
 * acknowledged its entry exists; a process killed between the two leaves it
 * pending, and the sweep publishes it if its write is visible in the
 * collection and drops it otherwise. Event keys come from the record and the
 * version the write made, so the write's own publish and the sweep's are one
 * event.
 *
 * Entries are written only for projects that are **armed**: one document
 * per project in `record_feeds`, set before the project's first record
 * webhook is saved. Every write reads it by primary key at the start (no
 * cache, so no staleness): a write that begins after a webhook's creation
 * was acknowledged reads the flag after it was set and logs its change.
 *
 * Settling is off the request path and batched: the entry already makes the
 * event durable, so a write's `done` only queues its entries, and one drain
 * publishes everything queued meanwhile, one engine call per project, and
 * removes it with one `deleteMany` (docs/auxiliary.md, "What it costs").
 */

export const RECORD_CHANGES = 'record_changes'
export const RECORD_FEEDS = 'record_feeds'
/** A pending entry younger than this may still be settled by its own write; the sweep leaves it alone. */
export const RECORD_CHANGE_SETTLE_MS = 10_000
const SWEEP_PAGE = 500
/** A one-off job each start enqueues, so a killed process's pending entries go out soon after the restart. */
export const RECORD_FEED_SETTLE_JOB = 'auxiliary.records.settle'

interface ChangeEntry extends Document {
  projectId: string
  collection: string
  recordId: string
  type: RecordChange['type']
  /** The version the write made; null for a delete. */
  version: number | null
  record: Document
  before: Document | null
  actor: RecordChange['actor']
  at: Date
  createdAt: Date
}

interface FeedFlag extends Document {
  armedAt: Date
  /** Set by the project's first realtime stream: from then on its changes are also kept in the realtime log. */
  realtimeAt?: Date
}

export interface RecordFeedPorts {
  store: Store
  clock: Clock
  newId: IdGenerator
  publish: (projectId: string, events: WebhookEventInput[]) => Promise<void>
  /**
   * Whether the project has a record webhook now, paused and disabled ones
   * included (the engine keeps their events for replays): an armed project
   * with none, and no realtime stream, writes no entries. Every entry is
   * written when not given.
   */
  subscribed?: (projectId: string) => Promise<boolean>
}

function eventOf (entry: WithId<ChangeEntry> | (ChangeEntry & { _id: string })): WebhookEventInput {
  return recordEvent({
    collection: entry.collection,
    type: entry.type,
    record: entry.record,
    before: entry.before,
    actor: entry.actor,
    at: entry.at
  })
}

interface Settlement { projectId: string, entryId: string, event: WebhookEventInput | null }

export class RecordFeed implements RecordChangeFeed {
  private readonly entries: StoreCollection<ChangeEntry>
  private readonly flags: StoreCollection<FeedFlag>
  /** Writes settled since the last drain began: their events to publish (null: the write was not made) and entries to remove. */
  private queued: Settlement[] = []
  private draining: Promise<void> | null = null
  /** Entries of writes beginning now, written together by one insertMany before any of those writes goes on (a group commit). */
  private grouped: { entries: Array<ChangeEntry & { _id: string }>, written: Promise<void> } | null = null
  /** Who else is told of what the feed publishes (realtime streams), after the webhook engine. */
  private readonly followers: Array<(projectId: string, events: WebhookEventInput[]) => Promise<void>> = []

  constructor (private readonly ports: RecordFeedPorts) {
    this.entries = ports.store.collection<ChangeEntry>(RECORD_CHANGES)
    this.flags = ports.store.collection<FeedFlag>(RECORD_FEEDS)
  }

  async init (): Promise<void> {
    await this.entries.createIndex({ createdAt: 1, _id: 1 })
    // No index on the project: entries live for a drain (the table holds writes in flight), so a deleted project's
    // are found by a scan of that, and each entry's insert and removal skip a key (bench/README.md, "what keeping an
    // event costs"); the index an earlier build made goes.
    for (const index of await this.entries.listIndexes()) if (JSON.stringify(index.key) === JSON.stringify({ projectId: 1 })) await this.entries.dropIndex(index.name)
  }

  /**
   * From now on, every write of the project that begins logs its change.
   * Called before a record webhook is saved; a project stays armed while it
   * has had a record webhook (disarming safely against a concurrent creation
   * would need a fence the Store lacks; being armed costs an entry per write).
   */
  async arm (projectId: string): Promise<void> {
    const now = this.ports.clock.now()
    await retryUpsertRace(async () => await this.flags.updateOne({ _id: projectId }, { $setOnInsert: { armedAt: now } }, { upsert: true }))
  }

  /**
   * `arm`, for a realtime stream: also marks the project as followed by
   * realtime, for good, so its changes are kept in the realtime log. A
   * project armed only for webhooks has no stream to read that log, and
   * keeping it cost each write a log append (bench/README.md, "Where the
   * record feed's cost goes"). One read per stream once marked.
   */
  async armRealtime (projectId: string): Promise<void> {
    if ((await this.flag(projectId))?.realtimeAt !== undefined) return
    const now = this.ports.clock.now()
    await retryUpsertRace(async () => await this.flags.updateOne({ _id: projectId }, { $setOnInsert: { armedAt: now }, $set: { realtimeAt: now } }, { upsert: true }))
  }

  /** Whether a realtime stream was ever opened on the project (`armRealtime`). */
  async armedForRealtime (projectId: string): Promise<boolean> {
    return (await this.flag(projectId))?.realtimeAt !== undefined
  }

  private async flag (projectId: string): Promise<FeedFlag | null> {
    return await this.ports.store.extensions.shared<FeedFlag>(RECORD_FEEDS).findOne({ _id: projectId })
  }

  /**
   * Adds a follower of the feed: told of every publish, the sweep's too,
   * after the webhook engine. A follower that throws leaves the entries
   * pending, so the sweep tells everyone again (publishes are idempotent per key).
   */
  onPublish (follower: (projectId: string, events: WebhookEventInput[]) => Promise<void>): void {
    this.followers.push(follower)
  }

  private async publish (projectId: string, events: WebhookEventInput[]): Promise<void> {
    await this.ports.publish(projectId, events)
    for (const follower of this.followers) await follower(projectId, events)
  }

  async armed (projectId: string): Promise<boolean> {
    return await this.flag(projectId) !== null
  }

  /**
   * Whether a write beginning now must log its change: the project is armed
   * and has a reader for it, a realtime stream or a record webhook. Both are
   * read when the write begins, by primary key (the flag; the engine's list
   * under its owner stamp), so a write that begins after a webhook's creation
   * was answered sees the webhook, as it sees the flag.
   */
  private async followed (projectId: string): Promise<boolean> {
    const flag = await this.flag(projectId)
    if (flag === null) return false
    if (flag.realtimeAt !== undefined || this.ports.subscribed === undefined) return true
    return await this.ports.subscribed(projectId)
  }

  async begin (projectId: string, changes: () => RecordChange[]): Promise<RecordChangeBatch | null> {
    if (!await this.followed(projectId)) return null
    const createdAt = this.ports.clock.now()
    const written = changes().map((change): ChangeEntry & { _id: string } => ({
      _id: this.ports.newId(),
      projectId,
      collection: change.collection,
      recordId: change.record._id,
      type: change.type,
      version: change.type === 'record.deleted' ? null : Number(change.record.version),
      record: change.record,
      before: change.before,
      actor: change.actor,
      at: change.at,
      createdAt
    }))
    if (written.length === 0) return null
    await this.write(written)
    return {
      done: async (happened) => {
        const made = happened === undefined ? null : happened
        this.settle(written.map((entry) => ({ projectId, entryId: entry._id, event: made === null || made.has(entry.recordId) ? eventOf(entry) : null })))
      },
      failed: async () => {
        this.settle(written.map((entry) => ({ projectId, entryId: entry._id, event: null })))
      }
    }
  }

  /**
   * Writes the entries, together with those of every write that began in the
   * same turn: one transaction for many. Each write still goes on only once
   * its own entry is committed; a group the store refuses is written entry
   * set by entry set, so one write's failure is its own.
   */
  private async write (written: Array<ChangeEntry & { _id: string }>): Promise<void> {
    if (this.grouped === null) {
      const group: { entries: Array<ChangeEntry & { _id: string }>, written: Promise<void> } = { entries: [], written: Promise.resolve() }
      group.written = new Promise<void>((resolve) => { setImmediate(resolve) }).then(async () => {
        this.grouped = null
        await this.entries.insertMany(group.entries)
      })
      this.grouped = group
    }
    const group = this.grouped
    group.entries.push(...written)
    try {
      await group.written
    } catch (error) {
      // All or nothing: the group wrote none, so each write tries its own alone.
      if (group.entries.length === written.length) throw error
      await this.entries.insertMany(written)
    }
  }

  /** Resolves once every write settled before the call is published and its entries removed (or left to the sweep). */
  async settled (): Promise<void> {
    while (this.draining !== null) await this.draining
  }

  private settle (settlements: Settlement[]): void {
    this.queued.push(...settlements)
    if (this.draining !== null) return
    this.draining = new Promise<void>((resolve) => { setImmediate(resolve) }).then(async () => await this.drain()).finally(() => { this.draining = null })
  }

  /** Publishes what is queued, a project at a time, until nothing is; what fails stays pending for the sweep. */
  private async drain (): Promise<void> {
    while (this.queued.length > 0) {
      const batch = this.queued
      this.queued = []
      const byProject = new Map<string, Settlement[]>()
      for (const settlement of batch) byProject.set(settlement.projectId, [...(byProject.get(settlement.projectId) ?? []), settlement])
      const settledIds: string[] = []
      for (const [projectId, settlements] of byProject) {
        const events = settlements.flatMap((settlement) => settlement.event === null ? [] : [settlement.event])
        try {
          if (events.length > 0) await this.publish(projectId, events)
          for (const settlement of settlements) settledIds.push(settlement.entryId)
        } catch {
          // The writes stand; the sweep publishes what is left pending.
        }
      }
      try {
        for (let i = 0; i < settledIds.length; i += SWEEP_PAGE) await this.entries.deleteMany({ _id: { $in: settledIds.slice(i, i + SWEEP_PAGE) } })
      } catch {
        // Published already: the sweep publishes them again under the same keys, which is one event.
      }
    }
  }

  /**
   * Settles entries a crash left pending, oldest first. An entry's write is
   * visible when the record is at its version or later (created, updated)
   * or gone (deleted). `since` is not used: entries are removed once
   * settled, so whatever is left, however old, is still owed.
   */
  async republish (_since?: Date): Promise<{ published: number, dropped: number }> {
    const cutoff = new Date(this.ports.clock.nowMs() - RECORD_CHANGE_SETTLE_MS)
    let published = 0
    let dropped = 0
    for (;;) {
      const page = await this.entries.find({ createdAt: { $lt: cutoff } }, { sort: { createdAt: 1, _id: 1 }, limit: SWEEP_PAGE }).toArray()
      if (page.length === 0) break
      const visible: Array<WithId<ChangeEntry>> = []
      for (const entry of page) if (await this.visible(entry)) visible.push(entry)
      const byProject = new Map<string, WebhookEventInput[]>()
      for (const entry of visible) byProject.set(entry.projectId, [...(byProject.get(entry.projectId) ?? []), eventOf(entry)])
      for (const [projectId, events] of byProject) await this.publish(projectId, events)
      await this.entries.deleteMany({ _id: { $in: page.map((entry) => entry._id) } })
      published += visible.length
      dropped += page.length - visible.length
      if (page.length < SWEEP_PAGE) break
    }
    return { published, dropped }
  }

  async purgeProject (projectId: string): Promise<void> {
    await this.flags.deleteOne({ _id: projectId })
    await this.ports.store.extensions.sweep(RECORD_CHANGES).deleteMany({ projectId })
  }

  private async visible (entry: WithId<ChangeEntry>): Promise<boolean> {
    const current = await this.ports.store.collection(projectCollectionName(entry.projectId, entry.collection)).findOne({ _id: entry.recordId }, { projection: { version: 1 } })
    if (entry.type === 'record.deleted') return current === null
    return current !== null && typeof current.version === 'number' && entry.version !== null && current.version >= entry.version
  }
}
