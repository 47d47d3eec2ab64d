import { commonErrors } from '../platform/errors.js'
import type { StoreCollection } from '../store/types.js'
import { retryUpsertRace } from '../platform/upsert-race.js'
import { checkTrigger, nextFire } from '../auxiliary/schedule-times.js'
import type { Job } from './job.js'

/** A cron expression (5 fields, or 6 with seconds first) read in an IANA timezone, as the project schedules take it. */
export type CronSchedule = { expression: string, timezone: string }

// Sorts before every generated id (digits and lower-case letters), so a backlog never holds a schedule back.
const RECURRING_ID_PREFIX = '-every:'

/** Recurring: run again after each run, by interval or by cron expression. */
export function isRecurring (job: Job): boolean {
  return job.everyMs !== undefined || job.cron !== undefined
}

// An expression with no date left (checked when scheduled, so only a calendar running out) parks the job a year ahead rather than at once.
export function nextCronRun (cron: CronSchedule, now: Date): Date {
  return nextFire({ kind: 'cron', ...cron }, now, now) ?? new Date(now.getTime() + 366 * 86_400_000)
}

/**
 * Makes `type` a recurring job: one job for the whole deployment, due at
 * once when new and then `every` ms after each run (or, given a cron
 * expression, at its next fire time), whether it succeeded or used up its
 * attempts. Every node may call this at every start: the job is keyed by
 * its type, and a changed interval applies from the next run; a cron
 * schedule also pulls a later next run in to its own next fire time, so
 * moving from `365d` to a daily cron does not wait a year. `fresh` is the
 * job as first written, given its first run time.
 */
export async function scheduleRecurring (jobs: StoreCollection<Job>, type: string, every: number | CronSchedule, now: Date, fresh: (runAt: Date) => Omit<Job, '_id'>): Promise<Job> {
  let trigger: Pick<Job, 'everyMs' | 'cron'>
  let firstRun = now
  if (typeof every === 'number') {
    if (!Number.isSafeInteger(every) || every < 1) throw commonErrors.jobInvalid({ why: 'everyMs must be a whole number of at least 1' })
    trigger = { everyMs: every }
  } else {
    checkTrigger({ kind: 'cron', ...every }, now, 'schedule')
    trigger = { cron: { expression: every.expression, timezone: every.timezone } }
    firstRun = nextCronRun(trigger.cron as CronSchedule, now)
  }
  const job = await retryUpsertRace(async () => await jobs.findOneAndUpdate(
    { _id: `${RECURRING_ID_PREFIX}${type}` },
    {
      $set: trigger,
      $unset: typeof every === 'number' ? { cron: '' } : { everyMs: '' },
      $setOnInsert: fresh(firstRun)
    },
    { upsert: true, returnDocument: 'after' }
  ))
  if (job === null) throw new Error('upsert returned no document')
  if (typeof every === 'number' || job.status !== 'queued' || job.runAt <= firstRun) return job
  return await jobs.findOneAndUpdate({ _id: job._id, status: 'queued', runAt: { $gt: firstRun } }, { $set: { runAt: firstRun } }, { returnDocument: 'after' }) ?? job
}

/** Stops a recurring job a newer version no longer runs (its type retired or renamed), so it does not wait as due forever. */
export async function unscheduleRecurring (jobs: StoreCollection<Job>, type: string): Promise<boolean> {
  const { deletedCount } = await jobs.deleteOne({ _id: `${RECURRING_ID_PREFIX}${type}` })
  return deletedCount === 1
}
