import { createHash } from 'node:crypto'
import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Store, StoreCollection, WithId } from '../store/types.js'
import { TRACKER_LIMITS } from '../../schemas/tracker.js'
import type { TrackerActor } from './access.js'
import { trackerErrors } from './errors.js'
import { TRACKER_COLLECTIONS } from './records.js'

type IdempotencyRecord = {
  state: 'running' | 'done'
  fingerprint: string
  /** The id the work creates under, fixed before it runs: a retry after a crash creates under the same id, so never twice. */
  reservedId: string
  result: unknown
  startedAt: Date
  expiresAt: Date
}

// A running request older than this is taken for dead and its key may be run again.
const TAKEOVER_MS = 60_000
const KEY = /^[\x21-\x7e]{1,255}$/

function stableJson (value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(',')}]`
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    return `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${stableJson((value as Record<string, unknown>)[key])}`).join(',')}}`
  }
  return JSON.stringify(value) ?? 'null'
}

const digest = (text: string): string => createHash('sha256').update(text).digest('hex')

/**
 * Idempotency-Key for creates and bulk patches, per caller: the first request
 * with a key runs and its result is kept for a day; a retry with the same key
 * and the same request gets the kept result (through `replay`), a retry with
 * another request 409.
 */
export class Idempotency {
  private readonly records: StoreCollection<IdempotencyRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator }) {
    this.records = store.collection<IdempotencyRecord>(TRACKER_COLLECTIONS.idempotency)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ expiresAt: 1 })
  }

  /**
   * Runs `work` once for `key` (absent: always) and answers what it answered
   * (kept as a Store value: ids and small results, not views). `scope` names
   * the operation and what it works on; `request` is what must be the same
   * on a retry. `work` gets the reserved id and must treat finding its own
   * earlier creation under it as success.
   */
  async once<R> (actor: TrackerActor, scope: string, key: string | undefined, request: unknown, work: (reservedId: string) => Promise<R>): Promise<R> {
    if (key === undefined) return await work(this.deps.newId())
    if (!KEY.test(key) || key.length > TRACKER_LIMITS.idempotencyKeyLength) throw trackerErrors.invalidIdempotencyKey()
    const _id = digest(`${actor.userId}\n${scope}\n${key}`)
    const fingerprint = digest(stableJson(request))
    const now = this.deps.clock.now()
    const fresh: WithId<IdempotencyRecord> = { _id, state: 'running', fingerprint, reservedId: this.deps.newId(), result: null, startedAt: now, expiresAt: new Date(now.getTime() + TRACKER_LIMITS.idempotencyTtlMs) }
    let claimed: WithId<IdempotencyRecord> | null = null
    try {
      await this.records.insertOne(fresh)
      claimed = fresh
    } catch (error) {
      if (!(error instanceof DuplicateKeyError)) throw error
    }
    if (claimed === null) {
      const existing = await this.records.findOne({ _id })
      if (existing === null) return await this.once(actor, scope, key, request, work)
      if (existing.expiresAt <= now) {
        const { _id: _, ...values } = fresh
        claimed = await this.records.findOneAndUpdate({ _id, expiresAt: existing.expiresAt }, { $set: values }, { returnDocument: 'after' })
        if (claimed === null) throw trackerErrors.idempotencyInProgress()
      } else {
        if (existing.fingerprint !== fingerprint) throw trackerErrors.idempotencyKeyReused()
        if (existing.state === 'done') return existing.result as R
        if (existing.startedAt.getTime() > now.getTime() - TAKEOVER_MS) throw trackerErrors.idempotencyInProgress()
        claimed = await this.records.findOneAndUpdate({ _id, state: 'running', startedAt: existing.startedAt }, { $set: { startedAt: now } }, { returnDocument: 'after' })
        if (claimed === null) throw trackerErrors.idempotencyInProgress()
      }
    }
    let result: R
    try {
      result = await work(claimed.reservedId)
    } catch (error) {
      // A refused request leaves the key free: the same request would be refused again, a corrected one may use it.
      await this.records.deleteOne({ _id, startedAt: claimed.startedAt, state: 'running' })
      throw error
    }
    await this.records.updateOne({ _id, startedAt: claimed.startedAt }, { $set: { state: 'done', result: result as unknown } })
    return result
  }

  /** Forgets keys past their day; the daily job calls it. */
  async purgeExpired (): Promise<number> {
    return (await this.records.deleteMany({ expiresAt: { $lt: this.deps.clock.now() } })).deletedCount
  }
}
