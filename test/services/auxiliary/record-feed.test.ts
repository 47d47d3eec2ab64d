import t from 'tap'
import { ManualClock } from '../../../services/platform/clock.js'
import { newId } from '../../../services/platform/ids.js'
import { projectCollectionName } from '../../../services/projects/naming.js'
import { RECORD_CHANGES, RECORD_CHANGE_SETTLE_MS, RecordFeed } from '../../../services/auxiliary/record-feed.js'
import { WEBHOOK_COLLECTIONS, type EventRecord } from '../../../services/webhooks/records.js'
import { call } from '../../helper.js'
import { auxiliarySetup } from '../../routes/auxiliary/fixtures.js'

t.test('a project without record webhooks writes no feed entries', async (t) => {
  const { app, projectId, data } = await auxiliarySetup(t)
  await call(app, 'POST', data, {}, { title: 'unwatched' })
  t.equal(await app.auxiliary.feed.armed(projectId), false)
  t.equal(await app.store.collection(RECORD_CHANGES).countDocuments({}), 0)
  t.equal(await app.store.collection(WEBHOOK_COLLECTIONS.events).countDocuments({}), 0)
})

t.test('saving a record webhook arms the feed first, whichever way it is saved: every write after the answer is logged', async (t) => {
  const { app, owner, projectId, data, base } = await auxiliarySetup(t)
  const events = app.store.collection<EventRecord>(WEBHOOK_COLLECTIONS.events)
  t.equal(await app.auxiliary.feed.armed(projectId), false)
  // The engine's own create (as any future caller of it would save one), not the route: the source's hook arms.
  await app.webhooks.create({ projectId, source: 'records' }, { url: 'http://127.0.0.1:9/hook', events: ['*'], filter: { collections: ['posts'] } }, owner.id)
  t.equal(await app.auxiliary.feed.armed(projectId), true, 'armed before the engine answered')
  await call(app, 'POST', data, {}, { title: 'seen' })
  await app.auxiliary.feed.settled()
  t.equal(await events.countDocuments({ projectId }), 1, 'the write after the answer is logged')
  await call(app, 'POST', `${base}/webhooks`, owner.auth, { url: 'http://127.0.0.1:9/hook', events: ['*'], filter: { collections: ['posts'] } })
  await call(app, 'POST', data, {}, { title: 'seen again' })
  await app.auxiliary.feed.settled()
  t.equal(await events.countDocuments({ projectId }), 2, 'one event per write, with two webhooks as with one')
})

t.test('the sweep publishes a pending entry whose write was made, drops one whose write was not, and never twice', async (t) => {
  const { app, projectId, owner } = await auxiliarySetup(t)
  const clock = new ManualClock(Date.now())
  const events = app.store.collection<EventRecord>(WEBHOOK_COLLECTIONS.events)
  const feed = new RecordFeed({ store: app.store, clock, newId, publish: async (id, list) => { await app.webhooks.publish('records', id, list) } })
  await app.webhooks.create(app.auxiliary.recordWebhooks.owner(projectId), { url: 'http://127.0.0.1:9/hook', events: ['*'], filter: { collections: ['posts'] } }, owner.id)
  const posts = app.store.collection(projectCollectionName(projectId, 'posts'))
  const at = clock.now()
  const made = { _id: 'made', title: 'written, then the process died', createdAt: at, updatedAt: at, version: 1 }
  const lost = { _id: 'lost', title: 'never written', createdAt: at, updatedAt: at, version: 1 }
  const actor = { type: 'anonymous' as const, id: null }
  // Two writes whose process died between the entry and the settle: one record reached the store, one did not.
  t.ok(await feed.begin(projectId, () => [{ collection: 'posts', type: 'record.created', record: made, before: null, actor, at }]))
  await posts.insertOne(made)
  t.ok(await feed.begin(projectId, () => [{ collection: 'posts', type: 'record.created', record: lost, before: null, actor, at }]))

  t.same(await feed.republish(), { published: 0, dropped: 0 }, 'young entries may still be settled by their own write')
  clock.advance(RECORD_CHANGE_SETTLE_MS + 1)
  t.same(await feed.republish(), { published: 1, dropped: 1 })
  t.equal(await app.store.collection(RECORD_CHANGES).countDocuments({}), 0, 'both entries settled')
  const published = await events.find({ projectId }).toArray()
  t.same(published.map((event) => event.key), ['posts:made:v1'])

  // The same write published again (a sweep racing the write's own settle): the key makes it the same event.
  t.ok(await feed.begin(projectId, () => [{ collection: 'posts', type: 'record.created', record: made, before: null, actor, at }]))
  clock.advance(RECORD_CHANGE_SETTLE_MS + 1)
  t.same(await feed.republish(), { published: 1, dropped: 0 })
  t.equal(await events.countDocuments({ projectId }), 1, 'still one event')
})

t.test('writes settled together are published in one engine call per project and their entries removed; a failed publish leaves them to the sweep', async (t) => {
  const { app, projectId } = await auxiliarySetup(t)
  const clock = new ManualClock(Date.now())
  const calls: Array<{ projectId: string, keys: string[] }> = []
  let refuse = false
  const feed = new RecordFeed({
    store: app.store,
    clock,
    newId,
    publish: async (id, list) => {
      if (refuse) throw new Error('the engine is down')
      calls.push({ projectId: id, keys: list.map((event) => event.key) })
    }
  })
  await feed.arm(projectId)
  const at = clock.now()
  const actor = { type: 'anonymous' as const, id: null }
  const write = async (id: string): Promise<void> => {
    const batch = await feed.begin(projectId, () => [{ collection: 'posts', type: 'record.created', record: { _id: id, createdAt: at, updatedAt: at, version: 1 }, before: null, actor, at }])
    await batch?.done()
  }
  await Promise.all(['a', 'b', 'c'].map(write))
  t.same(calls, [], 'an acknowledged write does not wait for its publish: its entry already makes the event durable')
  await feed.settled()
  t.same(calls, [{ projectId, keys: ['posts:a:v1', 'posts:b:v1', 'posts:c:v1'] }], 'one engine call for the three writes')
  t.equal(await app.store.collection(RECORD_CHANGES).countDocuments({}), 0, 'their entries removed')

  refuse = true
  await write('d')
  await feed.settled()
  t.equal(await app.store.collection(RECORD_CHANGES).countDocuments({}), 1, 'a publish that failed leaves its entry pending')
  refuse = false
  clock.advance(RECORD_CHANGE_SETTLE_MS + 1)
  await app.store.collection(projectCollectionName(projectId, 'posts')).insertOne({ _id: 'd', createdAt: at, updatedAt: at, version: 1 })
  t.same(await feed.republish(), { published: 1, dropped: 0 }, 'and the sweep publishes it')
  t.same(calls.at(-1), { projectId, keys: ['posts:d:v1'] })
})

t.test('an armed project whose record webhooks are all deleted writes no entries, until it has one again or a realtime stream', async (t) => {
  const { app, owner, projectId, data } = await auxiliarySetup(t)
  const published: string[][] = []
  app.auxiliary.feed.onPublish(async (_projectId, events) => { published.push(events.map((event) => event.type)) })
  const created = await app.webhooks.create({ projectId, source: 'records' }, { url: 'http://127.0.0.1:9/hook', events: ['*'], filter: { collections: ['posts'] } }, owner.id)
  const webhook = await app.auxiliary.recordWebhooks.find(projectId, created.webhook.id)
  if (webhook === null) throw new Error('the webhook was not saved')
  await app.webhooks.delete(webhook)
  t.equal(await app.auxiliary.feed.armed(projectId), true, 'the project stays armed')
  const begun = await app.auxiliary.feed.begin(projectId, () => { throw new Error('no change is asked for') })
  t.equal(begun, null, 'a write with no one to read its change logs nothing')
  await call(app, 'POST', data, {}, { title: 'unread' })
  await app.auxiliary.feed.settled()
  t.same(published, [], 'nothing published')
  t.equal(await app.store.collection(RECORD_CHANGES).countDocuments({}), 0)

  await app.webhooks.create({ projectId, source: 'records' }, { url: 'http://127.0.0.1:9/hook', events: ['*'], active: false }, owner.id)
  await call(app, 'POST', data, {}, { title: 'kept for a replay' })
  await app.auxiliary.feed.settled()
  t.same(published, [['record.created']], 'a paused webhook still has its events kept')

  const other = await auxiliarySetup(t)
  await other.app.auxiliary.feed.armRealtime(other.projectId)
  const streamed: string[][] = []
  other.app.auxiliary.feed.onPublish(async (_projectId, events) => { streamed.push(events.map((event) => event.type)) })
  await call(other.app, 'POST', other.data, {}, { title: 'streamed' })
  await other.app.auxiliary.feed.settled()
  t.same(streamed, [['record.created']], 'a project followed by realtime logs every write, webhook or not')
})

t.test('a deleted project\'s pending entries go with it, found without a project index (an earlier build\'s is dropped)', async (t) => {
  const { app, projectId, owner } = await auxiliarySetup(t)
  const entries = app.store.collection(RECORD_CHANGES)
  await entries.createIndex({ projectId: 1 })
  const feed = new RecordFeed({ store: app.store, clock: new ManualClock(Date.now()), newId, publish: async () => {} })
  await feed.init()
  t.notOk((await entries.listIndexes()).some((index) => 'projectId' in index.key), 'the project index is gone')
  await app.webhooks.create(app.auxiliary.recordWebhooks.owner(projectId), { url: 'http://127.0.0.1:9/hook', events: ['*'], filter: { collections: ['posts'] } }, owner.id)
  const at = new Date()
  const actor = { type: 'anonymous' as const, id: null }
  const record = (id: string) => ({ _id: id, title: id, createdAt: at, updatedAt: at, version: 1 })
  await feed.arm('other-project')
  t.ok(await feed.begin(projectId, () => [{ collection: 'posts', type: 'record.created', record: record('mine'), before: null, actor, at }]))
  t.ok(await feed.begin('other-project', () => [{ collection: 'posts', type: 'record.created', record: record('theirs'), before: null, actor, at }]))
  await feed.purgeProject(projectId)
  t.same((await entries.find({}).toArray()).map((entry) => entry.recordId), ['theirs'], 'only the other project\'s entry is left')
  t.equal(await feed.armed(projectId), false)
})
