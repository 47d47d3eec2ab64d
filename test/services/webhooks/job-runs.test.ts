import t from 'tap'
import { WEBHOOK_DELIVER_JOB } from '../../../services/webhooks/index.js'
import { engine, receiver, thingEvent } from './fixtures.js'

t.test('a run in which a delivery cannot be attempted (the store failing) defers the webhook\'s job: it is never spent, and the delivery goes out later', async (t) => {
  const { webhooks, queue, clock, owner, drain } = await engine(t)
  const hook = await receiver(t)
  await webhooks.create(owner, { url: hook.url, events: ['*'] }, null)
  // The webhook's events cannot be read: none is fanned out or sent, and no attempt is made.
  const events = webhooks.publisher.events
  const find = events.find.bind(events)
  let failing = true
  events.find = (...args) => {
    if (failing) throw new Error('disk I/O error')
    return find(...args)
  }
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  // Far more runs than a job's attempts: each fails, none may use the job up.
  for (let run = 0; run < 8; run++) {
    await drain()
    clock.advance(60_000)
  }
  const [job] = await queue.jobs.find({ type: WEBHOOK_DELIVER_JOB }).toArray()
  t.match(job, { status: 'queued', lastError: /events could not be fanned out: disk I\/O error/ }, 'the job waits for its next run, not dead')
  t.equal(hook.received.length, 0, 'nothing sent while its event cannot be read')
  failing = false
  clock.advance(60_000)
  await drain()
  t.equal(hook.received.length, 1, 'once the store answers, the delivery is sent')
})

t.test('a batch whose settling write fails defers the webhook\'s job: it is never spent, and the deliveries are settled by a later run', async (t) => {
  const { webhooks, queue, clock, owner, drain } = await engine(t)
  const hook = await receiver(t)
  await webhooks.create(owner, { url: hook.url, events: ['*'] }, null)
  // Two deliveries sent alike are settled by one grouped write: make that write fail.
  const deliveries = webhooks.publisher.deliveries
  const updateMany = deliveries.updateMany.bind(deliveries)
  let failing = true
  deliveries.updateMany = async (...args) => {
    if (failing) throw new Error('disk I/O error')
    return await updateMany(...args)
  }
  await webhooks.publish('things', 'p1', [thingEvent(1), thingEvent(2)])
  for (let run = 0; run < 8; run++) {
    await drain()
    clock.advance(60_000)
  }
  const [job] = await queue.jobs.find({ type: WEBHOOK_DELIVER_JOB }).toArray()
  t.match(job, { status: 'queued', lastError: /a delivery could not be attempted: disk I\/O error/ }, 'the job waits for its next run, not dead')
  t.ok(hook.received.length >= 2, 'the requests went out (at least once each)')
  failing = false
  clock.advance(60_000)
  await drain()
  const settled = await deliveries.find({}).toArray()
  t.same(settled.map((delivery) => delivery.status), ['delivered', 'delivered'], 'once the store answers, both are settled as delivered')
})
