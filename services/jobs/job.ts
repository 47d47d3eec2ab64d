import { commonErrors } from '../platform/errors.js'
import type { CronSchedule } from './queue-schedule.js'

/**
 * A job as the queue (queue.ts) stores it: its shape and states, the errors
 * a handler throws to steer it, and the checks and defaults every way of
 * writing one shares.
 */

/** `failed`: the handler said retrying is pointless; `dead`: every attempt was used. */
export type JobStatus = 'queued' | 'running' | 'succeeded' | 'failed' | 'dead'
export type JobPayload = { [key: string]: unknown }

export type Job = {
  _id: string
  type: string
  payload: JobPayload
  status: JobStatus
  attempts: number
  maxAttempts: number
  /** Not before this time. */
  runAt: Date
  leaseUntil: Date | null
  /** The worker holding or, once finished, the worker that last ran the job. */
  leaseOwner: string | null
  lastError: string | null
  result: unknown
  createdAt: Date
  updatedAt: Date
  finishedAt: Date | null
  /** Set on a recurring job (see `schedule`): it runs again this long after each run instead of finishing. */
  everyMs?: number
  /** Set on a recurring job scheduled by cron instead (see `schedule`): it runs again at the expression's next fire time. */
  cron?: CronSchedule
  /** Set on a keyed job (see `enqueueKeyed`): asked for again while it ran, so it is queued again instead of finishing. */
  again?: boolean
  /** The batch claim (see `claimMany`) that last took the job: how its claimer finds what its one write took. */
  claimBatch?: string
}

export interface BackoffPolicy {
  baseMs: number
  maxMs: number
}

/** Thrown by a handler when retrying cannot help (bad payload, a 404 upstream): the job ends as `failed`. */
export class PermanentJobError extends Error {
  constructor (message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'PermanentJobError'
  }
}

/**
 * Thrown by a handler that cannot run now (what it needs is held elsewhere):
 * the job goes back to the queue, due `delayMs` later, without spending an
 * attempt, so waiting never makes it `dead`.
 */
export class DeferJobError extends Error {
  constructor (message: string, readonly delayMs: number) {
    super(message)
    this.name = 'DeferJobError'
  }
}

/** Reported when a worker finishes a job whose lease another worker has taken over. */
export class JobLeaseLostError extends Error {
  constructor (readonly jobId: string, readonly workerId: string) {
    super(`Worker ${workerId} lost its lease on job ${jobId}; its outcome was discarded`)
    this.name = 'JobLeaseLostError'
  }
}

export const DEFAULT_MAX_ATTEMPTS = 5
export const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 15 * 60_000 }
const MAX_ERROR_LENGTH = 2_000

/**
 * Delay before retry number `attempt` (1-based): the step doubles up to the cap.
 * Equal jitter (half fixed, half random) spreads jobs that failed together
 * while, below the cap, a later retry never comes sooner than an earlier one.
 */
export function retryDelayMs (attempt: number, policy: BackoffPolicy = DEFAULT_BACKOFF, random: () => number = Math.random): number {
  const step = Math.min(policy.maxMs, policy.baseMs * 2 ** Math.max(0, attempt - 1))
  return Math.round(step / 2 + random() * (step / 2))
}

export function errorMessage (error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH)}…` : text
}

export function isPlainObject (value: unknown): value is JobPayload {
  if (typeof value !== 'object' || value === null) return false
  const prototype = Object.getPrototypeOf(value)
  return prototype === Object.prototype || prototype === null
}

export function assertLeaseMs (leaseMs: number): void {
  if (!Number.isInteger(leaseMs) || leaseMs <= 0) throw new RangeError('leaseMs must be a positive whole number of milliseconds')
}

export function assertJobType (type: unknown): asserts type is string {
  if (typeof type !== 'string' || !/^[\w.:-]{1,100}$/.test(type)) throw commonErrors.jobInvalid({ why: 'Job type must be 1-100 letters, digits, or . _ : -' })
}

export const later = (now: Date, ms: number): Date => new Date(now.getTime() + ms)

/** A job as it is first written, queued and untried. */
export function newJob (type: string, payload: JobPayload, maxAttempts: number, runAt: Date, now: Date): Omit<Job, '_id'> {
  return {
    type, payload, status: 'queued', attempts: 0, maxAttempts, runAt, leaseUntil: null, leaseOwner: null, lastError: null, result: null, createdAt: now, updatedAt: now, finishedAt: null
  }
}
