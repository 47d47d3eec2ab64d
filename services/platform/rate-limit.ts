import { commonErrors } from './errors.js'
import type { Clock } from './clock.js'
import type { PagedWrites, Store, StoreCollection } from '../store/types.js'
import { retryUpsertRace } from './upsert-race.js'

type Counter = { count: number, expiresAt: Date }

export interface RateLimitRule { max: number, windowSeconds: number }

const COUNTERS = '_rate_limits'

/** The job that deletes counters whose window has passed, and how often it runs. */
export const RATE_LIMITS_PRUNE_JOB = 'rate-limits.prune'
export const RATE_LIMITS_PRUNE_EVERY_MS = 10 * 60_000

/**
 * Fixed-window counters kept in the Store, so every API node behind a load
 * balancer counts against the same budget. `clock` should be the Store's time
 * (a StoreClock), so every node puts an attempt in the same window. Counters
 * whose window has passed are deleted by `prune` (a scheduled job, in pages),
 * never inside the request being counted.
 */
export class RateLimiter {
  private readonly counters: StoreCollection<Counter>
  private readonly sweep: PagedWrites

  constructor (store: Store, private readonly clock: Clock) {
    this.counters = store.collection<Counter>(COUNTERS)
    this.sweep = store.extensions.sweep(COUNTERS)
  }

  /** Counts one attempt; throws `commonErrors.rateLimited` (429) once `rule.max` is passed within the window. */
  async hit (bucket: string, key: string, rule: RateLimitRule): Promise<void> {
    const now = this.clock.nowMs()
    const windowMs = rule.windowSeconds * 1000
    const windowStart = Math.floor(now / windowMs) * windowMs
    const counter = await retryUpsertRace(async () => await this.counters.findOneAndUpdate(
      { _id: `${bucket}:${windowStart}:${key}` },
      { $inc: { count: 1 }, $setOnInsert: { expiresAt: new Date(windowStart + windowMs) } },
      { upsert: true, returnDocument: 'after' }
    ))
    if (counter !== null && counter.count > rule.max) {
      const retryAfterSeconds = Math.max(1, Math.ceil((windowStart + windowMs - now) / 1000))
      throw commonErrors.rateLimited({ retryAfterSeconds })
    }
  }

  /** Deletes the counters of windows that have ended; answers how many went. */
  async prune (): Promise<{ deleted: number }> {
    return { deleted: await this.sweep.deleteMany({ expiresAt: { $lt: this.clock.now() } }) }
  }
}
