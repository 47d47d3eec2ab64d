import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { buildTestApp, call, testEngine } from '../../helper.js'
import { notesProject, REALTIME_TEST_ENV, endUsers } from './fixtures.js'
import { SseStream } from './sse-client.js'
import { REALTIME_LEASES } from '../../../services/realtime/leases.js'

/** The notes project on one app, and a second app listening over the same store. */
async function twoInstances (t: Test) {
  // One store for both: the DATA_DIR (and, on MongoDB, the database and the master key its tokens derive from).
  const shared: Record<string, string> = testEngine === 'mongodb' ? { PLINTH_MASTER_KEY: randomBytes(32).toString('base64') } : {}
  const first = await notesProject(t, shared)
  const second = await buildTestApp(t, {
    env: { ...REALTIME_TEST_ENV, ...shared, DATA_DIR: first.app.config.dataDir, ...(testEngine === 'mongodb' ? { MONGODB_DB: first.app.config.mongodbDb } : {}) }
  })
  const secondBase = await second.listen({ port: 0, host: '127.0.0.1' })
  return { first, second, secondBase }
}

t.test('two app instances on one store: a write through one reaches a subscriber of the other', async (t) => {
  const { first, second, secondBase } = await twoInstances(t)
  const ann = await first.register('ann@example.com')
  const onSecond = endUsers(t, second, first.projectId, secondBase)
  const feed = await onSecond.stream(ann.auth, [{ collection: 'notes' }])
  await feed.nextOf('ready')
  const note = await first.write('POST', 'notes', ann.auth, { title: 'written through the first', secret: 'x' })
  const seen = await feed.nextOf('create')
  t.same([seen?.data.record.id, seen?.data.record.title, 'secret' in (seen?.data.record ?? {})], [note.id, 'written through the first', false], 'the second instance sends it, masked')
  const back = await onSecond.write('PUT', `notes/${note.id}`, ann.auth, { title: 'and edited through the second' })
  t.same([(await feed.nextOf('update'))?.data.record.title, back.id], ['and edited through the second', note.id], 'its own writes too')
})

t.test('a user deleted through one instance loses their stream on the other at once, not at the next recheck', async (t) => {
  const shared: Record<string, string> = testEngine === 'mongodb' ? { PLINTH_MASTER_KEY: randomBytes(32).toString('base64') } : {}
  const env = { ...shared, REALTIME_RECHECK_MS: '3600000' }
  const first = await notesProject(t, env)
  const second = await buildTestApp(t, {
    env: { ...REALTIME_TEST_ENV, ...env, DATA_DIR: first.app.config.dataDir, ...(testEngine === 'mongodb' ? { MONGODB_DB: first.app.config.mongodbDb } : {}) }
  })
  const secondBase = await second.listen({ port: 0, host: '127.0.0.1' })
  const usersDefinition = `/api/projects/${first.projectId}/collections/_users`
  const current = (await call(first.app, 'GET', usersDefinition, first.admin.auth)).body.data
  t.equal((await call(first.app, 'PUT', usersDefinition, first.admin.auth, { fields: current.fields, methods: { delete: { enabled: true, rule: null } } })).status, 200)
  const ann = await first.register('ann@example.com')
  const carl = await first.register('carl@example.com')
  const onSecond = endUsers(t, second, first.projectId, secondBase)
  const carls = await onSecond.stream(carl.auth, [{ collection: 'notes' }])
  const anns = await onSecond.stream(ann.auth, [{ collection: 'notes' }])
  await carls.nextOf('ready')
  await anns.nextOf('ready')
  t.equal((await call(first.app, 'DELETE', `/api/p/${first.projectId}/_users/${carl.id}`, first.admin.auth)).status, 200, 'carl is deleted through the first')
  // Logged after the delete: by the time the second sends it to ann, it has judged carl's stream.
  await first.write('POST', 'notes', ann.auth, { title: 'after the delete' })
  t.equal((await anns.nextOf('create'))?.data.record.title, 'after the delete')
  t.equal(second.realtime.hub.size, 1, 'only ann\'s stream is left on the second')
  t.equal((await carls.nextOf('end'))?.data.reason, 'revoked', 'carl\'s ends, revoked')
})

t.test('the per-user connection limit holds across instances on one store; a lapsed lease counts for nothing', async (t) => {
  const { first, second, secondBase } = await twoInstances(t)
  const onSecond = endUsers(t, second, first.projectId, secondBase)
  const ann = await first.register('ann@example.com')
  const notes = [{ collection: 'notes' }]
  const refused = async (subscribe: typeof first.subscribe) => {
    const opened = await subscribe(ann.auth, notes)
    if (opened instanceof SseStream) { opened.close(); return null }
    return [opened.status, opened.body.code]
  }
  // REALTIME_MAX_CONNECTIONS_PER_USER is 2: one stream on each instance fills it.
  const onFirstStream = await first.stream(ann.auth, notes)
  const onSecondStream = await onSecond.stream(ann.auth, notes)
  t.same(await refused(first.subscribe), [429, 'APP_REALTIME_TOO_MANY_CONNECTIONS'], 'a third on the first is refused')
  t.same(await refused(onSecond.subscribe), [429, 'APP_REALTIME_TOO_MANY_CONNECTIONS'], 'and on the second')
  const bob = await first.register('bob@example.com')
  t.ok((await first.stream(bob.auth, notes)) instanceof SseStream, 'another user has places of his own')

  onFirstStream.close()
  await onFirstStream.nextOf('never')
  // The first learns of the close when the socket goes, then gives the slot back.
  for (let i = 0; i < 100 && first.app.realtime.hub.size > 1; i++) await new Promise((resolve) => setTimeout(resolve, 20))
  await first.app.realtime.hub.settled()
  const again = await onSecond.stream(ann.auth, notes)
  t.equal((await again.nextOf('ready'))?.event, 'ready', 'the place closed on the first is taken on the second')
  t.same(await refused(first.subscribe), [429, 'APP_REALTIME_TOO_MANY_CONNECTIONS'], 'full again')

  // A process that died with a stream open: its slot stays in the store, lapsed, until the prune.
  const leases = second.store.collection(REALTIME_LEASES)
  const lapsed = new Date(second.storeClock.nowMs() - 1000)
  t.equal((await leases.updateMany({ callerKey: `user:${ann.id}`, connectionId: { $ne: null } }, { $set: { expiresAt: lapsed } })).modifiedCount, 2, 'both of ann\'s leases lapse')
  const taken = await first.stream(ann.auth, notes)
  t.equal((await taken.nextOf('ready'))?.event, 'ready', 'a lapsed lease does not count')
  t.equal((await onSecond.stream(ann.auth, notes) instanceof SseStream), true, 'nor does the other')
  t.same(await refused(onSecond.subscribe), [429, 'APP_REALTIME_TOO_MANY_CONNECTIONS'], 'the two new ones do')
  onSecondStream.close()
  again.close()
})
