import { commonErrors } from '../platform/errors.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Filter, IndexKey, Store, StoreCollection } from '../store/types.js'
import { isRecurring, nextCronRun, scheduleRecurring, unscheduleRecurring, type CronSchedule } from './queue-schedule.js'
import {
  assertJobType, assertLeaseMs, DEFAULT_BACKOFF, DEFAULT_MAX_ATTEMPTS, DeferJobError, errorMessage, isPlainObject, later, newJob, PermanentJobError, retryDelayMs,
  type BackoffPolicy, type Job, type JobPayload, type JobStatus
} from './job.js'

/**
 * The durable job queue. Jobs live in the Store, so any API node
 * can run them and a restart loses none. A worker claims a job by taking a
 * lease; if it dies, the lease expires and another worker reclaims the job.
 * Every change a worker makes is fenced on (leaseOwner, attempts): a worker
 * whose lease was taken over cannot overwrite the new owner's outcome.
 * Every time (run times, leases) is the Store's (`extensions.now()`), so
 * nodes whose clocks disagree still agree on when a lease ran out.
 */

export interface EnqueueOptions {
  runAt?: Date
  delayMs?: number
  maxAttempts?: number
}

export interface JobQueueDeps {
  store: Store
  newId: IdGenerator
  backoff?: BackoffPolicy
  /** Source of jitter; tests pass a fixed one. */
  random?: () => number
}

const JOBS_COLLECTION = '_jobs'
const FINISHED: JobStatus[] = ['succeeded', 'failed', 'dead']
/** The job type of the queue's own recurring prune, run by every worker that registers it. */
export const JOBS_PRUNE_JOB = 'jobs.prune'
const KEYED_ID_PREFIX = '-key:'
/**
 * A claim is two queries, `status` = …, `type` $in …, sorted by `_id`, with a
 * range on `leaseUntil` (running) or `runAt` (queued): equality, sort, then
 * range, one index each, so the oldest due job is found by walking an index
 * in order instead of sorting every due job. (One query with an $or of the
 * two made the embedded engine sort the whole due backlog on every claim: a
 * claim cost ~30 ms with 100 jobs due and ~100 ms with 10,000, against
 * ~1.5 ms either way now; see docs/webhooks.md, "Throughput".)
 */
const CLAIM_INDEXES: IndexKey[] = [
  { status: 1, type: 1, _id: 1, runAt: 1 },
  { status: 1, type: 1, _id: 1, leaseUntil: 1 }
]
// The claim indexes before they were ESR-ordered; dropped at start where an older release made them.
const SUPERSEDED_INDEXES: IndexKey[] = [{ status: 1, runAt: 1 }, { status: 1, leaseUntil: 1 }]
const sameKey = (a: IndexKey, b: IndexKey): boolean => JSON.stringify(a) === JSON.stringify(b)

export class JobQueue {
  readonly jobs: StoreCollection<Job>
  private readonly store: Store
  private readonly newId: IdGenerator
  private readonly backoff: BackoffPolicy
  private readonly random: () => number
  private readonly dueListeners = new Set<() => void>()

  constructor (deps: JobQueueDeps) {
    this.jobs = deps.store.collection<Job>(JOBS_COLLECTION)
    this.store = deps.store
    this.newId = deps.newId
    this.backoff = deps.backoff ?? DEFAULT_BACKOFF
    this.random = deps.random ?? Math.random
  }

  async init (): Promise<void> {
    for (const key of CLAIM_INDEXES) await this.jobs.createIndex(key)
    await this.jobs.createIndex({ status: 1, finishedAt: 1 })
    for (const index of await this.jobs.listIndexes()) {
      if (SUPERSEDED_INDEXES.some((key) => sameKey(key, index.key))) await this.jobs.dropIndex(index.name)
    }
  }

  private async now (): Promise<Date> {
    return await this.store.extensions.now()
  }

  /**
   * Hears that this process made a job due now (enqueued one, or queued a
   * keyed job again), so a worker here can claim it at once rather than at its
   * next poll. Workers on other nodes still find it by polling. Returns the
   * way to stop listening.
   */
  onDue (listener: () => void): () => void {
    this.dueListeners.add(listener)
    return () => { this.dueListeners.delete(listener) }
  }

  private announceDue (): void {
    for (const listener of this.dueListeners) {
      try { listener() } catch { /* a listener's failure is not the enqueuer's */ }
    }
  }

  async enqueue (type: string, payload: JobPayload = {}, options: EnqueueOptions = {}): Promise<Job> {
    assertJobType(type)
    if (!isPlainObject(payload)) throw commonErrors.jobInvalid({ why: 'Job payload must be a plain object' })
    const maxAttempts = options.maxAttempts ?? DEFAULT_MAX_ATTEMPTS
    if (!Number.isInteger(maxAttempts) || maxAttempts < 1) throw commonErrors.jobInvalid({ why: 'maxAttempts must be a whole number of at least 1' })
    if (options.runAt !== undefined && options.delayMs !== undefined) throw commonErrors.jobInvalid({ why: 'Give runAt or delayMs, not both' })
    if (options.delayMs !== undefined && !(Number.isFinite(options.delayMs) && options.delayMs >= 0)) throw commonErrors.jobInvalid({ why: 'delayMs must be zero or more' })
    if (options.runAt !== undefined && !(options.runAt instanceof Date && Number.isFinite(options.runAt.getTime()))) throw commonErrors.jobInvalid({ why: 'runAt must be a valid Date' })

    const now = await this.now()
    const job: Job = { _id: this.newId(), ...newJob(type, payload, maxAttempts, options.runAt ?? later(now, options.delayMs ?? 0), now) }
    await this.jobs.insertOne(job)
    if (job.runAt <= now) this.announceDue()
    return job
  }

  /**
   * One job per `type` and `key`, run one at a time: makes sure the job runs
   * at least once after this call. A new or finished one is queued; a running
   * one is marked to run again once it ends, so work added while it runs is
   * never missed; a queued one is left as it is, or with `dueNow` made due
   * now if it was waiting (a retry's delay, a DeferJobError's). For work that
   * must not run twice at once (one app's deployments, one webhook
   * delivery), the handler reading what is due.
   */
  async enqueueKeyed (type: string, key: string, payload: JobPayload = {}, options: { dueNow?: boolean } = {}): Promise<void> {
    assertJobType(type)
    if (!isPlainObject(payload)) throw commonErrors.jobInvalid({ why: 'Job payload must be a plain object' })
    const _id = `${KEYED_ID_PREFIX}${type}:${key}`
    for (;;) {
      const now = await this.now()
      try {
        await this.jobs.insertOne({ _id, ...newJob(type, payload, DEFAULT_MAX_ATTEMPTS, now, now), again: false })
        this.announceDue()
        return
      } catch (error) {
        if (!(error instanceof DuplicateKeyError)) throw error
      }
      const current = await this.jobs.findOne({ _id })
      if (current === null) continue
      if (current.status === 'queued') {
        if (options.dueNow !== true || current.runAt <= now) return
        const hurried = await this.jobs.updateOne({ _id, status: 'queued', attempts: current.attempts, runAt: current.runAt }, { $set: { runAt: now, updatedAt: now } })
        if (hurried.matchedCount === 1) {
          this.announceDue()
          return
        }
        continue
      }
      const changed = current.status === 'running'
        ? await this.jobs.updateOne({ _id, status: 'running', attempts: current.attempts }, { $set: { again: true } })
        : await this.jobs.updateOne({ _id, status: current.status, attempts: current.attempts }, { $set: { ...this.nextRun(current, now, { lastError: null, result: null, finishedAt: null }), payload, runAt: now, again: false, updatedAt: now } })
      if (changed.matchedCount === 1) {
        // A running job is queued again only when it ends (rerunIfAsked), which announces it then.
        if (current.status !== 'running') this.announceDue()
        return
      }
    }
  }

  /**
   * `enqueueKeyed` for many keys at once, none of them asked for before (a
   * fresh delivery's id): one insert for all. Should any key exist already
   * (a publish finishing what a crash cut short), each goes through
   * `enqueueKeyed` instead, which is what a second call of it does anyway.
   */
  async enqueueKeyedMany (type: string, jobs: ReadonlyArray<{ key: string, payload: JobPayload }>): Promise<void> {
    assertJobType(type)
    if (jobs.length === 0) return
    for (const { payload } of jobs) if (!isPlainObject(payload)) throw commonErrors.jobInvalid({ why: 'Job payload must be a plain object' })
    const now = await this.now()
    try {
      await this.jobs.insertMany(jobs.map(({ key, payload }) => ({ _id: `${KEYED_ID_PREFIX}${type}:${key}`, ...newJob(type, payload, DEFAULT_MAX_ATTEMPTS, now, now), again: false })))
    } catch (error) {
      if (!(error instanceof DuplicateKeyError)) throw error
      for (const { key, payload } of jobs) await this.enqueueKeyed(type, key, payload)
    }
    this.announceDue()
  }

  async get (id: string): Promise<Job | null> {
    return await this.jobs.findOne({ _id: id })
  }

  /** A recurring job, by interval or cron expression: see `scheduleRecurring` (queue-schedule.ts). */
  async schedule (type: string, every: number | CronSchedule): Promise<Job> {
    assertJobType(type)
    const now = await this.now()
    return await scheduleRecurring(this.jobs, type, every, now, (runAt) => newJob(type, {}, DEFAULT_MAX_ATTEMPTS, runAt, now))
  }

  /** Stops a recurring job a newer version no longer runs (its type retired or renamed), so it does not wait as due forever. */
  async unschedule (type: string): Promise<boolean> {
    return await unscheduleRecurring(this.jobs, type)
  }

  /** What an operator watches (the `/metrics` gauges): jobs due and waiting, jobs running, and how long the oldest due one has waited. */
  async backlog (): Promise<{ due: number, running: number, oldestDueSeconds: number }> {
    const now = await this.now()
    const due = { status: 'queued', runAt: { $lte: now } }
    const [count, running, oldest] = await Promise.all([
      this.jobs.countDocuments(due),
      this.jobs.countDocuments({ status: 'running' }),
      this.jobs.find(due, { sort: { runAt: 1 }, limit: 1, projection: { runAt: 1 } }).toArray()
    ])
    return { due: count, running, oldestDueSeconds: oldest.length === 0 ? 0 : Math.max(0, (now.getTime() - oldest[0].runAt.getTime()) / 1000) }
  }

  /** Deletes jobs that finished more than `olderThanMs` ago; their outcome has been visible that long. */
  async prune (olderThanMs: number): Promise<number> {
    if (!Number.isSafeInteger(olderThanMs) || olderThanMs < 0) throw new RangeError('olderThanMs must be a whole number of milliseconds')
    const cutoff = later(await this.now(), -olderThanMs)
    // However many finished since the last prune: a page per write, and a prune cut short is finished by the next.
    return await this.store.extensions.sweep(JOBS_COLLECTION).deleteMany({ status: { $in: FINISHED }, finishedAt: { $lt: cutoff } })
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
      const now = await this.now()
      const typed = { type: { $in: [...types] } }
      // The candidate is found by a read and taken by a write fenced on the same state: a write transaction
      // only when there is something to take (an empty poll or the usual "no lease expired" costs reads alone).
      const take = async (due: Filter): Promise<Job | null | 'raced'> => {
        // Oldest job first (ids sort by creation); the embedded engine orders by _id in SQL, cheaper than by runAt.
        const [candidate] = await this.jobs.find({ ...due, ...typed }, { sort: { _id: 1 }, limit: 1, projection: { _id: 1 } }).toArray()
        if (candidate === undefined) return null
        const taken = await this.jobs.findOneAndUpdate(
          { _id: candidate._id, ...due, ...typed },
          { $set: { status: 'running', leaseOwner: workerId, leaseUntil: later(now, leaseMs), updatedAt: now }, $inc: { attempts: 1 } },
          { returnDocument: 'after' }
        )
        return taken ?? 'raced'
      }
      // Work whose worker stopped first, then the oldest due job: two queries, each walking its own index in order.
      const job = await take({ status: 'running', leaseUntil: { $lt: now } }) ?? await take({ status: 'queued', runAt: { $lte: now } })
      // Another worker took the candidate between the read and the write: look again.
      if (job === 'raced') continue
      if (job === null || job.attempts <= job.maxAttempts) return job
      // Only a reclaimed lease can overshoot: the last attempt's worker never reported back.
      const lastError = `Lease expired on the final attempt (${job.maxAttempts}); the worker stopped responding`
      await this.settle(job, workerId, now, !isRecurring(job) ? { status: 'dead', lastError, finishedAt: now } : this.nextRun(job, now, { lastError }))
    }
  }

  /**
   * `claim` for up to `limit` jobs at once, in two writes whatever their
   * number: work whose worker stopped first, then the oldest due jobs, each
   * group taken by one all-or-nothing `updateMany` fenced on the state the
   * candidates were read in, so a job another worker took meanwhile is left
   * to it. The write marks what it took with a fresh batch id, read back once.
   */
  async claimMany (workerId: string, types: readonly string[], leaseMs: number, limit: number): Promise<Job[]> {
    assertLeaseMs(leaseMs)
    if (!Number.isSafeInteger(limit) || limit < 1) throw new RangeError('limit must be a whole number of at least 1')
    if (types.length === 0) return []
    const now = await this.now()
    const batch = this.newId()
    const typed = { type: { $in: [...types] } }
    const candidates: string[] = []
    let taken = 0
    for (const due of [{ status: 'running', leaseUntil: { $lt: now } }, { status: 'queued', runAt: { $lte: now } }]) {
      if (taken >= limit) break
      const ids = (await this.jobs.find({ ...due, ...typed }, { sort: { _id: 1 }, limit: limit - taken, projection: { _id: 1 } }).toArray()).map((job) => job._id)
      if (ids.length === 0) continue
      candidates.push(...ids)
      taken += (await this.jobs.updateMany(
        { _id: { $in: ids }, ...due, ...typed },
        { $set: { status: 'running', leaseOwner: workerId, leaseUntil: later(now, leaseMs), updatedAt: now, claimBatch: batch }, $inc: { attempts: 1 } }
      )).modifiedCount
    }
    if (taken === 0) return []
    // Read back by primary key: only the candidates can carry this batch's id.
    const claimed = await this.jobs.find({ _id: { $in: candidates }, claimBatch: batch, leaseOwner: workerId, status: 'running' }, { sort: { _id: 1 } }).toArray()
    const live: Job[] = []
    for (const job of claimed) {
      if (job.attempts <= job.maxAttempts) { live.push(job); continue }
      const lastError = `Lease expired on the final attempt (${job.maxAttempts}); the worker stopped responding`
      await this.settle(job, workerId, now, !isRecurring(job) ? { status: 'dead', lastError, finishedAt: now } : this.nextRun(job, now, { lastError }))
    }
    return live
  }

  /**
   * `complete` for many jobs this worker holds, with no result: one write for
   * every plain job (keyed and recurring ones, which are queued again rather
   * than finished, go through `complete`). Each job is fenced on its own
   * claim as in `complete`; the answer counts the jobs finished, the rest
   * having had their lease taken over.
   */
  async completeMany (jobs: readonly Job[], workerId: string): Promise<number> {
    const plain = jobs.filter((job) => job.again === undefined && !isRecurring(job))
    let finished = 0
    for (const job of jobs) if (!plain.includes(job) && await this.complete(job, workerId) !== null) finished++
    if (plain.length === 0) return finished
    const now = await this.now()
    const outcome = await this.jobs.updateMany(
      { $or: plain.map((job) => ({ _id: job._id, attempts: job.attempts })), status: 'running', leaseOwner: workerId },
      { $set: { status: 'succeeded', result: null, lastError: null, finishedAt: now, leaseUntil: null, updatedAt: now } }
    )
    return finished + outcome.modifiedCount
  }

  /** Pushes the lease forward; false when the caller no longer owns the job. */
  async extendLease (job: Job, workerId: string, leaseMs: number): Promise<boolean> {
    assertLeaseMs(leaseMs)
    const now = await this.now()
    const outcome = await this.jobs.updateOne(this.leaseFilter(job, workerId), {
      $set: { leaseUntil: later(now, leaseMs), updatedAt: now }
    })
    return outcome.matchedCount === 1
  }

  /** The finished job, or null when the caller's lease was taken over (its result is discarded). */
  async complete (job: Job, workerId: string, result?: unknown): Promise<Job | null> {
    const now = await this.now()
    const outcome = { result: result ?? null }
    const settled = await this.settleUnlessAsked(job, workerId, now, !isRecurring(job)
      ? { status: 'succeeded', ...outcome, finishedAt: now }
      : this.nextRun(job, now, { ...outcome, lastError: null }))
    return settled ?? await this.rerunIfAsked(job, workerId, now, { result: result ?? null, lastError: null })
  }

  /**
   * `settle`, for a job not asked to run again: one write in the usual case.
   * A keyed job asked for again while it ran (or one whose lease was lost)
   * is left as it is, null, for `rerunIfAsked` to tell which.
   */
  private async settleUnlessAsked (job: Job, workerId: string, now: Date, changes: Partial<Job>): Promise<Job | null> {
    if (job.again === undefined) return await this.settle(job, workerId, now, changes)
    return await this.jobs.findOneAndUpdate(
      { ...this.leaseFilter(job, workerId), again: { $ne: true } },
      { $set: { ...changes, leaseUntil: null, updatedAt: now } },
      { returnDocument: 'after' }
    )
  }

  /**
   * Records a failed attempt: back to `queued` after a growing delay, `dead`
   * once attempts are used up, `failed` at once for a PermanentJobError,
   * `queued` after its delay and with its attempt given back for a DeferJobError.
   * Null when the caller's lease was taken over.
   */
  async fail (job: Job, workerId: string, error: unknown): Promise<Job | null> {
    const now = await this.now()
    const lastError = errorMessage(error)
    // A keyed job asked for again while it ran goes back due now, not after its delay: the run may not have read what it was asked for.
    if (error instanceof DeferJobError) {
      const deferred = { status: 'queued' as const, lastError, runAt: later(now, error.delayMs), leaseOwner: null, maxAttempts: job.maxAttempts + 1 }
      const settled = await this.settleUnlessAsked(job, workerId, now, deferred)
      // Deferred to now (a run that gave its slot up with more to do): an idle worker here takes it at once, not a poll later.
      if (settled !== null && error.delayMs <= 0) this.announceDue()
      return settled ?? await this.rerunIfAsked(job, workerId, now, { lastError })
    }
    const final = error instanceof PermanentJobError || job.attempts >= job.maxAttempts
    let changes: Partial<Job>
    // A recurring job never ends: past its last attempt it waits for its next run.
    if (final && isRecurring(job)) changes = this.nextRun(job, now, { lastError })
    else if (error instanceof PermanentJobError) changes = { status: 'failed', lastError, finishedAt: now }
    else if (job.attempts >= job.maxAttempts) changes = { status: 'dead', lastError, finishedAt: now }
    else changes = { status: 'queued', lastError, runAt: later(now, retryDelayMs(job.attempts, this.backoff, this.random)), leaseOwner: null }
    return await this.settleUnlessAsked(job, workerId, now, changes) ?? await this.rerunIfAsked(job, workerId, now, { lastError })
  }

  /** A keyed job asked for again while it ran goes back to the queue at once, with a fresh budget; null when it was not. */
  private async rerunIfAsked (job: Job, workerId: string, now: Date, outcome: Partial<Job>): Promise<Job | null> {
    if (job.again === undefined) return null
    const rerun = await this.jobs.findOneAndUpdate(
      { ...this.leaseFilter(job, workerId), again: true },
      { $set: { ...this.nextRun(job, now, outcome), runAt: now, again: false, leaseUntil: null, updatedAt: now } },
      { returnDocument: 'after' }
    )
    if (rerun !== null) this.announceDue()
    return rerun
  }

  /** `attempts` keeps counting, so it still fences every claim; each run gets a fresh budget on top of it. */
  private nextRun (job: Job, now: Date, outcome: Partial<Job>): Partial<Job> {
    return { ...outcome, status: 'queued', maxAttempts: job.attempts + DEFAULT_MAX_ATTEMPTS, runAt: job.cron !== undefined ? nextCronRun(job.cron, now) : later(now, job.everyMs ?? 0), leaseOwner: null }
  }

  /** `attempts` fences the claim itself, so a worker that reclaims its own expired job cannot be confused with its earlier run. */
  private leaseFilter (job: Job, workerId: string): Filter {
    return { _id: job._id, status: 'running', leaseOwner: workerId, attempts: job.attempts }
  }

  private async settle (job: Job, workerId: string, now: Date, changes: Partial<Job>): Promise<Job | null> {
    return await this.jobs.findOneAndUpdate(
      this.leaseFilter(job, workerId),
      { $set: { ...changes, leaseUntil: null, updatedAt: now } },
      { returnDocument: 'after' }
    )
  }
}
