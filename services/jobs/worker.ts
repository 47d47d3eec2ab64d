import { randomBytes } from 'node:crypto'
import { hostname } from 'node:os'
import type { JobQueue } from './queue.js'
import { assertLeaseMs, JobLeaseLostError, type Job, type JobPayload } from './job.js'

/** The worker loop that runs the durable queue's jobs (services/jobs/queue.ts) on one node. */

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
 * while a slot is free, as many jobs as there are free slots in one claim, so
 * an idle worker costs one claim per poll whatever its concurrency. The lease
 * is renewed every third of its length while a handler runs. stop() stops claiming and waits for the jobs in flight.
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
  /** Set by poke(): a claim that came back empty may have raced the enqueue it was told of, so the loop claims again before sleeping. */
  private poked = false
  private stopListening: (() => void) | null = null

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
    this.stopListening = this.queue.onDue(() => { this.poke() })
    this.loop = this.claimLoop()
  }

  async stop (): Promise<void> {
    this.running = false
    this.stopListening?.()
    this.stopListening = null
    this.poke()
    await this.loop
    this.loop = null
  }

  /** Ends an idle wait now; the queue calls it when this process makes a job due (`JobQueue.onDue`). */
  poke (): void {
    this.poked = true
    for (const wake of this.sleepers) wake()
  }

  private async claimLoop (): Promise<void> {
    while (this.running) {
      if (this.inFlight.size >= this.concurrency) {
        await Promise.race(this.inFlight)
        continue
      }
      let jobs: Job[] = []
      this.poked = false
      // One free slot: one findOneAndUpdate. More: one batch claim fills them all, so a backlog met by an idle
      // worker costs two writes, not one claim round per slot.
      const free = this.concurrency - this.inFlight.size
      try {
        if (free === 1) {
          const job = await this.queue.claim(this.workerId, this.types, this.leaseMs)
          if (job !== null) jobs = [job]
        } else {
          jobs = await this.queue.claimMany(this.workerId, this.types, this.leaseMs, free)
        }
      } catch (error) {
        this.reportError(error)
      }
      if (jobs.length === 0) {
        if (this.poked) continue
        // Jitter keeps idle workers on many nodes from polling in lockstep.
        await this.sleep(this.pollMs * (0.75 + Math.random() * 0.5))
        continue
      }
      for (const job of jobs) {
        const run: Promise<void> = this.runJob(job).finally(() => { this.inFlight.delete(run) })
        this.inFlight.add(run)
      }
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
