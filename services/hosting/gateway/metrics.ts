import type { ServedRequestSink } from '../routing.js'

/**
 * What one answer to an app's request adds up to: who served it, when it
 * started and how many body bytes went to the client (egress). It is
 * reported once, when the response closes, with the status the client got.
 */
export class Tally {
  instanceId: string | null = null
  bytesOut = 0
  /** When a tunnel opened (its 101): a tunnel's latency is the time to open it, not its life. */
  answeredAt: number | null = null

  constructor (readonly appId: string, readonly started: number) {}

  report (sink: ServedRequestSink, status: number): void {
    sink.record({ appId: this.appId, instanceId: this.instanceId, status, durationMs: (this.answeredAt ?? performance.now()) - this.started, bytesOut: this.bytesOut })
  }
}
