import t from 'tap'
import { setTimeout as delay } from 'node:timers/promises'
import { ManualClock, systemClock } from '../../../services/platform/clock.js'
import { JobQueue } from '../../../services/jobs/queue.js'
import { DeferJobError, type Job } from '../../../services/jobs/job.js'
import { JobWorker } from '../../../services/jobs/worker.js'
import { openTestJobQueue } from '../../helper.js'

/**
 * Work enqueued in a worker's own process is claimed at once, not at the
 * worker's next poll: the workers below poll once a minute, so each test
 * would outlast its wait without the wake-up.
 */
const IDLE_POLL_MS = 60_000

async function waitFor (what: string, check: () => Promise<boolean> | boolean): Promise<void> {
  const deadline = Date.now() + 10_000
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await delay(20)
  }
}

/** Counts the claims that found nothing, so a test knows the worker has gone to sleep. */
function countEmptyClaims (queue: JobQueue, onEmpty: () => Promise<void> = async () => {}): { empty: number } {
  const counter = { empty: 0 }
  const claim = queue.claim.bind(queue)
  queue.claim = async (...args) => {
    const job = await claim(...args)
    if (job === null) {
      counter.empty++
      await onEmpty()
    }
    return job
  }
  return counter
}

const status = async (queue: JobQueue, id: string): Promise<string | undefined> => (await queue.get(id))?.status

t.test('the queue announces what it makes due now, and only that', async (t) => {
  const clock = new ManualClock()
  const { queue } = await openTestJobQueue(t, clock)
  let heard = 0
  const stop = queue.onDue(() => { heard++ })
  queue.onDue(() => { throw new Error('a listener that throws') })

  await queue.enqueue('x', {})
  t.equal(heard, 1, 'a job due at once')
  await queue.enqueue('x', {}, { delayMs: 1_000 })
  await queue.enqueue('x', {}, { runAt: new Date(clock.nowMs() + 1) })
  t.equal(heard, 1, 'not a job due later')

  await queue.enqueueKeyed('k', 'a')
  t.equal(heard, 2, 'a new keyed job')
  await queue.enqueueKeyed('k', 'a')
  t.equal(heard, 2, 'not a keyed job already queued')
  const running = await queue.claim('w', ['k'], 1_000) as Job
  await queue.enqueueKeyed('k', 'a')
  t.equal(heard, 2, 'not while it runs: it is queued again when it ends')
  t.equal((await queue.complete(running, 'w'))?.status, 'queued')
  t.equal(heard, 3, 'a keyed job queued again as it ends')
  const again = await queue.claim('w', ['k'], 1_000) as Job
  t.equal((await queue.complete(again, 'w'))?.status, 'succeeded')
  t.equal(heard, 3, 'not a job that ends for good')
  await queue.enqueueKeyed('k', 'a')
  t.equal(heard, 4, 'a finished keyed job queued again')

  stop()
  await queue.enqueue('x', {})
  t.equal(heard, 4, 'a listener that stopped hears nothing')
})

t.test('an idle worker claims a job enqueued in its process at once', async (t) => {
  const { queue } = await openTestJobQueue(t, systemClock)
  const claims = countEmptyClaims(queue)
  const worker = new JobWorker(queue, { x: async () => 'done' }, { pollMs: IDLE_POLL_MS, onError: (error) => { t.fail(String(error)) } })
  worker.start()
  t.teardown(async () => { await worker.stop() })
  await waitFor('the worker to find nothing and sleep', () => claims.empty > 0)
  const job = await queue.enqueue('x', {})
  await waitFor('the job to run', async () => await status(queue, job._id) === 'succeeded')
  t.pass('it ran without waiting for the next poll')
})

t.test('a run that defers to now (its slot given up with more to do) runs again at once, not a poll later', async (t) => {
  const { queue } = await openTestJobQueue(t, systemClock)
  const claims = countEmptyClaims(queue)
  let runs = 0
  const worker = new JobWorker(queue, {
    batch: async () => {
      runs++
      // Give the slot up only once the worker has looked for other work, found none and gone to sleep.
      const seen = claims.empty
      await waitFor('the worker to sleep', () => claims.empty > seen)
      if (runs < 3) throw new DeferJobError('more is due', 0)
      return 'done'
    }
  }, { pollMs: IDLE_POLL_MS, concurrency: 2, onError: (error) => { t.fail(String(error)) } })
  worker.start()
  t.teardown(async () => { await worker.stop() })
  await queue.enqueueKeyed('batch', 'webhook-1')
  await waitFor('the third run', async () => await status(queue, '-key:batch:webhook-1') === 'succeeded')
  t.equal(runs, 3, 'deferred twice, then done, each run taken when the last gave its slot up')
})

t.test('a keyed job asked for again while it ran runs again at once', async (t) => {
  const { queue } = await openTestJobQueue(t, systemClock)
  let runs = 0
  const worker = new JobWorker(queue, {
    k: async () => {
      runs++
      if (runs === 1) await queue.enqueueKeyed('k', 'a')
    }
  }, { pollMs: IDLE_POLL_MS, onError: (error) => { t.fail(String(error)) } })
  worker.start()
  t.teardown(async () => { await worker.stop() })
  await queue.enqueueKeyed('k', 'a')
  await waitFor('the second run', () => runs === 2)
  await waitFor('the job to finish', async () => await status(queue, '-key:k:a') === 'succeeded')
  t.equal(runs, 2)
})

t.test('a job enqueued while the claim was in flight is not left for the next poll', async (t) => {
  const { queue } = await openTestJobQueue(t, systemClock)
  let enqueued: Job | null = null
  // The enqueue lands after the claim looked and found nothing, before the worker could go to sleep.
  countEmptyClaims(queue, async () => { if (enqueued === null) enqueued = await queue.enqueue('x', {}) })
  const worker = new JobWorker(queue, { x: async () => 'done' }, { pollMs: IDLE_POLL_MS, onError: (error) => { t.fail(String(error)) } })
  worker.start()
  t.teardown(async () => { await worker.stop() })
  await waitFor('the job to run', async () => enqueued !== null && await status(queue, enqueued._id) === 'succeeded')
  t.pass('the worker claimed again instead of sleeping')
})
