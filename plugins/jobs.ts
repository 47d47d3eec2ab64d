import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { JOBS_PRUNE_JOB, JobQueue } from '../services/jobs.js'
import { JobWorker, type JobHandler } from '../services/job-worker.js'
import { newId } from '../services/ids.js'

declare module 'fastify' {
  interface FastifyInstance {
    jobs: JobQueue
    /** Families register the job types they run before the app is ready. */
    registerJobHandler: (type: string, handler: JobHandler) => void
  }
}

/** Finished jobs stay visible this long, then the daily prune deletes them. */
export const FINISHED_JOB_RETENTION_MS = 7 * 24 * 60 * 60_000
const PRUNE_EVERY_MS = 24 * 60 * 60_000

/**
 * The one durable job queue. Every API node runs a worker for the registered
 * types, so work enqueued on one node may run on any other.
 */
async function jobsPlugin (app: FastifyInstance): Promise<void> {
  const queue = new JobQueue({ store: app.store, newId })
  await queue.init()
  const handlers: Record<string, JobHandler> = {
    [JOBS_PRUNE_JOB]: async () => ({ pruned: await queue.prune(FINISHED_JOB_RETENTION_MS) })
  }
  let worker: JobWorker | null = null
  let started = false

  app.decorate('jobs', queue)
  app.decorate('registerJobHandler', (type: string, handler: JobHandler) => {
    if (started) throw new Error(`job handler "${type}" registered after the app started`)
    if (handlers[type] !== undefined) throw new Error(`job handler "${type}" is registered twice`)
    handlers[type] = handler
  })

  app.addHook('onReady', async () => {
    started = true
    await queue.schedule(JOBS_PRUNE_JOB, PRUNE_EVERY_MS)
    worker = new JobWorker(queue, handlers, {
      concurrency: 2,
      onError: (error, job) => app.log.error({ err: error, jobId: job?._id }, 'job worker error')
    })
    worker.start()
  })
  // preClose runs before the store's onClose, so jobs in flight finish against an open store.
  app.addHook('preClose', async () => { await worker?.stop() })
}

export default fp(jobsPlugin, { name: 'plinth-jobs', fastify: '5.x', dependencies: ['plinth-store'] })
