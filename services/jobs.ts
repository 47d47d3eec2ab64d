import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import type { Clock } from './clock.js'
import { badRequest } from './errors.js'
import type { IdGenerator } from './ids.js'
import type { Filter, Store, StoreCollection } from './store/types.js'

/**
 * The durable job queue. Jobs live in the Store, so any API node
 * can run them and a restart loses none. A worker claims a job by taking a
 * lease; if it dies, the lease expires and another worker reclaims the job.
 * Every change a worker makes is fenced on (leaseOwner, attempts): a worker
 * whose lease was taken over cannot overwrite the new owner's outcome.
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
}

export interface EnqueueOptions {
  runAt?: Date
  delayMs?: number
  maxAttempts?: number
}

export interface BackoffPolicy {
  baseMs: number
  maxMs: number
}

export interface JobQueueDeps {
  store: Store
  clock: Clock
  newId: IdGenerator
  backoff?: BackoffPolicy
  /** Source of jitter; tests pass a fixed one. */
  random?: () => number
}

/** Thrown by a handler when retrying cannot help (bad payload, a 404 upstream): the job ends as `failed`. */
export class PermanentJobError extends Error {
  constructor (message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'PermanentJobError'
  }
}

/** Reported when a worker finishes a job whose lease another worker has taken over. */
export class JobLeaseLostError extends Error {
  constructor (readonly jobId: string, readonly workerId: string) {
    super(`Worker ${workerId} lost its lease on job ${jobId}; its outcome was discarded`)
    this.name = 'JobLeaseLostError'
  }
}

const JOBS_COLLECTION = '_jobs'
const DEFAULT_MAX_ATTEMPTS = 5
const DEFAULT_BACKOFF: BackoffPolicy = { baseMs: 1_000, maxMs: 15 * 60_000 }
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

function errorMessage (error: unknown): string {
  const text = error instanceof Error ? `${error.name}: ${error.message}` : String(error)
  return text.length > MAX_ERROR_LENGTH ? `${text.slice(0, MAX_ERROR_LENGTH)}…` : text
}

function isPlainObject (value: unknown): value is JobPayload {
  if (typeof value !== 'object' || value === null) return false
  const prototype = Object.getPrototypeOf(value)
  return prototype === Object.prototype || prototype === null
}

function assertLeaseMs (leaseMs: number): void {
  if (!Number.isInteger(leaseMs) || leaseMs <= 0) throw new RangeError('leaseMs must be a positive whole number of milliseconds')
}

export class JobQueue {
  readonly jobs: StoreCollection<Job>
  private readonly clock: Clock
  private readonly newId: IdGenerator
  private readonly backoff: BackoffPolicy
  private readonly random: () => number

  constructor (deps: JobQueueDeps) {
    this.jobs = deps.store.collection<Job>(JOBS_COLLECTION)
    this.clock = deps.clock
    this.newId = deps.newId
    this.backoff = deps.backoff ?? DEFAULT_BACKOFF
    this.random = deps.random ?? Math.random
  }

  async init (): Promise<void> {
    await this.jobs.createIndex({ status: 1, runAt: 1 })
    await this.jobs.createIndex({ status: 1, leaseUntil: 1 })
  }

  async enqueue (type: string, payload: JobPayload = {}, options: EnqueueOptions = {}): Promise<Job> {
    if (typeof type !== 'string' || !/^[\w.:-]{1,100}$/.test(type)) throw badRequest('APP_JOB_INVALID', 'Job type must be 1-100 letters, digits, or . _ : -')
    if (!isPlainObject(payload)) throw badRequest('APP_JOB_INVALID', 'Job payload must be a plain object')
    const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw badRequest('APP_JOB_INVALID', 'maxAttempts must be a whole number of at least 1')
    if (options.runAt !== undefined && options.delayMs !== undefined) throw badRequest('APP_JOB_INVALID', 'Give runAt or delayMs, not both')
    if (options.delayMs !== undefined && !(Number.isFinite(options.delayMs) && options.delayMs >= 0)) throw badRequest('APP_JOB_INVALID', 'delayMs must be zero or more')
    if (options.runAt !== undefined && !(options.runAt instanceof Date && Number.isFinite(options.runAt.getTime()))) throw badRequest('APP_JOB_INVALID', 'runAt must be a valid Date')

    const now = this.clock.now()
    const job: Job = {
      _id: this.newId(),
      type,
      payload,
      status: 'queued',
      attempts: 0,
      maxAttempts,
      runAt: options.runAt ?? new Date(now.getTime() + (options.delayMs ?? 0)),
      leaseUntil: null,
      leaseOwner: null,
      lastError: null,
      result: null,
      createdAt: now,
      updatedAt: now,
      finishedAt: null
    }
    await this.jobs.insertOne(job)
    return job
  }

  async get (id: string): Promise<Job | null> {
    return await this.jobs.findOne({ _id: id })
  }

  /**
   * Atomically takes the next due job of one of `types`: a queued job whose
   * time has come, or a running one whose lease expired (its worker died or
   * stalled). Each claim counts as an attempt, so a job that keeps killing its
   * worker still ends up dead.
   */
  async claim (workerId: string, types: readonly string[], leaseMs: number): Promise<Job | null> {
    assertLeaseMs(leaseMs)
    if (types.length === 0) return null
    for (;;) {
      const now = this.clock.now()
      const job = await this.jobs.findOneAndUpdate(
        {
          type: { $in: [...types] },
          $or: [{ status: 'queued', runAt: { $lte: now } }, { status: 'running', leaseUntil: { $lt: now } }]
        },
        {
          $set: { status: 'running', leaseOwner: workerId, leaseUntil: new Date(now.getTime() + leaseMs), updatedAt: now },
          $inc: { attempts: 1 }
        },
        // Oldest job first (ids sort by creation); the embedded engine orders by _id in SQL, cheaper than by runAt.
        { sort: { _id: 1 }, returnDocument: 'after' }
      )
      if (job === null || job.attempts <= job.maxAttempts) return job
      // Only a reclaimed lease can overshoot: the last attempt's worker never reported back.
      await this.settle(job, workerId, {
        status: 'dead',
        lastError: `Lease expired on the final attempt (${job.maxAttempts}); the worker stopped responding`,
        finishedAt: now
      })
    }
  }

  /** Pushes the lease forward; false when the caller no longer owns the job. */
  async extendLease (job: Job, workerId: string, leaseMs: number): Promise<boolean> {
    assertLeaseMs(leaseMs)
    const now = this.clock.now()
    const outcome = await this.jobs.updateOne(this.leaseFilter(job, workerId), {
      $set: { leaseUntil: new Date(now.getTime() + leaseMs), updatedAt: now }
    })
    return outcome.matchedCount === 1
  }

  /** The finished job, or null when the caller's lease was taken over (its result is discarded). */
  async complete (job: Job, workerId: string, result?: unknown): Promise<Job | null> {
    const now = this.clock.now()
    return await this.settle(job, workerId, { status: 'succeeded', result: result ?? null, finishedAt: now })
  }

  /**
   * Records a failed attempt: back to `queued` after a growing delay, `dead`
   * once attempts are used up, `failed` at once for a PermanentJobError.
   * Null when the caller's lease was taken over.
   */
  async fail (job: Job, workerId: string, error: unknown): Promise<Job | null> {
    const now = this.clock.now()
    const lastError = errorMessage(error)
    if (error instanceof PermanentJobError) return await this.settle(job, workerId, { status: 'failed', lastError, finishedAt: now })
    if (job.attempts >= job.maxAttempts) return await this.settle(job, workerId, { status: 'dead', lastError, finishedAt: now })
    const runAt = new Date(now.getTime() + retryDelayMs(job.attempts, this.backoff, this.random))
    return await this.settle(job, workerId, { status: 'queued', lastError, runAt, leaseOwner: null })
  }

  /** `attempts` fences the claim itself, so a worker that reclaims its own expired job cannot be confused with its earlier run. */
  private leaseFilter (job: Job, workerId: string): Filter {
    return { _id: job._id, status: 'running', leaseOwner: workerId, attempts: job.attempts }
  }

  private async settle (job: Job, workerId: string, changes: Partial<Job>): Promise<Job | null> {
    return await this.jobs.findOneAndUpdate(
      this.leaseFilter(job, workerId),
      { $set: { ...changes, leaseUntil: null, updatedAt: this.clock.now() } },
      { returnDocument: 'after' }
    )
  }
}

export interface JobContext {
  job: Job
  workerId: string
  /** Aborted when the lease is lost: the job now belongs to another worker, so stop early. */
  signal: AbortSignal
}

export type JobHandler = (payload: JobPayload, context: JobContext) => Promise<unknown>

export interface JobWorkerOptions {
  workerId?: string
  leaseMs?: number
  pollMs?: number
  concurrency?: number
  /** Store errors, lost leases and outcome-recording failures; the worker keeps going. */
  onError?: (error: unknown, job?: Job) => void
}

const DEFAULT_LEASE_MS = 30_000
const DEFAULT_POLL_MS = 1_000

function defaultWorkerId (): string {
  return `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`
}

/**
 * Runs jobs of the handled types, up to `concurrency` at once. One loop claims
 * while a slot is free, so an idle worker costs one query per poll whatever
 * its concurrency. The lease is renewed every third of its length while a
 * handler runs. stop() stops claiming and waits for the jobs in flight.
 */
export class JobWorker {
  readonly workerId: string
  private readonly types: string[]
  private readonly leaseMs: number
  private readonly pollMs: number
  private readonly concurrency: number
  private readonly reportError: (error: unknown, job?: Job) => void
  private running = false
  private loop: Promise<void> | null = null
  private readonly inFlight = new Set<Promise<void>>()
  private readonly sleepers = new Set<() => void>()

  constructor (
    private readonly queue: JobQueue,
    private readonly handlers: Readonly<Record<string, JobHandler>>,
    options: JobWorkerOptions = {}
  ) {
    this.types = Object.keys(handlers)
    if (this.types.length === 0) throw new RangeError('a JobWorker needs at least one handler')
    this.workerId = options.workerId ?? defaultWorkerId()
    this.leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS
    assertLeaseMs(this.leaseMs)
    this.pollMs = options.pollMs ?? DEFAULT_POLL_MS
    this.concurrency = options.concurrency ?? 1
    if (!Number.isInteger(this.concurrency) || this.concurrency < 1) throw new RangeError('concurrency must be a whole number of at least 1')
    const onError = options.onError ?? ((error, job) => { console.error(`[jobs] ${this.workerId}${job === undefined ? '' : ` job ${job._id}`}:`, error) })
    // A throwing reporter must not kill the claim loop.
    this.reportError = (error, job) => { try { onError(error, job) } catch {} }
  }

  start (): void {
    if (this.running) return
    this.running = true
    this.loop = this.claimLoop()
  }

  async stop (): Promise<void> {
    this.running = false
    this.poke()
    await this.loop
    this.loop = null
  }

  /** Ends an idle wait now, e.g. right after this process enqueued work. */
  poke (): void {
    for (const wake of this.sleepers) wake()
  }

  private async claimLoop (): Promise<void> {
    while (this.running) {
      if (this.inFlight.size >= this.concurrency) {
        await Promise.race(this.inFlight)
        continue
      }
      let job: Job | null = null
      try {
        job = await this.queue.claim(this.workerId, this.types, this.leaseMs)
      } catch (error) {
        this.reportError(error)
      }
      if (job === null) {
        // Jitter keeps idle workers on many nodes from polling in lockstep.
        await this.sleep(this.pollMs * (0.75 + Math.random() * 0.5))
        continue
      }
      const run: Promise<void> = this.runJob(job).finally(() => { this.inFlight.delete(run) })
      this.inFlight.add(run)
    }
    await Promise.all(this.inFlight)
  }

  private async runJob (job: Job): Promise<void> {
    const lease = new AbortController()
    let settled = false
    const renew = setInterval(() => {
      this.queue.extendLease(job, this.workerId, this.leaseMs).then((owned) => {
        if (!owned && !settled) lease.abort(new JobLeaseLostError(job._id, this.workerId))
      }, (error: unknown) => { this.reportError(error, job) })
    }, Math.max(1, Math.floor(this.leaseMs / 3)))

    let outcome: { ok: true, result: unknown } | { ok: false, error: unknown }
    try {
      const handler = this.handlers[job.type]
      outcome = { ok: true, result: await handler(job.payload, { job, workerId: this.workerId, signal: lease.signal }) }
    } catch (error) {
      outcome = { ok: false, error }
    } finally {
      settled = true
      clearInterval(renew)
    }

    try {
      const recorded = outcome.ok
        ? await this.queue.complete(job, this.workerId, outcome.result)
        : await this.queue.fail(job, this.workerId, outcome.error)
      if (recorded === null) this.reportError(new JobLeaseLostError(job._id, this.workerId), job)
    } catch (error) {
      // The lease will lapse and another attempt will run: the queue is at-least-once.
      this.reportError(error, job)
    }
  }

  private async sleep (ms: number): Promise<void> {
    await new Promise<void>((resolve) => {
      const wake = (): void => {
        clearTimeout(timer)
        this.sleepers.delete(wake)
        resolve()
      }
      const timer = setTimeout(wake, ms)
      this.sleepers.add(wake)
    })
  }
}
