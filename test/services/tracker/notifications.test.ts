import t from 'tap'
import type { Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { ManualClock } from '../../../services/platform/clock.js'
import { Cursors } from '../../../services/collections/query.js'
import { openMongoStore } from '../../../services/store/mongodb.js'
import type { Store } from '../../../services/store/types.js'
import { TrackerNotifications, type NotifiedChange } from '../../../services/tracker/notifications.js'
import { TRACKER_COLLECTIONS } from '../../../services/tracker/records.js'
import { MongoDouble } from '../../fixtures/mongo-double/server.js'
import { tempStore } from '../../helper.js'

const HOUR = 3_600_000

/**
 * The notifications' queries on both engines: the embedded store, and the
 * MongoDB engine through the wire-level double (docs/store.md,
 * "Conformance"): the inbox's views (snoozed until the clock passes),
 * counts, mark all read, preferences, and a change written out twice.
 */
async function notificationsOn (t: Test, store: Store): Promise<void> {
  const clock = new ManualClock(Date.UTC(2026, 2, 2, 9))
  const notifications = new TrackerNotifications(store, { clock, cursors: new Cursors(randomBytes(32)) })
  await notifications.init()
  await store.collection(TRACKER_COLLECTIONS.subscribers).insertMany(['ann', 'ben', 'cat', 'dan'].map((userId) => ({ _id: `i1:${userId}`, itemId: 'i1', lpId: 'lp', projectId: 'p', userId })))
  const change = (n: number, named: NotifiedChange['named'] = []): NotifiedChange => ({
    item: { _id: 'i1', projectId: 'p', lpId: 'lp', createdBy: 'ann' }, changeId: `c${n}`, commentId: null, actorId: 'dan', at: clock.now(), fields: ['state'], named, toSubscribers: true
  })
  await notifications.fanOut(change(1, [{ userId: 'ben', reason: 'assignee' }, { userId: 'eve', reason: 'mentioned' }, { userId: 'dan', reason: 'mentioned' }]))
  await notifications.fanOut(change(1))
  const kindsOf = async (userId: string, view?: 'inbox' | 'unread' | 'snoozed' | 'archived') => (await notifications.list('p', userId, { view })).items.map((note) => `${note.changeId}:${note.kind}`)
  t.same([await kindsOf('ann'), await kindsOf('ben'), await kindsOf('cat'), await kindsOf('dan'), await kindsOf('eve')],
    [['c1:created'], ['c1:assigned'], ['c1:subscribed'], [], ['c1:mentioned']], 'one each, the strongest reason, never the actor, twice is once')

  clock.advance(HOUR)
  await notifications.fanOut(change(2))
  const [latest, first] = (await notifications.list('p', 'cat', {})).items
  await notifications.update('p', 'cat', latest.id, { snoozedUntil: new Date(clock.nowMs() + HOUR).toISOString() })
  t.same([await kindsOf('cat'), await kindsOf('cat', 'snoozed'), await notifications.unreadCount('p', 'cat')], [['c1:subscribed'], ['c2:subscribed'], 1])
  clock.advance(2 * HOUR)
  t.same([await kindsOf('cat'), await kindsOf('cat', 'snoozed'), await notifications.unreadCount('p', 'cat')], [['c2:subscribed', 'c1:subscribed'], [], 2], 'awake again once its time passed')
  await notifications.update('p', 'cat', first.id, { archived: true })
  t.same([await kindsOf('cat', 'archived'), await notifications.markAllRead('p', 'cat'), await kindsOf('cat', 'unread')], [['c1:subscribed'], 1, []])
  await t.rejects(notifications.update('p', 'ann', first.id, { read: true }), { code: 'APP_TRACKER_NOTIFICATION_NOT_FOUND' })

  // Pages follow the cursor, newest first.
  const page = await notifications.list('p', 'ann', { limit: 1 })
  t.same([...page.items.map((note) => note.changeId), ...(await notifications.list('p', 'ann', { limit: 1, cursor: page.nextCursor ?? undefined })).items.map((note) => note.changeId)], ['c2', 'c1'])

  t.same(await notifications.setPreferences('p', 'ben', { subscribed: false, assigned: false }), { assigned: false, mentioned: true, created: true, subscribed: false })
  await notifications.fanOut(change(3, [{ userId: 'ben', reason: 'assignee' }]))
  t.same(await kindsOf('ben'), ['c2:subscribed', 'c1:assigned'], 'nothing of c3: ben turned off both its reasons')
  await notifications.purge('lp')
  t.same(await kindsOf('ann'), [])
}

t.test('on the embedded store', async (t) => { await notificationsOn(t, await tempStore(t)) })

t.test('on the MongoDB engine (test double)', async (t) => {
  const double = await new MongoDouble().start()
  const store = await openMongoStore({ url: double.url('serverSelectionTimeoutMS=1500'), db: 'notifications', queryTimeoutMs: 5000 })
  t.teardown(async () => { await store.close(); await double.stop() })
  await notificationsOn(t, store)
})
