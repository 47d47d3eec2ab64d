import type { Clock } from '../platform/clock.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Document, Store, StoreCollection } from '../store/types.js'

/**
 * The realtime event log: what the record change feed publishes, numbered
 * per project, kept for the latest `retained` events so a client that
 * reconnects with Last-Event-ID gets what it missed. Every API process on the
 * store appends to it and reads it, which is how a write through one process
 * reaches a subscriber of another.
 *
 * A number is taken by inserting it (its `_id` derives from project and
 * number), after reading the highest one: a number is only ever written once
 * the one before it was visible, so a reader that sees number n has every
 * number below it and can never skip one committed late. Publishing is
 * idempotent per event key (the feed's sweep may publish a change again).
 */

export const REALTIME_EVENTS = 'realtime_events'
const APPEND_ATTEMPTS = 50
const READ_PAGE = 500

export type RecordEventType = 'create' | 'update' | 'delete'
/**
 * `revoke`: the sessions of the end users `record.userIds` ended (deleted,
 * disabled, signed out everywhere); never sent, it makes every process
 * check those users' streams again at once.
 */
export type LogEventType = RecordEventType | 'revoke'

export interface LoggedEvent extends Document {
  _id: string
  projectId: string
  seq: number
  /** The feed's key of the change: collection, record and version. */
  key: string
  type: LogEventType
  collection: string
  /** The record as stored (as it was, for a delete), without what no answer shows; for a revoke, `{ _id, userIds }`. */
  record: Document
  at: Date
}

export interface LogInput { key: string, type: LogEventType, collection: string, record: Document, at: Date }

const idOf = (projectId: string, seq: number): string => `${projectId}:${String(seq).padStart(14, '0')}`

export class RealtimeLog {
  private readonly events: StoreCollection<LoggedEvent>

  constructor (store: Store, private readonly deps: { clock: Clock, retained: number }) {
    this.events = store.collection<LoggedEvent>(REALTIME_EVENTS)
  }

  async init (): Promise<void> {
    await this.events.createIndex({ projectId: 1, seq: 1 })
    await this.events.createIndex({ projectId: 1, key: 1 }, { unique: true })
  }

  /** The highest number given in the project; 0 before its first event. */
  async head (projectId: string): Promise<number> {
    const [last] = await this.events.find({ projectId }, { sort: { seq: -1 }, limit: 1, projection: { seq: 1 } }).toArray()
    return last === undefined ? 0 : last.seq
  }

  /** The lowest number still kept; null when nothing is. */
  async oldest (projectId: string): Promise<number | null> {
    const [first] = await this.events.find({ projectId }, { sort: { seq: 1 }, limit: 1, projection: { seq: 1 } }).toArray()
    return first === undefined ? null : first.seq
  }

  /** Appends the events not logged yet, numbered in order; answers whether any was new. */
  async append (projectId: string, inputs: readonly LogInput[]): Promise<boolean> {
    for (let attempt = 0; attempt < APPEND_ATTEMPTS; attempt++) {
      const known = new Set((await this.events.find({ projectId, key: { $in: inputs.map((input) => input.key) } }, { projection: { key: 1 } }).toArray()).map((event) => event.key))
      const fresh = inputs.filter((input) => !known.has(input.key))
      if (fresh.length === 0) return false
      const head = await this.head(projectId)
      const docs = fresh.map((input, index): LoggedEvent => ({ _id: idOf(projectId, head + 1 + index), projectId, seq: head + 1 + index, ...input }))
      try {
        await this.events.insertMany(docs)
      } catch (error) {
        // Another process took the number (or logged the same change) first: read again.
        if (error instanceof DuplicateKeyError) continue
        throw error
      }
      const last = head + docs.length
      const floor = last - this.deps.retained
      // Pruned now and then rather than on every append: the bound is a promise of at least `retained`.
      if (floor > 0 && Math.floor(head / 64) !== Math.floor(last / 64)) await this.events.deleteMany({ projectId, seq: { $lte: floor } })
      return true
    }
    throw new Error(`realtime log of ${projectId}: no number could be taken after ${APPEND_ATTEMPTS} attempts`)
  }

  /** Events numbered after `after`, oldest first, a page at a time. */
  async after (projectId: string, after: number): Promise<LoggedEvent[]> {
    return await this.events.find({ projectId, seq: { $gt: after } }, { sort: { seq: 1 }, limit: READ_PAGE }).toArray()
  }

  async purgeProject (projectId: string): Promise<void> {
    await this.events.deleteMany({ projectId })
  }
}
