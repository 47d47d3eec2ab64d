import t from 'tap'
import { randomBytes } from 'node:crypto'
import { buildTestApp, call, testEngine } from '../../helper.js'
import { notesProject, REALTIME_TEST_ENV, endUsers } from './fixtures.js'

t.test('two app instances on one store: a write through one reaches a subscriber of the other', async (t) => {
  // One store for both: the DATA_DIR (and, on MongoDB, the database and the master key its tokens derive from).
  const shared: Record<string, string> = testEngine === 'mongodb' ? { PLINTH_MASTER_KEY: randomBytes(32).toString('base64') } : {}
  const first = await notesProject(t, shared)
  const second = await buildTestApp(t, {
    env: { ...REALTIME_TEST_ENV, ...shared, DATA_DIR: first.app.config.dataDir, ...(testEngine === 'mongodb' ? { MONGODB_DB: first.app.config.mongodbDb } : {}) }
  })
  const secondBase = await second.listen({ port: 0, host: '127.0.0.1' })
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
