import t from 'tap'
import { randomBytes } from 'node:crypto'
import { buildTestApp, testEngine } from '../../helper.js'
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
