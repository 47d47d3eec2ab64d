import { setImmediate as nextTurn } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { WEBHOOK_DELIVER_JOB } from '../../../services/webhooks/index.js'
import type { Instance } from './shared-store.js'
import { receiver, thingEvent } from './fixtures.js'
import { STORE_ENGINES, twoInstances } from './shared-store.js'

/** More than one slice of a publish (200 events), so a batch and the one after it both run. */
const EVENTS = 210

/** Each event once, the webhook's one job due; its fan-out then makes one delivery each and leaves every event fanned out. */
async function exactlyOnce (t: Test, on: Instance, count: number, subscriptionId: string): Promise<void> {
  const { publisher } = on.webhooks
  t.equal(await publisher.events.countDocuments({}), count, 'each event kept once')
  t.equal(await publisher.deliveries.countDocuments({ trigger: 'event', attempts: 0, _id: { $ne: 'orphan' } }), 0, 'no delivery made by the publish')
  await publisher.fanOut(subscriptionId)
  await publisher.fanOut(subscriptionId)
  t.equal(await publisher.events.countDocuments({ fannedOut: false }), 0, 'and fanned out')
  const deliveries = await publisher.deliveries.find({}).toArray()
  t.equal(deliveries.length, count, 'one delivery per event')
  t.equal(new Set(deliveries.map((delivery) => delivery.eventId)).size, count, 'of every event')
  const jobs = await on.queue.jobs.find({ type: WEBHOOK_DELIVER_JOB }).toArray()
  t.same(jobs.map((job) => job._id), [...new Set(deliveries.map((delivery) => `-key:${WEBHOOK_DELIVER_JOB}:${delivery.subscriptionId}`))], 'one job for the webhook, none else')
  t.match(jobs, [{ status: 'queued' }], 'due')
}

for (const engine of STORE_ENGINES) {
  t.test(`${engine}: the flush and the sweep publishing one outbox at once, then again: each event delivered once`, async (t) => {
    const { a, b } = await twoInstances(t, engine)
    const hook = await receiver(t)
    const { webhook } = await a.webhooks.create({ projectId: 'p1', source: 'things' }, { url: hook.url, events: ['thing.updated'] }, null)
    await nextTurn()
    const changes = Array.from({ length: EVENTS }, (_, i) => thingEvent(i + 1))
    // A flush and a sweep in one instance at once, and on MongoDB the other instance's sweep beside them (two
    // connections to one SQLite file in one thread cannot both write at once: the second would wait on a lock
    // the first can only release when this thread is free; two processes wait their turn, as below).
    const flushes = [a.webhooks.publish('things', 'p1', changes), a.webhooks.publish('things', 'p1', changes.slice(150))]
    if (engine === 'mongodb') flushes.push(b.webhooks.publish('things', 'p1', changes))
    await Promise.all(flushes)
    await nextTurn()
    await b.webhooks.publish('things', 'p1', changes)
    await exactlyOnce(t, a, EVENTS, webhook.id)
    // Over the wire-level double, sending them all takes most of a minute; the jobs counted above are what runs.
    if (engine === 'mongodb') return
    t.equal(await a.drain() + await b.drain(), EVENTS, 'the two workers made one attempt per delivery')
    t.equal(hook.received.length, EVENTS, 'the receiver was called once per event')
    t.equal(new Set(hook.received.map((request) => request.body.data.id)).size, EVENTS, 'every change arrived, none twice')
  })

  t.test(`${engine}: a publish cut short in a slice (some events kept, one delivery made without its job) is finished by the next and the job's fan-out`, async (t) => {
    const { a, clock } = await twoInstances(t, engine)
    const hook = await receiver(t)
    const { webhook } = await a.webhooks.create({ projectId: 'p1', source: 'things' }, { url: hook.url, events: ['*'] }, null)
    const changes = Array.from({ length: 5 }, (_, i) => thingEvent(i + 1))
    const { publisher } = a.webhooks
    const now = clock.now()
    const kept = (n: number) => ({ _id: `p1:things:thing-${n}:change-${n}`, projectId: 'p1', source: 'things', key: `thing-${n}:change-${n}`, type: 'thing.updated', occurredAt: now, actor: null, data: { id: `thing-${n}`, color: 'red' }, changes: null, matchOn: null, fannedOut: false, seq: `seq-${n}`, pending: `p1 things seq-${n}`, createdAt: now })
    // What a crash leaves: events 2 and 4 written, 4's delivery too, but not its job.
    await publisher.events.insertMany([kept(2), kept(4)])
    await publisher.deliveries.insertOne({
      _id: 'orphan', subscriptionId: webhook.id, projectId: 'p1', source: 'things', eventId: kept(4)._id, type: 'thing.updated', occurredAt: now, status: 'pending', trigger: 'event', round: 0, attempts: 0, roundStartedAt: now, nextAttemptAt: now, lastAttemptAt: null, lastResponseStatus: null, lastError: null, createdAt: now, finishedAt: null
    })
    await a.webhooks.publish('things', 'p1', changes)
    await exactlyOnce(t, a, 5, webhook.id)
    t.match(await publisher.deliveries.findOne({ eventId: kept(4)._id }), { _id: 'orphan' }, 'the delivery made before the crash is the one kept, now with its job')
    t.equal(await a.drain(), 5, 'five attempts, one a delivery')
    t.same(hook.received.map((request) => request.body.data.id).sort(), ['thing-1', 'thing-2', 'thing-3', 'thing-4', 'thing-5'], 'each change arrived once')
  })
}
