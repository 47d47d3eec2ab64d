import { Cron } from 'croner'
import { auxiliaryErrors } from './errors.js'

/**
 * When a schedule fires: a cron expression in an IANA timezone, or a fixed
 * interval. The cron arithmetic is croner's, whose DST handling is cron's
 * (test/services/auxiliary/schedule-times.test.ts pins it for Europe/Berlin):
 * a local time the spring-forward skips fires once, just after the jump; a
 * local time the fall-back repeats fires once, in the repeated hour's second
 * pass.
 */

export type Trigger =
  | { kind: 'cron', expression: string, timezone: string }
  | { kind: 'interval', everySeconds: number }

export const MIN_INTERVAL_SECONDS = 60
export const MAX_INTERVAL_SECONDS = 366 * 24 * 3600

function cronOf (expression: string, timezone: string, path: string): Cron {
  const fields = expression.trim().split(/\s+/)
  if (fields.length !== 5 && fields.length !== 6) throw auxiliaryErrors.scheduleInvalid({ path: `${path}.expression`, why: `must have 5 fields (minute hour day month weekday) or 6 (seconds first), not ${fields.length}` })
  try {
    Intl.DateTimeFormat('en-US', { timeZone: timezone })
  } catch {
    throw auxiliaryErrors.scheduleInvalid({ path: `${path}.timezone`, why: `"${timezone}" is not an IANA timezone` })
  }
  try {
    // legacyMode: day-of-month and weekday are ORed when both are given, as in cron.
    return new Cron(fields.join(' '), { timezone, paused: true, legacyMode: true })
  } catch (error) {
    throw auxiliaryErrors.scheduleInvalid({ path: `${path}.expression`, why: `is not a cron expression: ${(error as Error).message}` })
  }
}

/** Refuses a trigger that cannot fire (naming the field under `path`); the next fire time after `from` otherwise. */
export function checkTrigger (trigger: Trigger, from: Date, path = 'body.trigger'): void {
  if (trigger.kind === 'interval') {
    if (!Number.isInteger(trigger.everySeconds) || trigger.everySeconds < MIN_INTERVAL_SECONDS || trigger.everySeconds > MAX_INTERVAL_SECONDS) {
      throw auxiliaryErrors.scheduleInvalid({ path: `${path}.everySeconds`, why: `must be a whole number of seconds from ${MIN_INTERVAL_SECONDS} to ${MAX_INTERVAL_SECONDS}` })
    }
    return
  }
  if (cronOf(trigger.expression, trigger.timezone, path).nextRun(from) === null) {
    throw auxiliaryErrors.scheduleInvalid({ path: `${path}.expression`, why: 'never fires (no date matches it)' })
  }
}

/**
 * The next `count` fire times strictly after `after`. An interval counts from
 * `anchor` (the schedule's creation or last change), so its slots stay on one
 * grid however late a run was.
 */
export function nextFires (trigger: Trigger, anchor: Date, after: Date, count: number): Date[] {
  if (trigger.kind === 'cron') return cronOf(trigger.expression, trigger.timezone, 'trigger').nextRuns(count, after)
  const step = trigger.everySeconds * 1000
  const first = anchor.getTime() + (Math.floor((after.getTime() - anchor.getTime()) / step) + 1) * step
  return Array.from({ length: count }, (_, index) => new Date(Math.max(first, anchor.getTime() + step) + index * step))
}

export function nextFire (trigger: Trigger, anchor: Date, after: Date): Date | null {
  return nextFires(trigger, anchor, after, 1)[0] ?? null
}
