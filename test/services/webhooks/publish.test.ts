import t from 'tap'
import { WEBHOOK_DELIVER_JOB } from '../../../services/webhooks/index.js'
import { engine, receiver, thingEvent, thingSource } from './fixtures.js'

t.test('a bulk change of 10 items, two fields each, published again by a sweep: 10 deliveries, not 20', async (t) => {
  const { webhooks, queue, owner, drain } = await engine(t)
  const hook = await receiver(t)
  const { webhook } = await webhooks.create(owner, { url: hook.url, events: ['thing.updated'] }, null)
  const changes = Array.from({ length: 10 }, (_, i) => thingEvent(i + 1))
  await webhooks.publish('things', 'p1', changes)
  // What a crashed flush or a sweep does: the same outbox published again.
  await webhooks.publish('things', 'p1', changes)
  t.equal(await queue.jobs.countDocuments({ type: WEBHOOK_DELIVER_JOB }), 1, 'one job for the webhook\'s ten deliveries')
  t.equal(await drain(), 10)
  await webhooks.publish('things', 'p1', changes.slice(0, 3))
  t.equal(await drain(), 0, 'published again after delivery: nothing new')
  t.equal(hook.received.length, 10)
  t.equal(new Set(hook.received.map((request) => request.body.id)).size, 10, 'ten event ids')
  t.same(hook.received.map((request) => request.body.data.size).sort((a, b) => Number(a) - Number(b)), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
  t.same(Object.keys(hook.received[0].body.changes as object).sort(), ['color', 'size'], 'both fields in one event\'s changes')
  t.equal((await webhooks.deliveries((await webhooks.find(owner, webhook.id))!)).items.length, 10)
})

t.test('each webhook gets its own delivery and event id; types and the source\'s filter choose who gets what', async (t) => {
  const { webhooks, owner, drain } = await engine(t)
  const all = await receiver(t)
  const reds = await receiver(t)
  const created = await receiver(t)
  await webhooks.create(owner, { url: all.url, events: ['*'] }, null)
  await webhooks.create(owner, { url: reds.url, events: ['thing.updated'], filter: { color: 'red' } }, null)
  await webhooks.create(owner, { url: created.url, events: ['thing.created'] }, null)
  await webhooks.create({ projectId: 'p2', source: 'things' }, { url: all.url, events: ['*'] }, null)
  await webhooks.publish('things', 'p1', [
    thingEvent(1),
    thingEvent(2, { data: { id: 'thing-2', color: 'blue' } }),
    thingEvent(3, { type: 'thing.created', changes: null }),
    // The filter reads what the source says to match on, which need not be sent.
    thingEvent(4, { data: { id: 'thing-4' }, matchOn: { color: 'red' } })
  ])
  await drain()
  t.equal(all.received.length, 4, '* takes every type, and nothing of another project')
  t.same(reds.received.map((request) => request.body.data.id).sort(), ['thing-1', 'thing-4'], 'the filter: red updates only')
  t.same(created.received.map((request) => request.body.type), ['thing.created'])
  t.notOk('changes' in created.received[0].body, 'no changes when the source gave none')
  t.notOk('matchOn' in reds.received[0].body, 'what the filter matched on is not sent')
  const ids = [...all.received, ...reds.received].map((request) => request.body.id)
  t.equal(new Set(ids).size, ids.length, 'an event id is per webhook')
})

t.test('nobody subscribed: nothing is kept; a paused webhook keeps events for a replay, gets no delivery', async (t) => {
  const { webhooks, owner, drain } = await engine(t)
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  t.equal(await webhooks.publisher.events.countDocuments({}), 0)
  const hook = await receiver(t)
  await webhooks.create(owner, { url: hook.url, events: ['*'], active: false }, null)
  await webhooks.publish('things', 'p1', [thingEvent(2)])
  t.equal(await webhooks.publisher.events.countDocuments({}), 1)
  t.equal(await drain(), 0)
})

t.test('a publish cut short after the event was kept is finished by the next publish of the same change', async (t) => {
  const { webhooks, owner, drain } = await engine(t)
  const hook = await receiver(t)
  await webhooks.create(owner, { url: hook.url, events: ['*'] }, null)
  // The event written, its fan-out never done: what a crash between the two leaves.
  await webhooks.publisher.events.insertOne({
    _id: 'p1:things:thing-1:change-1', projectId: 'p1', source: 'things', key: 'thing-1:change-1', type: 'thing.updated', occurredAt: new Date(), actor: null, data: { id: 'thing-1' }, changes: null, matchOn: null, fannedOut: false, seq: 'seq-1', pending: 'p1 things seq-1', createdAt: new Date()
  })
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  await drain()
  t.equal(hook.received.length, 1)
  t.same(hook.received[0].body.data, { id: 'thing-1' }, 'the event as first kept')
  t.match(await webhooks.publisher.events.findOne({ _id: 'p1:things:thing-1:change-1' }), { fannedOut: true })
  t.notOk('pending' in (await webhooks.publisher.events.findOne({ _id: 'p1:things:thing-1:change-1' }))!, 'out of the fan-out queue')
})

t.test('an event an earlier build kept and did not fan out (its five-key index, no `pending`) is fanned out after the upgrade', async (t) => {
  const { webhooks, owner, drain } = await engine(t)
  const hook = await receiver(t)
  await webhooks.create(owner, { url: hook.url, events: ['*'] }, null)
  const { events } = webhooks.publisher
  await events.createIndex({ projectId: 1, source: 1, fannedOut: 1, seq: 1, _id: 1 })
  await events.insertOne({
    _id: 'p1:things:thing-1:change-1', projectId: 'p1', source: 'things', key: 'thing-1:change-1', type: 'thing.updated', occurredAt: new Date(), actor: null, data: { id: 'thing-1' }, changes: null, matchOn: null, fannedOut: false, createdAt: new Date()
  })
  await webhooks.publisher.init()
  t.notOk((await events.listIndexes()).some((index) => 'fannedOut' in index.key), 'the old index is gone')
  t.match(await events.findOne({ _id: 'p1:things:thing-1:change-1' }), { pending: 'p1 things ' }, 'queued first for its owner')
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  await drain()
  t.equal(hook.received.length, 1, 'delivered once')
  t.same(hook.received[0].body.data, { id: 'thing-1' }, 'the event as first kept')
})

t.test('a source refuses what it does not have: an unknown type, no key', async (t) => {
  const { webhooks } = await engine(t)
  await t.rejects(webhooks.publish('things', 'p1', [thingEvent(1, { type: 'thing.exploded' })]), /no event type "thing.exploded"/)
  await t.rejects(webhooks.publish('things', 'p1', [thingEvent(1, { key: '' })]), /needs a key/)
  await t.rejects(webhooks.publish('nothing', 'p1', [thingEvent(1)]), /no webhook source "nothing"/)
  t.throws(() => { webhooks.registerSource(thingSource()) }, /registered twice/)
  t.throws(() => { webhooks.registerSource(thingSource({ name: 'Bad Name' })) }, /lower-case/)
})

t.test('the sweep asks each source to publish again from shortly before the last sweep began, in the projects with a subscription', async (t) => {
  const asked: Array<[Date, readonly string[]]> = []
  const { webhooks, clock } = await engine(t, { source: thingSource({ republish: async (since, owners) => { asked.push([since, owners]) } }) })
  const first = clock.nowMs()
  t.same(await webhooks.sweep(), { swept: ['things'] })
  t.same(asked, [], 'no project has a subscription: nothing to publish again')
  const receiving = await receiver(t)
  await webhooks.create({ projectId: 'p2', source: 'things' }, { url: receiving.url, events: ['*'] }, null)
  await webhooks.create({ projectId: 'p1', source: 'things' }, { url: receiving.url, events: ['*'] }, null)
  await webhooks.create({ projectId: 'p1', source: 'things' }, { url: receiving.url, events: ['thing.created'] }, null)
  clock.advance(60_000)
  await webhooks.sweep()
  t.same(asked, [[new Date(first - 5 * 60_000), ['p1', 'p2']]], 'each next one from 5 minutes before the last began, once per subscribed project')
})

t.test('what is older than WEBHOOK_RETENTION_DAYS is pruned; a deleted webhook\'s queued delivery ends without a call', async (t) => {
  const { webhooks, queue, clock, owner, drain } = await engine(t, { env: { WEBHOOK_RETENTION_DAYS: '2' } })
  const hook = await receiver(t)
  const kept = await webhooks.create(owner, { url: hook.url, events: ['*'] }, null)
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  await drain()
  clock.advance(3 * 86_400_000)
  await webhooks.publish('things', 'p1', [thingEvent(2)])
  await drain()
  const subscription = (await webhooks.find(owner, kept.webhook.id))!
  t.same(await webhooks.prune(), { deleted: 3 }, 'the old event, its delivery and its attempt')
  t.same((await webhooks.deliveries(subscription)).items.map((delivery) => delivery.type), ['thing.updated'])
  t.equal(await webhooks.publisher.events.countDocuments({}), 1)

  const gone = await webhooks.create(owner, { url: hook.url, events: ['*'] }, null)
  await webhooks.publish('things', 'p1', [thingEvent(3)])
  await webhooks.delete((await webhooks.find(owner, gone.webhook.id))!)
  const before = hook.received.length
  t.equal(await drain(), 1, 'both jobs ran; the deleted webhook\'s owed nothing')
  t.equal(await queue.jobs.countDocuments({ type: WEBHOOK_DELIVER_JOB, status: 'succeeded' }), 2)
  t.equal(hook.received.length, before + 1, 'only the remaining webhook was called')
})

t.test('a webhook\'s backlog goes out in one run of its job; a new event does not wait for another delivery\'s retry', async (t) => {
  const { webhooks, queue, clock, owner, drain } = await engine(t)
  const hook = await receiver(t, [{ status: 500 }])
  await webhooks.create(owner, { url: hook.url, events: ['*'] }, null)
  await webhooks.publish('things', 'p1', Array.from({ length: 20 }, (_, i) => thingEvent(i + 1)))
  t.equal(await drain(), 20, 'twenty attempts')
  const [job] = await queue.jobs.find({ type: WEBHOOK_DELIVER_JOB }).toArray()
  t.match(job, { attempts: 1, status: 'queued' }, 'made by one run, which waits for the one retry')
  t.ok(job.runAt.getTime() > clock.nowMs(), 'due when the retry is')
  await webhooks.publish('things', 'p1', [thingEvent(21)])
  t.equal(await drain(), 1, 'the new event is sent now')
  t.equal(hook.received.length, 21)
  clock.advance(60 * 60_000)
  t.equal(await drain(), 1, 'then the retry, when due')
  t.equal(await drain(), 0)
})

t.test('the job makes the deliveries: none at the publish, and a webhook made after an event was kept never gets it', async (t) => {
  const { webhooks, clock, owner, drain } = await engine(t)
  const first = await receiver(t)
  const later = await receiver(t)
  await webhooks.create(owner, { url: first.url, events: ['*'] }, null)
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  t.equal(await webhooks.publisher.deliveries.countDocuments({}), 0, 'the publish kept the event only')
  t.match(await webhooks.publisher.events.findOne({}), { fannedOut: false })
  clock.advance(1000)
  await webhooks.create(owner, { url: later.url, events: ['*'] }, null)
  t.equal(await drain(), 1, 'one delivery, to the webhook that existed when the event was kept')
  t.equal(first.received.length, 1)
  t.equal(later.received.length, 0)
  t.equal(await webhooks.publisher.events.countDocuments({ fannedOut: false }), 0, 'fanned out by the job')
})

t.test('an event goes to the webhooks that took it when it was kept, whatever happens to them before their jobs run', async (t) => {
  const { webhooks, owner, drain } = await engine(t)
  const first = await receiver(t)
  const second = await receiver(t)
  const { webhook: taker } = await webhooks.create(owner, { url: first.url, events: ['*'] }, null)
  const { webhook: paused } = await webhooks.create(owner, { url: second.url, events: ['*'], active: false }, null)
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  // Before any job ran: the taker is paused, the paused webhook resumed.
  await webhooks.update((await webhooks.find(owner, taker.id))!, { active: false })
  await webhooks.update((await webhooks.find(owner, paused.id))!, { active: true })
  await drain()
  t.equal(first.received.length + second.received.length, 0, 'nothing sent')
  t.match((await webhooks.deliveries((await webhooks.find(owner, taker.id))!)).items, [{ status: 'skipped' }], 'the taker\'s delivery is kept, skipped: paused before it went out')
  t.same((await webhooks.deliveries((await webhooks.find(owner, paused.id))!)).items, [], 'a webhook paused when the event was kept does not get it (a replay would)')
  t.equal(await webhooks.publisher.events.countDocuments({ fannedOut: false }), 0)
})

t.test('a fan-out makes the other takers\' jobs due before it marks the page done: a failure between leaves the page to fan out again', async (t) => {
  const { webhooks, owner, queue, drain } = await engine(t)
  const one = await receiver(t)
  const two = await receiver(t)
  const { webhook: a } = await webhooks.create(owner, { url: one.url, events: ['*'] }, null)
  const { webhook: b } = await webhooks.create(owner, { url: two.url, events: ['*'] }, null)
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  await queue.jobs.deleteMany({ type: WEBHOOK_DELIVER_JOB })
  const publisher = webhooks.publisher as unknown as { queue: (id: string) => Promise<void> }
  const queueJob = publisher.queue.bind(publisher)
  publisher.queue = async (id) => { if (id === b.id) throw new Error('the store refused the job'); await queueJob(id) }
  await t.rejects(webhooks.publisher.fanOut(a.id), /refused the job/)
  t.equal(await webhooks.publisher.events.countDocuments({ fannedOut: false }), 1, 'not marked fanned out')
  publisher.queue = queueJob
  t.equal(await webhooks.publisher.fanOut(a.id), false)
  t.equal(await queue.jobs.countDocuments({ _id: `-key:${WEBHOOK_DELIVER_JOB}:${b.id}` }), 1, 'the other taker\'s job is due')
  await queueJob(a.id)
  await drain()
  t.equal(one.received.length, 1)
  t.equal(two.received.length, 1, 'the other taker gets it, once')
})

t.test('a backlog is fanned out a thousand events a run, the rest by the next runs', async (t) => {
  const { webhooks, owner, drain } = await engine(t)
  const hook = await receiver(t)
  const { webhook } = await webhooks.create(owner, { url: hook.url, events: ['*'] }, null)
  await webhooks.publish('things', 'p1', Array.from({ length: 1100 }, (_, i) => thingEvent(i + 1)))
  t.equal(await webhooks.publisher.fanOut(webhook.id), true, 'events are left for the next run')
  t.equal(await webhooks.publisher.events.countDocuments({ fannedOut: false }), 100)
  t.equal(await webhooks.publisher.fanOut(webhook.id), false)
  t.equal(await webhooks.publisher.deliveries.countDocuments({}), 1100)
  t.equal(await drain(), 1100, 'every event sent once')
})
