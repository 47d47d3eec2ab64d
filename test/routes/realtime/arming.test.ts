import t from 'tap'
import { call } from '../../helper.js'
import { REALTIME_EVENTS } from '../../../services/realtime/log.js'
import { WEBHOOK_COLLECTIONS } from '../../../services/webhooks/records.js'
import { notesProject } from './fixtures.js'

t.test('a project the feed serves only for a record webhook keeps no realtime log; its first stream starts one', async (t) => {
  const { app, admin, projectId, register, stream, write } = await notesProject(t, { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' })
  const logged = async (): Promise<number> => await app.store.collection(REALTIME_EVENTS).countDocuments({ projectId })
  const hook = await call(app, 'POST', `/api/projects/${projectId}/auxiliary/webhooks`, admin.auth, { url: 'http://127.0.0.1:9/hook', events: ['record.created'], filter: { collections: ['notes'] } })
  t.equal(hook.status, 201, JSON.stringify(hook.body))
  const ann = await register('ann@example.com')
  await write('POST', 'notes', ann.auth, { title: 'before any stream' })
  const published = async (): Promise<number> => await app.store.collection(WEBHOOK_COLLECTIONS.events).countDocuments({ projectId, 'data.collection': 'notes' })
  for (const deadline = Date.now() + 30_000; Date.now() < deadline && await published() === 0;) await new Promise((resolve) => setTimeout(resolve, 25))
  await app.auxiliary.feed.settled()
  t.equal(await published(), 1, 'the webhook\'s event of the note was published')
  t.equal(await logged(), 0, 'and nothing (neither the note nor the sign-up) was appended to the realtime log: no stream could read it')

  const notes = await stream(ann.auth, [{ collection: 'notes' }])
  t.equal((await notes.next())?.event, 'ready')
  const note = await write('POST', 'notes', ann.auth, { title: 'with a stream open' })
  t.equal((await notes.nextOf('create'))?.data.record.id, note.id, 'the open stream gets the write')
  t.equal(await logged(), 1, 'from the first stream on, changes are logged')
})
