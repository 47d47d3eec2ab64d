import type { InstanceEvent } from './runtime.js'

/**
 * Supervision as every driver does it, so `crashed`, `restarted` and
 * `gave-up` mean the same whichever runs:
 * - `crashed`: a run of the instance ended: a healthy one, or a restart that
 *   exited or stayed unhealthy before becoming healthy (each reported);
 * - `restarted`: a restart became healthy (the event carries where it now listens);
 * - `gave-up`: `maxAttempts` restarts in a row failed; the instance is forgotten.
 * Restart n waits `initialDelayMs · 2^(n-1)`, at most `maxDelayMs`. A healthy run
 * of `stableAfterMs` or more counts as recovered: its crash starts the count again.
 */
export interface RestartPolicy {
  initialDelayMs: number
  maxDelayMs: number
  maxAttempts: number
  stableAfterMs: number
}

export const DEFAULT_RESTART_POLICY: Readonly<RestartPolicy> = Object.freeze({ initialDelayMs: 1000, maxDelayMs: 30_000, maxAttempts: 5, stableAfterMs: 60_000 })

/** One instance's restart count. */
export class RestartBackoff {
  attempts = 0
  constructor (private readonly policy: RestartPolicy) {}

  /** A healthy run ended after `ranMs`: long enough, and the count starts again. */
  healthyRunEnded (ranMs: number): void {
    if (ranMs >= this.policy.stableAfterMs) this.attempts = 0
  }

  /** The wait before the next attempt (counting it), or null when the attempts are spent. */
  nextDelayMs (): number | null {
    if (this.attempts >= this.policy.maxAttempts) return null
    this.attempts++
    return Math.min(this.policy.initialDelayMs * 2 ** (this.attempts - 1), this.policy.maxDelayMs)
  }

  gaveUpReason (last: string): string {
    return `gave up after ${this.attempts} restarts; last: ${last}`
  }
}

/** How a crash is worded in events and logs. */
export function exitReason (exitCode: number | null, signal: string | null): string {
  if (signal !== null) return `killed by ${signal}`
  return exitCode !== null ? `exited with code ${exitCode}` : 'exited'
}

/** The listeners of `RuntimeDriver.onEvent`; one listener's failure is its own, the others still hear the event. */
export class InstanceEvents {
  private readonly listeners: Array<(event: InstanceEvent) => void> = []

  on (listener: (event: InstanceEvent) => void): void {
    this.listeners.push(listener)
  }

  emit (event: InstanceEvent): void {
    for (const listener of this.listeners) {
      try {
        listener(event)
      } catch {
        // Deliberately ignored: see above.
      }
    }
  }
}
