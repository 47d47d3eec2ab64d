import t, { type Test } from 'tap'
import { ManualClock } from '../../../services/platform/clock.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { JobQueue } from '../../../services/jobs/queue.js'
import { DeferJobError, PermanentJobError } from '../../../services/jobs/job.js'
import { STORE_ENGINES, storesOnOneData, type StoreEngine } from '../webhooks/shared-store.js'

const TYPE = 'deliver'

/** A queue on a Store of its own, on the engine, with the clock. */
async function queueOn (t: Test, engine: StoreEngine, clock: ManualClock): Promise<JobQueue> {
  const [store] = await storesOnOneData(t, engine, clock, 1)
  const queue = new JobQueue({ store, newId: createIdGenerator(() => clock.nowMs()), random: () => 0.5 })
  await queue.init()
  return queue
}

/** The one due job, claimed: each key below is made alone, so it is the one. */
async function claimOnly (queue: JobQueue, key: string): Promise<NonNullable<Awaited<ReturnType<JobQueue['claim']>>>> {
  await queue.enqueueKeyed(TYPE, key, { made: key })
  const job = await queue.claim('w', [TYPE], 60_000)
  if (job === null || job.payload.made !== key) throw new Error(`expected to claim ${key}`)
  return job
}

/** A keyed job in each state a key can be met in: finished well, failed, running, waiting out a delay, queued. */
async function everyState (queue: JobQueue): Promise<void> {
  await queue.complete(await claimOnly(queue, 'done'), 'w', { ok: true })
  await queue.fail(await claimOnly(queue, 'failed'), 'w', new PermanentJobError('no'))
  await claimOnly(queue, 'running')
  await queue.fail(await claimOnly(queue, 'waiting'), 'w', new DeferJobError('later', 60_000))
  await queue.enqueueKeyed(TYPE, 'queued', { made: 'queued' })
}

const asked = (keys: string[]) => keys.map((key, i) => ({ key, payload: { asked: i } }))

for (const engine of STORE_ENGINES) {
  t.test(`${engine}: enqueueKeyedMany leaves the jobs as enqueueKeyed once per key would, whatever state each key was in`, async (t) => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const one = await queueOn(t, engine, clock)
    const many = await queueOn(t, engine, clock)
    await everyState(one)
    await everyState(many)
    // Fresh keys, every state, and a key asked twice in the one call: the insert meets keys kept already, so the fallback runs.
    const keys = ['fresh-1', 'done', 'failed', 'running', 'waiting', 'queued', 'fresh-2', 'fresh-1']
    for (const { key, payload } of asked(keys)) await one.enqueueKeyed(TYPE, key, payload)
    await many.enqueueKeyedMany(TYPE, asked(keys))
    const all = async (queue: JobQueue) => await queue.jobs.find({}, { sort: { _id: 1 } }).toArray()
    const expected = await all(one)
    t.same(await all(many), expected, 'the same jobs, field for field')
    t.equal(expected.length, 7, 'one job per key')
    t.match(Object.fromEntries(expected.map((job) => [job._id.slice('-key:deliver:'.length), job])), {
      done: { status: 'queued', payload: { asked: 1 } },
      failed: { status: 'queued', payload: { asked: 2 } },
      running: { status: 'running', again: true, payload: { made: 'running' } },
      waiting: { status: 'queued', payload: { made: 'waiting' }, runAt: new Date(clock.nowMs() + 60_000) },
      queued: { status: 'queued', payload: { made: 'queued' } }
    }, 'a finished key queued again with the new payload, a running one asked again, a queued or waiting one left as it was')
    t.match(await many.get('-key:deliver:fresh-1'), { status: 'queued', payload: { asked: 0 } }, 'a key asked twice: the first payload, as a second enqueueKeyed of a queued job keeps it')
  })

  t.test(`${engine}: fresh keys in one insert, claimed once each; a key repeated in the call is one job`, async (t) => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const queue = await queueOn(t, engine, clock)
    const woken: number[] = []
    queue.onDue(() => { woken.push(1) })
    await queue.enqueueKeyedMany(TYPE, asked(['a', 'b', 'c']))
    t.equal(woken.length, 1, 'the worker here is told once')
    await queue.enqueueKeyedMany(TYPE, asked(['d', 'd', 'a']))
    await queue.enqueueKeyedMany(TYPE, [])
    const claimed: string[] = []
    for (let job = await queue.claim('w', [TYPE], 60_000); job !== null; job = await queue.claim('w', [TYPE], 60_000)) {
      claimed.push(job._id)
      await queue.complete(job, 'w')
    }
    t.same(claimed, ['-key:deliver:a', '-key:deliver:b', '-key:deliver:c', '-key:deliver:d'], 'each key ran once')
    await t.rejects(queue.enqueueKeyedMany('bad type', asked(['x'])), { code: 'APP_JOB_INVALID' })
    await t.rejects(queue.enqueueKeyedMany(TYPE, [{ key: 'x', payload: [] as unknown as Record<string, unknown> }]), { code: 'APP_JOB_INVALID' })
    t.equal(await queue.get('-key:deliver:x'), null, 'a refused call writes nothing')
  })
}
