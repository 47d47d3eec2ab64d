import t from 'tap'
import type { DataCollection } from '../../../services/collections/records.js'
import { deepFreeze } from '../../../services/platform/deep-freeze.js'
import { TRACKER_COLLECTIONS, type ItemRecord } from '../../../services/tracker/records.js'
import { recordEvent, recordsWebhookSource } from '../../../services/webhooks/sources/records.js'
import { trackerItemEvent, trackerWebhookSource } from '../../../services/webhooks/sources/tracker.js'
import { refusal } from '../../helper.js'
import { PROJECT, trackerOn } from '../tracker/fixture.js'
import { engine, receiver } from './fixtures.js'

t.test('the tracker: one bulk patch of 10 items, two fields each, is 10 events, however often its outboxes are published', async (t) => {
  const { tracker, project, store } = await trackerOn(t)
  const { admin } = await project()
  const items = store.collection<ItemRecord>(TRACKER_COLLECTIONS.items)
  const { webhooks, drain } = await engine(t, { source: null })
  const source = trackerWebhookSource({ project: async (lpId) => await tracker.projects.record(lpId), items, publish: async (name, projectId, events) => { await webhooks.publish(name, projectId, events) } })
  webhooks.registerSource(source)
  const owner = { projectId: PROJECT, source: 'tracker' }
  const everything = await receiver(t)
  const urgent = await receiver(t)
  const never = await receiver(t)
  await webhooks.create(owner, { url: everything.url, events: ['*'] }, 'alice')
  await webhooks.create(owner, { url: urgent.url, events: ['work_item.updated'], filter: { field: 'priority', op: 'eq', value: 'urgent' } }, 'alice')
  await webhooks.create(owner, { url: never.url, events: ['work_item.updated'], filter: { field: 'priority', op: 'eq', value: 'low' } }, 'alice')
  t.match(await refusal(webhooks.create(owner, { url: never.url, events: ['*'], filter: { field: 'nope', op: 'eq', value: 1 } }, 'alice')), { status: 400, code: 'APP_TRACKER_INVALID_FILTER' }, 'the tracker\'s grammar checks the filter')

  // What ItemStore.flush will do after each item write: publish the item's outbox.
  const flush = async (id: string): Promise<void> => {
    const item = (await items.findOne({ _id: id }))!
    const event = trackerItemEvent(item, item.outbox!, admin.project.identifier)
    if (event !== null) await webhooks.publish('tracker', item.projectId, [event])
  }
  const ids: string[] = []
  for (let i = 0; i < 10; i++) ids.push((await tracker.workItems.create(admin, { title: `Item ${i}` })).id)
  for (const id of ids) await flush(id)
  await tracker.workItems.bulkPatch(admin, { ids, patch: { priority: 'urgent', targetDate: '2026-03-20' } })
  for (const id of ids) await flush(id)
  await webhooks.sweep()
  await drain()

  t.equal(everything.received.filter((request) => request.body.type === 'work_item.created').length, 10)
  const updates = everything.received.filter((request) => request.body.type === 'work_item.updated')
  t.equal(updates.length, 10, '10 updates, not 20, after the flush and the sweep both published them')
  t.same(Object.keys(updates[0].body.changes as object).sort(), ['priority', 'targetDate'], 'both fields of the change in one event')
  t.match(updates[0].body, { actor: { type: 'user', id: 'alice' }, data: { key: /^WEB-\d+$/, priority: 'urgent' }, changes: { priority: { from: 'none', to: 'urgent' } } })
  t.equal(urgent.received.length, 10, 'the tracker filter matched every urgent item')
  t.equal(never.received.length, 0, 'and nothing for a filter they do not match')
})

t.test('the tracker\'s sweep reads only the projects with a tracker subscription', async (t) => {
  const { tracker, project, store } = await trackerOn(t)
  const { admin } = await project()
  const items = store.collection<ItemRecord>(TRACKER_COLLECTIONS.items)
  const { webhooks } = await engine(t, { source: null })
  const published: string[] = []
  const read: string[] = []
  webhooks.registerSource(trackerWebhookSource({
    project: async (lpId) => { read.push(lpId); return await tracker.projects.record(lpId) },
    items,
    publish: async (name, projectId, events) => { published.push(projectId); await webhooks.publish(name, projectId, events) }
  }))
  const made = await tracker.workItems.create(admin, { title: 'Subscribed' })
  // An item of another platform project that has no tracker webhook, its outbox still held as after a write.
  const stored = (await items.findOne({ _id: made.id }))!
  await items.insertOne({ ...stored, _id: 'elsewhere-item', projectId: 'elsewhere', seq: 999_999 })

  await webhooks.sweep()
  t.same(published, [], 'no subscription anywhere: the sweep publishes nothing')
  t.same(read, [], 'and reads no item')
  const receiving = await receiver(t)
  await webhooks.create({ projectId: PROJECT, source: 'tracker' }, { url: receiving.url, events: ['*'] }, 'alice')
  await webhooks.sweep()
  t.same(published, [PROJECT], 'the subscribed project\'s item is published again; the other project\'s is not read')
})

const posts: DataCollection = deepFreeze({
  name: 'posts',
  fields: [{ name: 'title', type: 'text' }, { name: 'secret', type: 'text' }, { name: 'views', type: 'number' }],
  indexes: [],
  methods: {
    list: { enabled: true, rule: { requireAuth: false, deny: ['secret'] } },
    get: { enabled: true, rule: null },
    create: { enabled: true, rule: null },
    update: { enabled: true, rule: null },
    delete: { enabled: true, rule: null },
    upload: { enabled: false, rule: null },
    download: { enabled: false, rule: null },
    fileDelete: { enabled: false, rule: null }
  }
} as DataCollection)

t.test('records: collections, a Store filter, a field mask, and denied fields never leave', async (t) => {
  const { webhooks, drain } = await engine(t, { source: recordsWebhookSource({ collection: async (_projectId, name) => name === 'posts' ? posts : null }) })
  const owner = { projectId: 'p1', source: 'records' }
  const all = await receiver(t)
  const popular = await receiver(t)
  await webhooks.create(owner, { url: all.url, events: ['record.created', 'record.updated', 'record.deleted'], filter: { collections: ['posts'] } }, null)
  await webhooks.create(owner, { url: popular.url, events: ['record.updated'], filter: { collections: ['posts'], where: { views: { $gte: 100 } }, fields: ['title'] } }, null)
  t.match(await refusal(webhooks.create(owner, { url: all.url, events: ['*'], filter: { collections: ['nope'] } }, null)), { code: 'APP_VALIDATION_FAILED', details: { fields: [{ path: 'body.filter.collections[0]' }] } })
  t.match(await refusal(webhooks.create(owner, { url: all.url, events: ['*'], filter: { collections: ['posts'], where: { secret: 'x' } } }, null)), { code: 'APP_INVALID_FILTER' }, 'no filter on a denied field')
  t.match(await refusal(webhooks.create(owner, { url: all.url, events: ['*'], filter: { collections: ['posts'], fields: ['secret'] } }, null)), { code: 'APP_VALIDATION_FAILED', details: { fields: [{ path: 'body.filter.fields' }] } }, 'nor a mask asking for one')

  const at = new Date(Date.UTC(2026, 0, 1))
  const v1 = { _id: 'r1', title: 'Hello', secret: 's3cret', views: 5, createdAt: at, updatedAt: at, version: 1 }
  const v2 = { ...v1, views: 150, secret: 'other', updatedAt: at, version: 2 }
  const events = [
    recordEvent({ collection: 'posts', type: 'record.created', record: v1, actor: { type: 'endUser', id: 'u1' }, at }),
    recordEvent({ collection: 'posts', type: 'record.updated', record: v2, before: v1, actor: { type: 'endUser', id: 'u1' }, at }),
    recordEvent({ collection: 'posts', type: 'record.deleted', record: v2, actor: { type: 'admin', id: 'a1' }, at })
  ]
  t.same(events.map((event) => event.key), ['posts:r1:v1', 'posts:r1:v2', 'posts:r1:deleted'], 'keyed by the version each write made')
  await webhooks.publish('records', 'p1', [...events, ...events])
  await drain()
  t.same(all.received.map((request) => request.body.type), ['record.created', 'record.updated', 'record.deleted'], 'once each')
  t.notOk(all.received.some((request) => request.rawBody.includes('s3cret') || request.rawBody.includes('"secret"')), 'the denied field is in no payload, nor in changes')
  t.same(all.received[1].body.changes, { views: { from: 5, to: 150 } })
  t.same(popular.received.map((request) => request.body.data), [{ collection: 'posts', record: { id: 'r1', title: 'Hello', createdAt: at.toISOString(), updatedAt: at.toISOString(), version: 2 } }], 'the filter on views and the mask to title')
})
