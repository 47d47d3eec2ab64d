import { randomUUID } from 'node:crypto'
import type { Clock } from '../platform/clock.js'
import { leaseUntil } from '../platform/lease.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { PagedWrites, Store, StoreCollection } from '../store/types.js'

type Lease = {
  callerKey: string
  slot: number
  /** The API process holding the stream: renewed together, so a process that dies lets all of its leases lapse. */
  processId: string
  connectionId: string
  expiresAt: Date
}

export const REALTIME_LEASES = '_realtime_leases'

/** The job that deletes lapsed leases, and how often it runs. */
export const REALTIME_LEASES_PRUNE_JOB = 'realtime.prune-leases'
export const REALTIME_LEASES_PRUNE_EVERY_MS = 10 * 60_000

/** A place under the per-caller limit, held by one open stream. */
export interface LeaseHold { id: string, connectionId: string }

/**
 * The per-caller connection limit across every API process on one store.
 * Each open stream holds one of the caller's `limit` slots, a document whose
 * `_id` is the caller and slot number: the store's unique `_id` is what keeps
 * two processes (or two overlapping connects in one) from taking the same
 * slot, so no count-then-insert can race past the limit. A slot whose lease
 * lapsed (its process died without closing) is taken over by a conditional
 * update. Leases are renewed for the whole process in one write; `clock` is
 * the Store's time, so every process judges a lapse alike.
 */
export class ConnectionLeases {
  readonly processId = randomUUID()
  private readonly leases: StoreCollection<Lease>
  private readonly sweep: PagedWrites

  constructor (store: Store, private readonly deps: { clock: Clock, leaseMs: number }) {
    this.leases = store.collection<Lease>(REALTIME_LEASES)
    this.sweep = store.extensions.sweep(REALTIME_LEASES)
  }

  async init (): Promise<void> {
    await this.leases.createIndex({ callerKey: 1 })
    await this.leases.createIndex({ processId: 1 })
    await this.leases.createIndex({ expiresAt: 1 })
  }

  /** Takes a free slot of the caller's `limit`; null when every one is held by a live lease. */
  async acquire (callerKey: string, limit: number): Promise<LeaseHold | null> {
    const now = this.deps.clock.nowMs()
    const live = await this.leases.find({ callerKey, expiresAt: { $gt: new Date(now) } }, { projection: { slot: 1 } }).toArray()
    if (live.length >= limit) return null
    const held = new Set(live.map((lease) => lease.slot))
    const connectionId = randomUUID()
    const lease = { callerKey, processId: this.processId, connectionId, expiresAt: leaseUntil(this.deps.clock, this.deps.leaseMs) }
    for (let slot = 0; slot < limit; slot++) {
      if (held.has(slot)) continue
      const id = `${callerKey}#${slot}`
      try {
        await this.leases.insertOne({ _id: id, slot, ...lease })
        return { id, connectionId }
      } catch (error) {
        if (!(error instanceof DuplicateKeyError)) throw error
      }
      // Taken: by a lease that lapsed (taken over only while it still has), or by a connect that just won it.
      const taken = await this.leases.updateOne({ _id: id, expiresAt: { $lte: new Date(now) } }, { $set: { slot, ...lease } })
      if (taken.modifiedCount === 1) return { id, connectionId }
    }
    return null
  }

  /** Gives the slot back; one taken over meanwhile by another stream is left to it. */
  async release (hold: LeaseHold): Promise<void> {
    await this.leases.deleteOne({ _id: hold.id, connectionId: hold.connectionId })
  }

  /** Extends every lease this process holds (the hub calls it each REALTIME_HEARTBEAT_MS). */
  async renew (): Promise<void> {
    await this.sweep.updateMany({ processId: this.processId }, { $set: { expiresAt: leaseUntil(this.deps.clock, this.deps.leaseMs) } })
  }

  /** The periodic prune: leases of processes that ended without closing their streams. */
  async prune (): Promise<{ pruned: number }> {
    return { pruned: await this.sweep.deleteMany({ expiresAt: { $lte: new Date(this.deps.clock.nowMs()) } }) }
  }
}
