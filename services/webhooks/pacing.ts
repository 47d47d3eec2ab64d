import { performance } from 'node:perf_hooks'

/**
 * Deliveries yield to API requests: they share the process's event loop, so
 * while requests keep it busy (a burst of writes, each of which queues a
 * delivery) a webhook's job waits `PACED_DELAY_MS` after each batch, and
 * once the requests ease off it sends its backlog batch after batch. The outbox is durable, so waiting delays events, never loses
 * one, and a batch each wait keeps them moving however long the load lasts.
 * Deliveries alone never count as busy, or a backlog would slow its own
 * catch-up.
 */
export type Busy = () => boolean

/** Event-loop utilisation at or above which the loop counts as busy… */
export const BUSY_UTILISATION = 0.85
/** …while at least this many API requests a second came in. */
export const BUSY_REQUESTS_PER_SECOND = 100
/** How long a paced webhook's job waits before its next batch. */
export const PACED_DELAY_MS = 250
/** The window both are measured over: several delivery batches and request bursts long. */
const WINDOW_MS = 500

/** Busy over the last full window, from the loop's utilisation and `requests()`, a running count of requests received. */
export function apiBusy (requests: () => number): Busy {
  let mark = performance.eventLoopUtilization()
  let counted = requests()
  let busy = false
  return () => {
    const window = performance.eventLoopUtilization(mark)
    const elapsed = window.idle + window.active
    if (elapsed >= WINDOW_MS) {
      const received = requests() - counted
      busy = window.utilization >= BUSY_UTILISATION && received * 1000 / elapsed >= BUSY_REQUESTS_PER_SECOND
      mark = performance.eventLoopUtilization()
      counted += received
    }
    return busy
  }
}
