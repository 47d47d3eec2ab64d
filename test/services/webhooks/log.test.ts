import t from 'tap'
import { refusal } from '../../helper.js'
import { engine, receiver, thingEvent } from './fixtures.js'

t.test('redeliver: the same event id again, now, even while a retry waits', async (t) => {
  const { webhooks, clock, owner, drain } = await engine(t)
  const hook = await receiver(t, [{ status: 200 }, { status: 500 }])
  const { webhook } = await webhooks.create(owner, { url: hook.url, events: ['*'] }, null)
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  await drain()
  let subscription = (await webhooks.find(owner, webhook.id))!
  const [delivered] = (await webhooks.deliveries(subscription)).items
  const again = await webhooks.redeliver(subscription, delivered.id)
  t.match(again, { id: delivered.id, status: 'pending', trigger: 'redeliver', attempts: 0 })
  await drain()
  t.equal(hook.received.length, 2)
  t.equal(hook.received[1].body.id, hook.received[0].body.id, 'receivers deduplicate by the same id')
  t.equal(hook.received[1].headers['plinth-delivery-attempt'], '1', 'a new round counts its attempts afresh')
  t.match(await webhooks.delivery(subscription, delivered.id), { status: 'retrying', trigger: 'redeliver' }, 'the redelivery got a 500 and waits for its retry')

  await webhooks.redeliver(subscription, delivered.id)
  t.equal(await drain(), 1, 'a redelivery does not wait out the retry')
  t.equal(hook.received.length, 3)
  t.match(await webhooks.delivery(subscription, delivered.id), { status: 'delivered' })
  const log = (await webhooks.attempts(subscription, {}, { deliveryId: delivered.id })).items
  t.same(log.map((attempt) => [attempt.trigger, attempt.outcome]), [['redeliver', 'delivered'], ['redeliver', 'retry'], ['event', 'delivered']], 'the log, newest first')
  clock.advance(3_600_000)
  t.equal(await drain(), 0, 'the earlier round\'s retry does not send it again')

  t.equal((await refusal(webhooks.redeliver(subscription, 'no-such-delivery'))).code, 'APP_WEBHOOK_DELIVERY_NOT_FOUND')
  const other = await webhooks.create(owner, { url: hook.url, events: ['*'] }, null)
  t.equal((await refusal(webhooks.redeliver((await webhooks.find(owner, other.webhook.id))!, delivered.id))).code, 'APP_WEBHOOK_DELIVERY_NOT_FOUND', 'another webhook\'s delivery is not found')
  subscription = (await webhooks.find(owner, webhook.id))!
  await webhooks.update(subscription, { active: false })
  t.equal((await refusal(webhooks.redeliver((await webhooks.find(owner, webhook.id))!, delivered.id))).code, 'APP_WEBHOOK_INACTIVE')
})

t.test('replay a time range: what it missed while disabled, what failed, and what was delivered unless only failures are asked', async (t) => {
  const { webhooks, clock, owner, drain } = await engine(t)
  const hook = await receiver(t)
  const { webhook } = await webhooks.create(owner, { url: hook.url, events: ['thing.updated'] }, null)
  const at = (n: number) => new Date(Date.UTC(2026, 0, 1) + n * 60_000)
  await webhooks.publish('things', 'p1', [thingEvent(1, { occurredAt: at(1) })])
  await drain()
  let subscription = (await webhooks.find(owner, webhook.id))!
  await webhooks.update(subscription, { active: false })
  await webhooks.publish('things', 'p1', [thingEvent(2, { occurredAt: at(2) }), thingEvent(3, { occurredAt: at(3), type: 'thing.created' }), thingEvent(4, { occurredAt: at(4) })])
  await webhooks.publish('things', 'p1', [thingEvent(9, { occurredAt: at(9) })])
  t.equal(await drain(), 0)
  t.equal(hook.received.length, 1)

  subscription = (await webhooks.find(owner, webhook.id))!
  t.equal((await refusal(webhooks.replay(subscription, { from: at(0), to: at(5) }))).code, 'APP_WEBHOOK_INACTIVE')
  await webhooks.update(subscription, { active: true })
  subscription = (await webhooks.find(owner, webhook.id))!
  t.equal((await refusal(webhooks.replay(subscription, { from: at(5), to: at(5) }))).code, 'APP_WEBHOOK_INVALID_RANGE')
  t.equal((await refusal(webhooks.replay(subscription, { from: new Date(clock.nowMs() - 31 * 86_400_000), to: at(5) }))).code, 'APP_WEBHOOK_INVALID_RANGE', 'not further back than events are kept')

  const onlyFailed = await webhooks.replay(subscription, { from: at(0), to: at(5), onlyFailed: true })
  t.same(onlyFailed, { matched: 3, queued: 2, truncated: false, through: at(4).toISOString() }, 'the created event is not a type it takes; the delivered one is left alone')
  await drain()
  t.same(hook.received.slice(1).map((request) => request.body.data.id), ['thing-2', 'thing-4'], 'oldest first, and not thing-9 outside the range')

  const all = await webhooks.replay(subscription, { from: at(0), to: at(5) })
  t.same(all, { matched: 3, queued: 3, truncated: false, through: at(4).toISOString() })
  await drain()
  t.equal(hook.received.length, 6)
  t.same(hook.received.slice(3).map((request) => request.body.id), [hook.received[0].body.id, hook.received[1].body.id, hook.received[2].body.id], 'a replay sends the same event ids')
  t.same((await webhooks.deliveries(subscription)).items.map((delivery) => delivery.trigger), ['replay', 'replay', 'replay'])
})

t.test('the test action: a sample event sent once now, in the log, that neither counts as a failure nor is redelivered', async (t) => {
  const { webhooks, owner } = await engine(t)
  const hook = await receiver(t, [{ status: 200, body: 'thanks' }, { status: 500 }])
  const { webhook } = await webhooks.create(owner, { url: hook.url, events: ['thing.updated', 'thing.deleted'] }, null)
  const subscription = (await webhooks.find(owner, webhook.id))!
  const sent = await webhooks.test(subscription)
  t.match(sent, { outcome: 'delivered', responseStatus: 200, responseExcerpt: 'thanks', trigger: 'test', type: 'thing.updated' })
  t.match(hook.received[0].body, { type: 'thing.updated', test: true, data: { id: 'thing-sample' }, actor: { type: 'user', id: 'u-sample' } })
  const failed = await webhooks.test(subscription, 'thing.deleted')
  t.match(failed, { outcome: 'failed', responseStatus: 500, retryAt: null }, 'a test is not retried')
  t.equal(hook.received.length, 2)
  t.match(await webhooks.find(owner, webhook.id), { failures: { count: 0, since: null } }, 'nor counted against the webhook')
  t.equal((await refusal(webhooks.redeliver(subscription, failed.deliveryId))).code, 'APP_WEBHOOK_TEST_DELIVERY')
  t.equal((await refusal(webhooks.test(subscription, 'thing.exploded'))).code, 'APP_WEBHOOK_UNKNOWN_EVENT')
})

t.test('lists page with sealed cursors bound to their list', async (t) => {
  const { webhooks, owner, drain } = await engine(t)
  const hook = await receiver(t)
  const { webhook } = await webhooks.create(owner, { url: hook.url, events: ['*'] }, null)
  await webhooks.publish('things', 'p1', Array.from({ length: 5 }, (_, i) => thingEvent(i + 1)))
  await drain()
  const subscription = (await webhooks.find(owner, webhook.id))!
  const first = await webhooks.deliveries(subscription, { limit: 3 })
  t.equal(first.items.length, 3)
  t.type(first.nextCursor, 'string')
  const second = await webhooks.deliveries(subscription, { limit: 3, cursor: first.nextCursor! })
  t.equal(second.items.length, 2)
  t.equal(second.nextCursor, null)
  t.equal(new Set([...first.items, ...second.items].map((delivery) => delivery.id)).size, 5)
  t.equal((await refusal(webhooks.attempts(subscription, { cursor: first.nextCursor! }))).code, 'APP_INVALID_CURSOR', 'a deliveries cursor is no attempts cursor')
})
