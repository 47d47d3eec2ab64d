import t from 'tap'
import { join } from 'node:path'
import { ManualClock } from '../../../services/platform/clock.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { JobQueue } from '../../../services/jobs/queue.js'
import { PermanentJobError, type Job } from '../../../services/jobs/job.js'
import { openSqliteStore } from '../../../services/store/sqlite/index.js'
import { tempDir, openTestJobQueue } from '../../helper.js'

const DAY = 24 * 60 * 60_000

t.test('run times and leases are judged by the Store\'s clock, not the process\'s', async (t) => {
  // Four years ahead of this process: a queue that read Date.now() would find nothing due and every lease alive.
  const { queue, clock } = await openTestJobQueue(t, new ManualClock(Date.UTC(2030, 0, 1)))
  const now = await queue.enqueue('x', {})
  t.same(now.runAt, clock.now(), 'runAt is the Store\'s now')
  const dueByStore = await queue.enqueue('x', {}, { runAt: new Date(Date.UTC(2029, 0, 1)) })
  const first = await queue.claim('node-a', ['x'], 60_000)
  t.equal(first?._id, now._id)
  t.same(first?.leaseUntil, new Date(clock.nowMs() + 60_000), 'the lease runs from the Store\'s now')
  t.equal((await queue.claim('node-a', ['x'], 60_000))?._id, dueByStore._id, 'due by the Store\'s clock though in this process\'s future')
  t.equal(await queue.claim('node-b', ['x'], 60_000), null, 'both leases hold')
  clock.advance(60_001)
  t.equal((await queue.claim('node-b', ['x'], 60_000))?._id, now._id, 'the Store\'s clock passing the lease frees the job')
})

t.test('schedule: one recurring job per type, however many nodes schedule it', async (t) => {
  const { store, queue, clock } = await openTestJobQueue(t)
  const other = new JobQueue({ store, newId: createIdGenerator(() => clock.nowMs()) })
  const [a, b] = await Promise.all([queue.schedule('tidy', DAY), other.schedule('tidy', DAY)])
  t.equal(a._id, b._id)
  t.equal(await queue.jobs.countDocuments({ type: 'tidy' }), 1, 'two nodes starting together make one job')
  t.match(a, { status: 'queued', everyMs: DAY, attempts: 0 })
  t.same(a.runAt, clock.now(), 'a new schedule is due at once')

  const enqueued = await queue.enqueue('tidy', {})
  t.equal((await queue.claim('w', ['tidy'], 1_000))?._id, a._id, 'a recurring job sorts before any generated id, so a backlog does not hold it back')
  await queue.claim('w', ['tidy'], 1_000).then(async (job) => { t.equal(job?._id, enqueued._id); await queue.complete(job!, 'w') })

  clock.advance(10)
  const running = await queue.jobs.findOne({ _id: a._id }) as Job
  const done = await queue.complete(running, 'w', { tidied: 3 })
  t.match(done, { status: 'queued', attempts: 1, maxAttempts: 6, result: { tidied: 3 }, leaseOwner: null, leaseUntil: null, finishedAt: null }, 'attempts keep counting, so they still fence claims; the next run gets its own budget')
  t.same(done?.runAt, new Date(clock.nowMs() + DAY), 'it runs again everyMs after the run')
  t.equal(await queue.claim('w', ['tidy'], 1_000), null, 'not before')

  await queue.schedule('tidy', 2 * DAY)
  t.match(await queue.get(a._id), { everyMs: 2 * DAY, runAt: done?.runAt }, 'scheduling again changes the interval, not the next run')
  await t.rejects(queue.schedule('tidy', 0), { code: 'APP_JOB_INVALID' })
  await t.rejects(queue.schedule('bad type!', DAY), { code: 'APP_JOB_INVALID' })
})

t.test('schedule by cron: due at the expression\'s fire times, after success or failure alike', async (t) => {
  // A Tuesday, 10:00 UTC.
  const { queue, clock } = await openTestJobQueue(t, new ManualClock(Date.UTC(2030, 0, 1, 10, 0)))
  const daily = { expression: '0 3 * * *', timezone: 'UTC' }
  const job = await queue.schedule('backup', daily)
  t.match(job, { status: 'queued', cron: daily })
  t.notOk('everyMs' in job)
  t.same(job.runAt, new Date(Date.UTC(2030, 0, 2, 3, 0)), 'a new cron schedule waits for its first fire time, not at once')
  t.equal(await queue.claim('w', ['backup'], 1_000), null)

  clock.set(job.runAt)
  clock.advance(5_000)
  const done = await queue.complete((await queue.claim('w', ['backup'], 60_000))!, 'w')
  t.same(done?.runAt, new Date(Date.UTC(2030, 0, 3, 3, 0)), 'the next fire time, not a day after the run ended')
  clock.set(done!.runAt)
  const failed = await queue.fail((await queue.claim('w', ['backup'], 60_000))!, 'w', new PermanentJobError('bucket gone'))
  t.match(failed, { status: 'queued', lastError: /bucket gone/ })
  t.same(failed?.runAt, new Date(Date.UTC(2030, 0, 4, 3, 0)), 'a failed run waits for the next fire time too')

  const berlin = await queue.schedule('backup', { expression: '0 3 * * *', timezone: 'Europe/Berlin' })
  t.same(berlin.runAt, new Date(Date.UTC(2030, 0, 4, 2, 0)), 'read in its timezone (03:00 in Berlin is 02:00 UTC in winter), pulled in from the later run')
  const yearly = await queue.schedule('backup', 365 * DAY)
  t.match(yearly, { everyMs: 365 * DAY, runAt: berlin.runAt }, 'back to an interval: the next run stands')
  t.notOk('cron' in yearly, 'the cron is gone, so the interval decides the run after')
  t.same((await queue.schedule('backup', daily)).runAt, berlin.runAt, 'a cron whose next fire is later does not push the run back')
  await t.rejects(queue.schedule('backup', { expression: '0 3 * *', timezone: 'UTC' }), { code: 'APP_SCHEDULE_INVALID', message: /schedule\.expression must have 5 fields/ })
  await t.rejects(queue.schedule('backup', { expression: '0 3 * * *', timezone: 'Nowhere/Else' }), { code: 'APP_SCHEDULE_INVALID' })
})

t.test('a recurring job that fails for good waits for its next run instead of dying', async (t) => {
  const { queue, clock } = await openTestJobQueue(t)
  const scheduled = await queue.schedule('tidy', DAY)
  const claimed = await queue.claim('w', ['tidy'], 1_000)
  const failed = await queue.fail(claimed!, 'w', new PermanentJobError('upstream gone'))
  t.match(failed, { status: 'queued', attempts: 1, maxAttempts: 1 + scheduled.maxAttempts, lastError: /upstream gone/ })
  t.same(failed?.runAt, new Date(clock.nowMs() + DAY))

  clock.advance(DAY)
  for (let attempt = 1; attempt <= scheduled.maxAttempts; attempt++) {
    const job = await queue.claim('w', ['tidy'], 1_000)
    t.equal(job?.attempts, 1 + attempt)
    const after = await queue.fail(job!, 'w', new Error('flaky'))
    if (attempt < scheduled.maxAttempts) {
      t.match(after, { status: 'queued' })
      clock.set(after!.runAt)
    } else {
      t.match(after, { status: 'queued', lastError: /flaky/ }, 'attempts used up: back on the schedule')
      t.same(after?.runAt, new Date(clock.nowMs() + DAY))
    }
  }

  clock.set((await queue.get(scheduled._id))!.runAt)
  const stalled = await queue.claim('w', ['tidy'], 1_000)
  for (let attempt = 2; attempt <= scheduled.maxAttempts + 1; attempt++) {
    clock.advance(1_001)
    const reclaimed = await queue.claim('w', ['tidy'], 1_000)
    if (attempt <= scheduled.maxAttempts) t.equal(reclaimed?._id, stalled?._id)
    else t.equal(reclaimed, null, 'a worker that keeps dying also sends it back to its schedule')
  }
  t.match(await queue.get(scheduled._id), { status: 'queued', lastError: /final attempt/ })
  clock.set((await queue.get(scheduled._id))!.runAt)
  const nextRun = await queue.claim('w', ['tidy'], 1_000)
  t.equal(await queue.complete(stalled!, 'w'), null, 'the stalled run cannot settle the next one, though the same worker holds it: attempts still fence it')
  t.match(await queue.get(scheduled._id), { status: 'running', attempts: nextRun?.attempts })
})

t.test('prune deletes jobs finished longer ago than the retention, nothing else', async (t) => {
  const { queue, clock } = await openTestJobQueue(t)
  const finish = async (type: string, how: 'complete' | 'fail' | 'permanent'): Promise<string> => {
    const job = await queue.enqueue(type, {}, { maxAttempts: 1 })
    const claimed = await queue.claim('w', [type], 1_000)
    if (how === 'complete') await queue.complete(claimed!, 'w')
    else await queue.fail(claimed!, 'w', how === 'fail' ? new Error('x') : new PermanentJobError('x'))
    return job._id
  }
  const old = [await finish('a', 'complete'), await finish('b', 'fail'), await finish('c', 'permanent')]
  const waiting = await queue.enqueue('later', {}, { delayMs: 30 * DAY })
  const running = await queue.enqueue('run', {})
  await queue.claim('w', ['run'], 60 * DAY)
  const recurring = await queue.schedule('tidy', DAY)
  clock.advance(7 * DAY)
  const recent = await finish('d', 'complete')
  clock.advance(1)

  t.equal(await queue.prune(7 * DAY), 3)
  const left = (await queue.jobs.find({}).toArray()).map((job) => job._id).sort()
  t.same(left, [waiting._id, running._id, recurring._id, recent].sort(), 'queued, running, recurring and recently finished jobs stay')
  for (const id of old) t.equal(await queue.get(id), null)
  t.equal(await queue.prune(7 * DAY), 0, 'idempotent')
  await t.rejects(queue.prune(-1), RangeError)
})

t.test('the claim and the prune are served by indexes; the older claim indexes are dropped', async (t) => {
  const dir = tempDir(t, 'plinth-jobs-')
  const store = openSqliteStore({ file: join(dir, 'plinth.db') })
  t.teardown(async () => { await store.close() })
  const jobs = store.collection('_jobs')
  await jobs.createIndex({ status: 1, runAt: 1 })
  await jobs.createIndex({ status: 1, leaseUntil: 1 })
  await new JobQueue({ store, newId: createIdGenerator() }).init()
  const keys = (await jobs.listIndexes()).map((index) => index.key)
  t.same(keys.filter((key) => Object.keys(key)[0] === 'status'), [
    { status: 1, type: 1, _id: 1, runAt: 1 },
    { status: 1, type: 1, _id: 1, leaseUntil: 1 },
    { status: 1, finishedAt: 1 }
  ], 'equality, sort, then range for each branch of the claim; status and age for the prune')
})
