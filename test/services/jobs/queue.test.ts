import t from 'tap'
import { setTimeout as delay } from 'node:timers/promises'
import { ManualClock, systemClock } from '../../../services/platform/clock.js'
import { DeferJobError, JobLeaseLostError, PermanentJobError, retryDelayMs, type Job } from '../../../services/jobs/job.js'
import { JobWorker } from '../../../services/jobs/worker.js'
import type { Store } from '../../../services/store/types.js'
import { openTestJobQueue } from '../../helper.js'

/** How many jobs are in each state, read straight from the Store. */
async function statusCounts (store: Store, filter: Record<string, unknown> = {}): Promise<Record<string, number>> {
  const counts: Record<string, number> = { queued: 0, running: 0, succeeded: 0, failed: 0, dead: 0 }
  for (const job of await store.collection('_jobs').find(filter).toArray()) counts[job.status as string]++
  return counts
}

async function waitFor (what: string, check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await delay(20)
  }
}

t.test('enqueue → claim → complete, with visible status', async (t) => {
  const clock = new ManualClock()
  const { store, queue } = await openTestJobQueue(t, clock)
  const job = await queue.enqueue('email.send', { to: 'a@example.com' })
  t.match(job, { type: 'email.send', payload: { to: 'a@example.com' }, status: 'queued', attempts: 0, maxAttempts: 5, leaseOwner: null, finishedAt: null })
  t.same(await queue.get(job._id), job, 'stored as returned')
  t.same(await statusCounts(store), { queued: 1, running: 0, succeeded: 0, failed: 0, dead: 0 })

  t.equal(await queue.claim('w1', ['other.type'], 1_000), null, 'only the asked types are claimed')
  const claimed = await queue.claim('w1', ['email.send'], 1_000)
  t.match(claimed, { _id: job._id, status: 'running', attempts: 1, leaseOwner: 'w1' })
  t.same(claimed?.leaseUntil, new Date(clock.nowMs() + 1_000), 'lease runs leaseMs from now')
  t.equal(await queue.claim('w2', ['email.send'], 1_000), null, 'a running job is not claimed twice')
  t.match(await queue.get(job._id), { status: 'running', leaseOwner: 'w1' }, 'visible while running')

  clock.advance(250)
  const done = await queue.complete(claimed!, 'w1', { messageId: 'm-1' })
  t.match(done, { status: 'succeeded', result: { messageId: 'm-1' }, leaseUntil: null, leaseOwner: 'w1', attempts: 1 })
  t.same(done?.finishedAt, clock.now())
  t.equal(await queue.complete(claimed!, 'w1', 'again'), null, 'completing twice is refused')
  t.equal(await queue.claim('w1', ['email.send'], 1_000), null, 'a finished job is never claimed again')
  t.same(await statusCounts(store, { type: 'email.send' }), { queued: 0, running: 0, succeeded: 1, failed: 0, dead: 0 })
})

t.test('runAt and delayMs hold a job back; the oldest due job comes out first', async (t) => {
  const clock = new ManualClock()
  const { queue } = await openTestJobQueue(t, clock)
  const later = await queue.enqueue('x', {}, { delayMs: 5_000 })
  const atTime = await queue.enqueue('x', {}, { runAt: new Date(clock.nowMs() + 2_000) })
  t.equal(await queue.claim('w', ['x'], 1_000), null, 'nothing due yet')
  clock.advance(2_000)
  const first = await queue.claim('w', ['x'], 1_000)
  t.equal(first?._id, atTime._id, 'due exactly at runAt')
  t.equal(await queue.claim('w', ['x'], 1_000), null)
  await queue.complete(first!, 'w')
  clock.advance(3_000)
  t.equal((await queue.claim('w', ['x'], 1_000))?._id, later._id)

  const enqueuedFirst = await queue.enqueue('y', {})
  clock.advance(1)
  const enqueuedSecond = await queue.enqueue('y', {}, { runAt: new Date(clock.nowMs() - 10) })
  t.equal((await queue.claim('w', ['y'], 1_000))?._id, enqueuedFirst._id, 'among due jobs, the oldest comes first')
  t.equal((await queue.claim('w', ['y'], 1_000))?._id, enqueuedSecond._id)
})

t.test('enqueue refuses bad input with a coded error', async (t) => {
  const { store, queue } = await openTestJobQueue(t)
  const cases: Array<[string, () => Promise<unknown>]> = [
    ['empty type', async () => await queue.enqueue('', {})],
    ['type with spaces', async () => await queue.enqueue('send mail', {})],
    ['array payload', async () => await queue.enqueue('x', [] as unknown as Record<string, unknown>)],
    ['null payload', async () => await queue.enqueue('x', null as unknown as Record<string, unknown>)],
    ['maxAttempts 0', async () => await queue.enqueue('x', {}, { maxAttempts: 0 })],
    ['fractional maxAttempts', async () => await queue.enqueue('x', {}, { maxAttempts: 1.5 })],
    ['runAt and delayMs', async () => await queue.enqueue('x', {}, { runAt: new Date(), delayMs: 1 })],
    ['negative delay', async () => await queue.enqueue('x', {}, { delayMs: -1 })],
    ['invalid date', async () => await queue.enqueue('x', {}, { runAt: new Date(Number.NaN) })]
  ]
  for (const [name, attempt] of cases) await t.rejects(attempt, { code: 'APP_JOB_INVALID', status: 400 }, name)
  t.same(await statusCounts(store), { queued: 0, running: 0, succeeded: 0, failed: 0, dead: 0 }, 'nothing stored')
  await t.rejects(queue.claim('w', ['x'], 0), RangeError, 'a zero lease is refused')
})

t.test('retryDelayMs doubles, is capped, and jitters within the upper half of each step', async (t) => {
  const policy = { baseMs: 1_000, maxMs: 10_000 }
  t.same([1, 2, 3, 4, 5, 6].map((n) => retryDelayMs(n, policy, () => 1)), [1_000, 2_000, 4_000, 8_000, 10_000, 10_000])
  t.same([1, 2, 3].map((n) => retryDelayMs(n, policy, () => 0)), [500, 1_000, 2_000])
  t.equal(retryDelayMs(500, policy, () => 1), 10_000, 'huge attempt counts stay at the cap')
  for (let n = 1; n <= 3; n++) {
    t.ok(retryDelayMs(n + 1, policy, () => 0) >= retryDelayMs(n, policy, () => 1), `below the cap, retry ${n + 1} never comes sooner than retry ${n}`)
  }
})

t.test('failures retry with growing backoff, then the job is dead', async (t) => {
  const clock = new ManualClock()
  const { queue } = await openTestJobQueue(t, clock, { backoff: { baseMs: 1_000, maxMs: 60_000 }, random: () => 0.5 })
  await queue.enqueue('flaky', { n: 1 }, { maxAttempts: 4 })
  const delays: number[] = []
  for (let attempt = 1; attempt <= 3; attempt++) {
    const claimed = await queue.claim('w', ['flaky'], 1_000)
    t.equal(claimed?.attempts, attempt)
    const failed = await queue.fail(claimed!, 'w', new Error(`boom ${attempt}`))
    t.match(failed, { status: 'queued', leaseOwner: null, leaseUntil: null, lastError: `Error: boom ${attempt}`, finishedAt: null })
    const wait = failed!.runAt.getTime() - clock.nowMs()
    delays.push(wait)
    clock.advance(wait - 1)
    t.equal(await queue.claim('w', ['flaky'], 1_000), null, `not retried before its backoff (attempt ${attempt})`)
    clock.advance(1)
  }
  t.same(delays, [750, 1_500, 3_000], 'each delay doubles (equal jitter at 0.5)')
  const last = await queue.claim('w', ['flaky'], 1_000)
  t.equal(last?.attempts, 4)
  const dead = await queue.fail(last!, 'w', 'still broken')
  t.match(dead, { status: 'dead', attempts: 4, lastError: 'still broken', leaseUntil: null })
  t.same(dead?.finishedAt, clock.now())
  clock.advance(3_600_000)
  t.equal(await queue.claim('w', ['flaky'], 1_000), null, 'a dead job is never claimed again')
})

t.test('a PermanentJobError fails the job at once', async (t) => {
  const { queue } = await openTestJobQueue(t)
  await queue.enqueue('x', {})
  const claimed = await queue.claim('w', ['x'], 1_000)
  const failed = await queue.fail(claimed!, 'w', new PermanentJobError('repository not found'))
  t.match(failed, { status: 'failed', attempts: 1, lastError: 'PermanentJobError: repository not found' })
  t.ok(failed?.finishedAt instanceof Date)
})

t.test('a DeferJobError puts the job back for later without spending an attempt, however often', async (t) => {
  const clock = new ManualClock()
  const { queue } = await openTestJobQueue(t, clock)
  await queue.enqueue('build', {}, { maxAttempts: 2 })
  for (let round = 1; round <= 3; round++) {
    const claimed = await queue.claim('w', ['build'], 1_000)
    const deferred = await queue.fail(claimed!, 'w', new DeferJobError('the slots are held', 2_000))
    t.match(deferred, { status: 'queued', attempts: round, maxAttempts: round + 2, lastError: 'DeferJobError: the slots are held', leaseOwner: null, finishedAt: null })
    t.same(deferred?.runAt, new Date(clock.nowMs() + 2_000), 'due after its delay')
    clock.advance(1_999)
    t.equal(await queue.claim('w', ['build'], 1_000), null, 'not before')
    clock.advance(1)
  }
  const last = await queue.claim('w', ['build'], 1_000)
  t.match(await queue.fail(last!, 'w', new Error('boom')), { status: 'queued', attempts: 4, maxAttempts: 5 }, 'a real failure still has both of its attempts')

  await queue.enqueueKeyed('deploy', 'app1')
  const keyed = await queue.claim('w', ['deploy'], 1_000)
  await queue.enqueueKeyed('deploy', 'app1')
  t.match(await queue.fail(keyed!, 'w', new DeferJobError('later', 500)), { status: 'queued', again: false, runAt: new Date(clock.nowMs() + 500) }, 'a keyed job asked for again while deferring runs at its deferred time, once')
})

t.test('an expired lease is reclaimed and the old owner is fenced off', async (t) => {
  const clock = new ManualClock()
  const { queue } = await openTestJobQueue(t, clock)
  const job = await queue.enqueue('build', {})
  const byA = await queue.claim('A', ['build'], 1_000)
  clock.advance(1_000)
  t.equal(await queue.claim('B', ['build'], 1_000), null, 'not reclaimed while the lease still holds')
  clock.advance(1)
  const byB = await queue.claim('B', ['build'], 1_000)
  t.match(byB, { _id: job._id, status: 'running', leaseOwner: 'B', attempts: 2 })

  t.equal(await queue.complete(byA!, 'A', 'from A'), null, 'the old owner cannot complete')
  t.equal(await queue.fail(byA!, 'A', new Error('from A')), null, 'nor fail')
  t.equal(await queue.extendLease(byA!, 'A', 1_000), false, 'nor extend')
  t.equal(await queue.complete(byA!, 'B', 'stale copy'), null, 'a stale job copy is refused even under the new owner id')
  t.match(await queue.get(job._id), { status: 'running', leaseOwner: 'B', lastError: null }, 'untouched by A')

  t.match(await queue.complete(byB!, 'B', 'from B'), { status: 'succeeded', result: 'from B', leaseOwner: 'B' })
})

t.test('a claim takes work whose worker stopped before younger due jobs, then the oldest due job; each by its own index', async (t) => {
  const clock = new ManualClock()
  const { queue } = await openTestJobQueue(t, clock)
  const stalled = await queue.enqueue('build', {})
  await queue.claim('A', ['build'], 1_000)
  for (let i = 0; i < 3; i++) await queue.enqueue('build', { i })
  clock.advance(1_001)
  t.equal((await queue.claim('B', ['build', 'other'], 1_000))?._id, stalled._id, 'the stalled job first')
  t.same((await queue.claim('B', ['build', 'other'], 1_000))?.payload, { i: 0 }, 'then the oldest queued one')
  const claims = queue.jobs.findOneAndUpdate.bind(queue.jobs)
  const filters: unknown[] = []
  queue.jobs.findOneAndUpdate = async (filter, update, options) => { filters.push(filter); return await claims(filter, update, options) }
  await queue.claim('B', ['build'], 1_000)
  t.notOk(filters.some((filter) => JSON.stringify(filter).includes('$or')), 'no $or: one with it made the embedded engine sort every due job on each claim')
})

t.test('a worker that reclaims its own expired job cannot settle it with the earlier claim', async (t) => {
  const clock = new ManualClock()
  const { queue } = await openTestJobQueue(t, clock)
  await queue.enqueue('x', {})
  const first = await queue.claim('same', ['x'], 1_000)
  clock.advance(1_001)
  const second = await queue.claim('same', ['x'], 1_000)
  t.equal(second?.attempts, 2)
  t.equal(await queue.complete(first!, 'same', 'old'), null)
  t.match(await queue.complete(second!, 'same', 'new'), { status: 'succeeded', result: 'new' })
})

t.test('extendLease keeps other workers off', async (t) => {
  const clock = new ManualClock()
  const { queue } = await openTestJobQueue(t, clock)
  await queue.enqueue('x', {})
  const claimed = await queue.claim('A', ['x'], 1_000)
  clock.advance(800)
  t.equal(await queue.extendLease(claimed!, 'A', 1_000), true)
  clock.advance(800)
  t.equal(await queue.claim('B', ['x'], 1_000), null, 'still leased at 1.6 s')
  clock.advance(201)
  t.equal((await queue.claim('B', ['x'], 1_000))?.leaseOwner, 'B', 'reclaimable once the extended lease lapses')
})

t.test('a lease lost on the final attempt makes the job dead, not run again', async (t) => {
  const clock = new ManualClock()
  const { queue } = await openTestJobQueue(t, clock)
  const job = await queue.enqueue('x', {}, { maxAttempts: 1 })
  const other = await queue.enqueue('x', {}, { runAt: new Date(clock.nowMs() + 1) })
  await queue.claim('A', ['x'], 1_000)
  clock.advance(5_000)
  t.equal((await queue.claim('B', ['x'], 1_000))?._id, other._id, 'skips the exhausted job and takes the next')
  t.match(await queue.get(job._id), { status: 'dead', attempts: 2, lastError: /final attempt/ })
})

t.test('JobWorker: many workers in one process run each job exactly once', async (t) => {
  const { store, queue } = await openTestJobQueue(t, systemClock)
  const runs = store.collection('runs')
  const handled = new Map<string, number>()
  const record = async (payload: Record<string, unknown>, context: { job: Job, workerId: string }): Promise<unknown> => {
    handled.set(context.job._id, (handled.get(context.job._id) ?? 0) + 1)
    await runs.insertOne({ _id: context.job._id, workerId: context.workerId })
    if (Math.random() < 0.3) await delay(1)
    return { n: payload.n }
  }
  const workers = Array.from({ length: 5 }, (_, i) =>
    new JobWorker(queue, { record }, { workerId: `w${i}`, leaseMs: 2_000, pollMs: 10, concurrency: 4, onError: (error) => { t.fail(String(error)) } }))
  for (const worker of workers) worker.start()
  const total = 300
  for (let n = 0; n < total; n++) await queue.enqueue('record', { n })
  await waitFor('all jobs to succeed', async () => (await statusCounts(store)).succeeded === total)
  await Promise.all(workers.map(async (worker) => { await worker.stop() }))

  t.equal(handled.size, total, 'every job ran')
  t.same([...new Set(handled.values())], [1], 'no job ran twice')
  t.equal(await runs.countDocuments(), total)
  t.equal(await queue.jobs.countDocuments({ attempts: { $ne: 1 } }), 0, 'every job took exactly one attempt')
  const byWorker = new Set((await runs.find().toArray()).map((run) => run.workerId))
  t.ok(byWorker.size > 1, `the work was shared (${byWorker.size} workers took part)`)
  const [sample] = await store.collection<Job>('_jobs').find({}, { limit: 1 }).toArray()
  t.same(sample.result, { n: sample.payload.n }, 'the handler result is stored')
})

t.test('JobWorker: free slots are filled by one batch claim; one free slot by a single claim', async (t) => {
  const { queue } = await openTestJobQueue(t, systemClock)
  const calls: string[] = []
  const claim = queue.claim.bind(queue)
  const claimMany = queue.claimMany.bind(queue)
  queue.claim = async (...args) => { calls.push('claim'); return await claim(...args) }
  queue.claimMany = async (...args) => { calls.push(`claimMany(${args[3]})`); return await claimMany(...args) }
  const release: Array<() => void> = []
  const started: string[] = []
  const worker = new JobWorker(queue, {
    hold: async (_payload, context) => {
      started.push(context.job._id)
      await new Promise<void>((resolve) => { release.push(resolve) })
    }
  }, { pollMs: 10_000, leaseMs: 5_000, concurrency: 4 })
  const backlog = []
  for (let n = 0; n < 5; n++) backlog.push((await queue.enqueue('hold', { n }))._id)
  worker.start()
  await waitFor('four jobs to start', async () => started.length === 4)
  t.same(calls, ['claimMany(4)'], 'the idle worker took four jobs in one claim')
  t.same(started, backlog.slice(0, 4), 'the oldest four')
  release.shift()?.()
  await waitFor('the fifth job to start', async () => started.length === 5)
  t.same(calls.slice(1), ['claim'], 'one slot freed: a single claim')
  for (const resolve of release.splice(0)) resolve()
  await waitFor('all five to succeed', async () => (await queue.jobs.countDocuments({ status: 'succeeded' })) === 5)
  await worker.stop()
})

t.test('JobWorker: a throwing handler goes through fail() and retries', async (t) => {
  const { queue } = await openTestJobQueue(t, systemClock, { backoff: { baseMs: 20, maxMs: 100 } })
  let calls = 0
  const worker = new JobWorker(queue, {
    flaky: async () => {
      calls++
      if (calls < 3) throw new Error(`attempt ${calls} failed`)
      return 'ok'
    },
    doomed: async () => { throw new PermanentJobError('bad payload') }
  }, { pollMs: 10, leaseMs: 1_000 })
  worker.start()
  const flaky = await queue.enqueue('flaky', {})
  const doomed = await queue.enqueue('doomed', {})
  await waitFor('flaky to succeed', async () => (await queue.get(flaky._id))?.status === 'succeeded')
  await waitFor('doomed to fail', async () => (await queue.get(doomed._id))?.status === 'failed')
  await worker.stop()
  t.match(await queue.get(flaky._id), { attempts: 3, result: 'ok', lastError: 'Error: attempt 2 failed' })
  t.match(await queue.get(doomed._id), { attempts: 1, lastError: 'PermanentJobError: bad payload' })
})

t.test('JobWorker renews the lease while a slow handler runs', async (t) => {
  const { queue } = await openTestJobQueue(t, systemClock)
  // A lease of a second: a loaded machine's event-loop stalls (a few hundred ms) must not pass for a dead worker.
  const worker = new JobWorker(queue, { slow: async () => { await delay(3_000); return 'done' } }, { leaseMs: 1_000, pollMs: 10 })
  worker.start()
  const job = await queue.enqueue('slow', {})
  await waitFor('the job to start', async () => (await queue.get(job._id))?.status === 'running')
  await delay(2_200)
  t.equal(await queue.claim('thief', ['slow'], 1_000), null, 'the lease is still held after twice its length')
  await waitFor('the job to finish', async () => (await queue.get(job._id))?.status === 'succeeded')
  await worker.stop()
  t.match(await queue.get(job._id), { attempts: 1, result: 'done' })
})

t.test('JobWorker aborts the handler signal when its lease is taken over', async (t) => {
  const clock = new ManualClock(Date.now())
  const { queue } = await openTestJobQueue(t, clock)
  const errors: unknown[] = []
  let aborted: unknown = null
  const worker = new JobWorker(queue, {
    stuck: async (_payload, { signal }) => {
      await new Promise<void>((resolve) => signal.addEventListener('abort', () => { resolve() }))
      aborted = signal.reason
      throw signal.reason
    }
  }, { workerId: 'A', leaseMs: 300, pollMs: 10, onError: (error) => { errors.push(error) } })
  worker.start()
  const job = await queue.enqueue('stuck', {})
  await waitFor('A to claim', async () => (await queue.get(job._id))?.leaseOwner === 'A')
  // A renews on real timers; if a renewal lands between the jump and B's claim, jump again.
  let byB: Job | null = null
  for (let tries = 0; byB === null && tries < 20; tries++) {
    clock.advance(10_000)
    byB = await queue.claim('B', ['stuck'], 60_000)
  }
  t.equal(byB?.leaseOwner, 'B')
  await waitFor('A to notice', async () => aborted !== null)
  await worker.stop()
  t.ok(aborted instanceof JobLeaseLostError, 'the signal reason says why')
  t.ok(errors.some((error) => error instanceof JobLeaseLostError), 'the lost outcome is reported')
  t.match(await queue.get(job._id), { status: 'running', leaseOwner: 'B', lastError: null }, "A's failure did not touch B's job")
})

t.test('JobWorker.stop waits for jobs in flight and then claims nothing', async (t) => {
  const { queue } = await openTestJobQueue(t, systemClock)
  let started = false
  const worker = new JobWorker(queue, { x: async () => { started = true; await delay(300); return 1 } }, { pollMs: 10, leaseMs: 1_000 })
  worker.start()
  const first = await queue.enqueue('x', {})
  await waitFor('the job to start', async () => started)
  await worker.stop()
  t.equal((await queue.get(first._id))?.status, 'succeeded', 'finished before stop() resolved')
  const second = await queue.enqueue('x', {})
  await delay(100)
  t.equal((await queue.get(second._id))?.status, 'queued', 'a stopped worker claims nothing')
  t.throws(() => new JobWorker(queue, {}), RangeError, 'a worker needs handlers')
})
