import t from 'tap'
import { WEBHOOK_DELIVER_JOB } from '../../../services/webhooks/index.js'
import { engine, receiver, thingEvent } from './fixtures.js'

t.test('a delivery job queued by an earlier release (keyed by the delivery) still makes that delivery\'s attempt, once', async (t) => {
  const { webhooks, queue, owner, drain } = await engine(t)
  const hook = await receiver(t)
  const { webhook } = await webhooks.create(owner, { url: hook.url, events: ['*'] }, null)
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  // What an upgrade finds: the delivery (made by the publish in that release), its own job, and none for the webhook.
  await webhooks.publisher.fanOut(webhook.id)
  await queue.jobs.deleteMany({ type: WEBHOOK_DELIVER_JOB })
  const [delivery] = await webhooks.publisher.deliveries.find({}).toArray()
  await queue.enqueueKeyed(WEBHOOK_DELIVER_JOB, delivery._id, { deliveryId: delivery._id })
  t.equal(await drain(), 1, 'one attempt')
  t.equal(hook.received.length, 1)
  t.equal(hook.received[0].body.id, delivery._id)
  t.match(await webhooks.publisher.deliveries.findOne({ _id: delivery._id }), { status: 'delivered' })
  await queue.enqueueKeyed(WEBHOOK_DELIVER_JOB, delivery._id, { deliveryId: delivery._id })
  t.equal(await drain(), 0, 'a delivered one is not sent again')
})
