import t from 'tap'
import { ManualClock } from '../../../services/platform/clock.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { JobQueue } from '../../../services/jobs/queue.js'
import { STORE_ENGINES, storesOnOneData } from '../webhooks/shared-store.js'

for (const engine of STORE_ENGINES) {
  t.test(`${engine}: claimMany takes up to N due jobs, stopped work first, never one another worker holds; completeMany finishes them in one write`, async (t) => {
    const clock = new ManualClock(Date.UTC(2026, 0, 1))
    const queues: JobQueue[] = []
    for (const store of await storesOnOneData(t, engine, clock, 2)) {
      const queue = new JobQueue({ store, newId: createIdGenerator(() => clock.nowMs()), random: () => 0.5 })
      await queue.init()
      queues.push(queue)
    }
    const [a, b] = queues
    const stalled = await a.enqueue('mail', { n: 'stalled' })
    t.equal((await a.claim('gone', ['mail'], 1_000))?._id, stalled._id)
    clock.advance(2_000)
    const made = []
    for (let i = 0; i < 6; i++) { made.push(await a.enqueue('mail', { n: i })); clock.advance(1) }
    await a.enqueue('mail', { n: 'later' }, { delayMs: 60_000 })
    await a.enqueue('other', { n: 'other type' })

    t.same(await a.claimMany('w1', ['mail'], 0 + 30_000, 0).catch((error: Error) => error.name), 'RangeError', 'a limit below 1 is refused')
    const first = await a.claimMany('w1', ['mail'], 30_000, 4)
    t.same(first.map((job) => job.payload.n), ['stalled', 0, 1, 2], 'the job whose worker stopped first, then the oldest due')
    t.ok(first.every((job) => job.status === 'running' && job.leaseOwner === 'w1'), 'each leased to the claimer')
    t.same(first.map((job) => job.attempts), [2, 1, 1, 1], 'each claim counts as an attempt')
    const second = await b.claimMany('w2', ['mail'], 30_000, 10)
    t.same(second.map((job) => job.payload.n), [3, 4, 5], 'the other worker gets only what is left and due')
    t.same(await a.claimMany('w1', ['mail'], 30_000, 10), [], 'nothing is claimed twice')

    // Both leases run out before their workers report; a third worker takes over the oldest job, one of w1's.
    clock.advance(31_000)
    const retaken = await a.claim('w3', ['mail'], 30_000)
    t.equal(retaken?._id, stalled._id)
    const overtaken = retaken as NonNullable<typeof retaken>
    t.equal(await b.completeMany(second, 'w2'), second.length, 'a late report still finishes jobs nobody took over')
    t.equal(await a.completeMany(first, 'w1'), first.length - 1, 'the overtaken job is not finished by its old worker')
    t.match(await a.get(overtaken._id), { status: 'running', leaseOwner: 'w3' })
    for (const job of [...first, ...second]) {
      if (job._id === overtaken._id) continue
      t.match(await a.get(job._id), { status: 'succeeded', leaseUntil: null, result: null }, `${String(job.payload.n)} finished`)
    }
    t.same(await a.claimMany('w1', ['mail', 'other'], 30_000, 10).then((jobs) => jobs.map((job) => job.payload.n)), ['other type'], 'the delayed job is not due yet')
  })
}
