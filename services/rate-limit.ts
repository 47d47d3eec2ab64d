import { commonErrors } from './errors.js'
import type { Clock } from './clock.js'
import type { Store, StoreCollection } from './store/types.js'
import { retryUpsertRace } from './upsert-race.js'

type Counter = { count: number, expiresAt: Date }

export interface RateLimitRule { max: number, windowSeconds: number }

/**
 * Fixed-window counters kept in the Store, so every API node behind a load
 * balancer counts against the same budget.
 */
export class RateLimiter {
  private readonly counters: StoreCollection<Counter>
  private lastSweep = 0

  constructor (store: Store, private readonly clock: Clock) {
    this.counters = store.collection<Counter>('_rate_limits')
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
    if (now - this.lastSweep > windowMs) {
      this.lastSweep = now
      await this.counters.deleteMany({ expiresAt: { $lt: new Date(now) } })
    }
    if (counter !== null && counter.count > rule.max) {
      const retryAfterSeconds = Math.max(1, Math.ceil((windowStart + windowMs - now) / 1000))
      throw commonErrors.rateLimited({ retryAfterSeconds })
    }
  }
}
