import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { JOBS_PRUNE_JOB, JobQueue } from '../services/jobs/queue.js'
import { JobWorker, type JobHandler } from '../services/jobs/worker.js'
import { newId } from '../services/platform/ids.js'

/**
 * Which of the node's workers runs a job type: `long` for work that may run
 * for minutes (builds), `short` for the rest (scaling, purges, certificate and
 * DNS checks, usage), so no short job ever waits behind a build.
 */
export type JobLane = 'short' | 'long'

declare module 'fastify' {
  interface FastifyInstance {
    jobs: JobQueue
    /** Families register the job types they run before the app is ready; `lane` defaults to `short`. */
    registerJobHandler: (type: string, handler: JobHandler, options?: { lane?: JobLane }) => void
  }
}

/** Finished jobs stay visible this long, then the daily prune deletes them. */
export const FINISHED_JOB_RETENTION_MS = 7 * 24 * 60 * 60_000
const PRUNE_EVERY_MS = 24 * 60 * 60_000

/**
 * The one durable job queue. Every API node runs a worker per lane for the
 * registered types, each with its own slots (JOB_WORKER_SLOTS,
 * JOB_WORKER_LONG_SLOTS), so work enqueued on one node may run on any other
 * and long jobs can fill only their own lane's slots.
 */
async function jobsPlugin (app: FastifyInstance): Promise<void> {
  const queue = new JobQueue({ store: app.store, newId })
  await queue.init()
  const lanes: Record<JobLane, Record<string, JobHandler>> = {
    short: { [JOBS_PRUNE_JOB]: async () => ({ pruned: await queue.prune(FINISHED_JOB_RETENTION_MS) }) },
    long: {}
  }
  const slots: Record<JobLane, number> = { short: app.config.jobs.slots, long: app.config.jobs.longSlots }
  let workers: JobWorker[] = []
  let started = false

  app.decorate('jobs', queue)
  app.decorate('registerJobHandler', (type: string, handler: JobHandler, options: { lane?: JobLane } = {}) => {
    if (started) throw new Error(`job handler "${type}" registered after the app started`)
    if (lanes.short[type] !== undefined || lanes.long[type] !== undefined) throw new Error(`job handler "${type}" is registered twice`)
    lanes[options.lane ?? 'short'][type] = handler
  })

  app.addHook('onReady', async () => {
    started = true
    await queue.schedule(JOBS_PRUNE_JOB, PRUNE_EVERY_MS)
    workers = (['short', 'long'] as const).filter((lane) => Object.keys(lanes[lane]).length > 0).map((lane) => new JobWorker(queue, lanes[lane], {
      concurrency: slots[lane],
      onError: (error, job) => app.log.error({ err: error, jobId: job?._id, lane }, 'job worker error')
    }))
    for (const worker of workers) worker.start()
  })
  // preClose runs before the store's onClose, so jobs in flight finish against an open store.
  app.addHook('preClose', async () => { await Promise.all(workers.map(async (worker) => { await worker.stop() })) })
}

export default fp(jobsPlugin, { name: 'plinth-jobs', fastify: '5.x', dependencies: ['plinth-config', 'plinth-store'] })
