import type { Clock } from './clock.js'

/**
 * The leases that tell other processes a piece of work is alive (a realtime
 * stream's place, an import's hidden project, a running backup): a time in
 * the store, pushed forward while the work runs, after which another process
 * may take the work for dead. `clock` is the Store's (a StoreClock), so
 * processes whose clocks disagree judge a lapse alike.
 */
export function leaseUntil (clock: Clock, leaseMs: number): Date {
  return new Date(clock.nowMs() + leaseMs)
}

/** A lease renewed while its work runs; `signal` aborts once it is no longer the holder's. */
export interface HeldLease {
  readonly signal: AbortSignal
  stop: () => void
}

/**
 * Renews a lease every `everyMs` until `stop`. `renew` answers false once the
 * lease is not the holder's any more (taken over, swept, deleted): `signal`
 * then aborts with `lost()`, so the work stops writing rather than finish
 * over a successor's. A renewal that throws (the store unreachable) is tried
 * again at the next tick: should they keep failing, the lease lapses and a
 * successor's takeover makes the next renewal answer false.
 */
export function holdLease (renew: () => Promise<boolean>, everyMs: number, lost: () => Error): HeldLease {
  const controller = new AbortController()
  let stopped = false
  const timer = setInterval(() => {
    renew().then((held) => {
      if (!held && !stopped && !controller.signal.aborted) controller.abort(lost())
    }, () => {})
  }, everyMs)
  timer.unref()
  return {
    signal: controller.signal,
    stop: () => { stopped = true; clearInterval(timer) }
  }
}
