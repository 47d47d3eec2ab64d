import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import type { RecordChange, RecordChangeBatch, RecordChangeFeed } from '../collections/records.js'
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

interface FeedFlag extends Document { armedAt: Date }

export interface RecordFeedPorts {
  store: Store
  clock: Clock
  newId: IdGenerator
  publish: (projectId: string, events: WebhookEventInput[]) => Promise<void>
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

export class RecordFeed implements RecordChangeFeed {
  private readonly entries: StoreCollection<ChangeEntry>
  private readonly flags: StoreCollection<FeedFlag>

  constructor (private readonly ports: RecordFeedPorts) {
    this.entries = ports.store.collection<ChangeEntry>(RECORD_CHANGES)
    this.flags = ports.store.collection<FeedFlag>(RECORD_FEEDS)
  }

  async init (): Promise<void> {
    await this.entries.createIndex({ createdAt: 1, _id: 1 })
    await this.entries.createIndex({ projectId: 1 })
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

  async armed (projectId: string): Promise<boolean> {
    return await this.ports.store.extensions.shared<FeedFlag>(RECORD_FEEDS).findOne({ _id: projectId }) !== null
  }

  async begin (projectId: string, changes: () => RecordChange[]): Promise<RecordChangeBatch | null> {
    if (!await this.armed(projectId)) return null
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
    await this.entries.insertMany(written)
    const ids = written.map((entry) => entry._id)
    return {
      done: async (happened) => {
        const made = happened === undefined ? written : written.filter((entry) => happened.has(entry.recordId))
        try {
          if (made.length > 0) await this.ports.publish(projectId, made.map(eventOf))
          await this.entries.deleteMany({ _id: { $in: ids } })
        } catch {
          // The write stands; the sweep publishes what is left pending.
        }
      },
      failed: async () => {
        try {
          await this.entries.deleteMany({ _id: { $in: ids } })
        } catch {
          // The sweep finds no such write and drops the entries.
        }
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
      for (const [projectId, events] of byProject) await this.ports.publish(projectId, events)
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
