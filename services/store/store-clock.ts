import { systemClock, type Clock } from '../platform/clock.js'
import type { Store } from './types.js'

/** How long one measurement of the Store's time stands before the next read starts another. */
export const STORE_CLOCK_REFRESH_MS = 60_000

/**
 * The Store's time (`extensions.now()`) as a synchronous clock, for what
 * every node must judge alike but reads too often for a round trip each time
 * (rate-limit windows, log sequence numbers): this node's clock corrected by
 * the offset last measured against the Store, half the round trip taken as
 * the server's moment. A read after STORE_CLOCK_REFRESH_MS starts a new
 * measurement in the background and answers with the offset it has; a
 * measurement that fails keeps the old offset (an outage shows on the
 * Store's own calls). Call `sync()` once before first use. On the embedded
 * engine the Store's time is this node's, so the offset is 0 unless a test
 * gave the Store a clock of its own.
 */
export class StoreClock implements Clock {
  private offsetMs = 0
  private measuredAt = -Infinity
  private measuring: Promise<void> | null = null

  constructor (private readonly store: Pick<Store, 'extensions'>, private readonly local: Clock = systemClock, private readonly refreshMs = STORE_CLOCK_REFRESH_MS) {}

  /** Measures the offset now (or waits for the measurement under way); throws when the Store does not answer. */
  async sync (): Promise<void> {
    this.measuring ??= this.measure().finally(() => { this.measuring = null })
    await this.measuring
  }

  private async measure (): Promise<void> {
    const sent = this.local.nowMs()
    const storeMs = (await this.store.extensions.now()).getTime()
    const received = this.local.nowMs()
    this.offsetMs = storeMs - (sent + received) / 2
    this.measuredAt = received
  }

  nowMs (): number {
    const local = this.local.nowMs()
    if (local - this.measuredAt >= this.refreshMs && this.measuring === null) this.sync().catch(() => {})
    return Math.round(local + this.offsetMs)
  }

  now (): Date {
    return new Date(this.nowMs())
  }
}
