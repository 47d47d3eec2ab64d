import t from 'tap'
import { TRACKER_COLLECTIONS, type ItemRecord } from '../../../services/tracker/records.js'
import { WEBHOOK_COLLECTIONS, type DeliveryRecord, type EventRecord } from '../../../services/webhooks/records.js'
import { trackerSetup } from './fixtures.js'

/**
 * The tracker as the webhook engine's `tracker` source (docs/webhooks.md,
 * "The tracker"): each item write publishes its one event from the outbox it
 * left, and the sweep publishes an outbox whose write was cut short before
 * its publish. The webhook's URL is never called here (no delivery job runs).
 */
t.test('item writes through the API become webhook events, and the sweep catches a publish a crash skipped', async (t) => {
  const { app, owner, projectId, lp, must } = await trackerSetup(t, { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' })
  const events = app.store.collection<EventRecord>(WEBHOOK_COLLECTIONS.events)
  const deliveries = app.store.collection<DeliveryRecord>(WEBHOOK_COLLECTIONS.deliveries)
  const items = app.store.collection<ItemRecord>(TRACKER_COLLECTIONS.items)
  const { webhook } = await app.webhooks.create({ projectId, source: 'tracker' }, { url: 'http://127.0.0.1:9/hook', events: ['*'] }, owner.id)

  const item = await must('POST', `${lp}/work-items`, owner.auth, { title: 'Publish me' })
  await must('PATCH', `${lp}/work-items/${item.id}`, owner.auth, { priority: 'urgent', title: 'Published' })
  await must('POST', `${lp}/work-items`, owner.auth, { title: 'A draft', draft: true })
  const published = await events.find({ projectId, source: 'tracker' }, { sort: { occurredAt: 1, _id: 1 } }).toArray()
  t.same(published.map((event) => event.type), ['work_item.created', 'work_item.updated'], 'one event per write, none for the draft')
  const stored = (await items.findOne({ _id: item.id }))!
  t.equal(published[1].key, `${item.id}:${stored.outbox!.id}`, 'keyed by the change the outbox holds')
  t.same(Object.keys(published[1].changes ?? {}).sort(), ['priority', 'title'], 'both fields of the patch in one event')
  t.match(published[1].data, { key: 'WEB-1', priority: 'urgent' })
  t.equal(await deliveries.countDocuments({ subscriptionId: webhook.id }), 2, 'a delivery for each')

  // A write whose process died after its update and before its publish: the outbox holds a change nobody published.
  // (The app's own sweep, a recurring job, may get to it first on a slow machine; either way it is the sweep.)
  const changeId = 'crashed-change'
  await items.updateOne({ _id: item.id }, { $set: { outbox: { ...stored.outbox!, id: changeId, entries: [{ field: 'title', from: 'Published', to: 'After a crash' }] }, title: 'After a crash', updatedAt: new Date() } })
  t.ok((await app.webhooks.sweep()).swept.includes('tracker'), 'the tracker is a registered source')
  t.match(await events.findOne({ key: `${item.id}:${changeId}` }), { type: 'work_item.updated', changes: { title: { from: 'Published', to: 'After a crash' } } }, 'the sweep published it')
  t.equal(await events.countDocuments({ projectId, source: 'tracker' }), 3, 'and nothing twice')
})
