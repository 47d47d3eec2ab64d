import t from 'tap'
import { createHash } from 'node:crypto'
import { trackerSetup } from './fixtures.js'

t.test('attachments: uploaded through a session, downloaded with ranges and ETags, removed by their uploader', async (t) => {
  const { owner, member, viewer, guest, lp, api, must, app } = await trackerSetup(t)
  const item = await must('POST', `${lp}/work-items`, member.auth, { title: 'With a screenshot' })
  const at = `${lp}/work-items/${item.id as string}/attachments`
  const bytes = Buffer.from('a plain text attachment, seen as text\n')
  const sha256 = createHash('sha256').update(bytes).digest('hex')

  const started = await api('POST', `${at}/upload-sessions`, member.auth, { name: 'notes.txt', size: bytes.length, type: 'text/plain', sha256 })
  t.same([started.status, started.body.data.chunkCount, started.body.data.missing], [201, 1, [0]])
  const sweep = await app.jobs.jobs.find({ type: 'uploads.expire' }).toArray()
  t.ok(sweep.some((job) => job.runAt.getTime() > Date.now() + 23 * 3_600_000), 'a sweep of expired sessions is due after this one could expire')
  const session = started.headers.location as string
  t.equal(session, `${at}/upload-sessions/${started.body.data.id as string}`)
  t.same((await api('POST', `${session}/complete`, member.auth)).body.code, 'APP_UPLOAD_INCOMPLETE', 'complete before the chunks arrive')
  const put = (payload: Buffer, type = 'application/octet-stream') => app.inject({ method: 'PUT', url: `${session}/chunks/0`, headers: { ...member.auth, 'content-type': type }, payload })
  t.same((await put(bytes, 'application/json')).json().code, 'APP_INVALID_JSON', 'a chunk is bytes, not JSON')
  t.same((await put(Buffer.from('short'))).json().code, 'APP_INVALID_CHUNK')
  t.same((await put(bytes)).json().data.missing, [])
  t.same((await api('GET', session, member.auth)).body.data.received, [0])
  const attached = await must('POST', `${session}/complete`, member.auth)
  t.match(attached, { name: 'notes.txt', size: bytes.length, type: 'text/plain', sha256, createdBy: member.id })
  t.same((await must('POST', `${session}/complete`, member.auth)).id, attached.id, 'completing again attaches it once')
  t.same((await must('GET', at, viewer.auth)).items.map((a: { id: string }) => a.id), [attached.id])

  const download = await app.inject({ url: `${at}/${attached.id as string}`, headers: viewer.auth })
  t.same([download.statusCode, download.body, download.headers['content-type'], download.headers.etag], [200, bytes.toString(), 'text/plain', `"${sha256}"`])
  const part = await app.inject({ url: `${at}/${attached.id as string}`, headers: { ...viewer.auth, range: 'bytes=2-6' } })
  t.same([part.statusCode, part.body, part.headers['content-range']], [206, 'plain', `bytes 2-6/${bytes.length}`])
  t.equal((await app.inject({ url: `${at}/${attached.id as string}`, headers: { ...viewer.auth, 'if-none-match': `"${sha256}"` } })).statusCode, 304)
  const beyond = await app.inject({ url: `${at}/${attached.id as string}`, headers: { ...viewer.auth, range: 'bytes=999-' } })
  t.same([beyond.statusCode, beyond.json().code, beyond.headers['content-range']], [416, 'APP_RANGE_NOT_SATISFIABLE', `bytes */${bytes.length}`])
  t.equal((await app.inject({ url: `${at}/${attached.id as string}`, headers: guest.auth })).statusCode, 404, 'a guest who cannot see the item cannot fetch its files')

  // A session of another item is not found here; an aborted one takes nothing more.
  const second = await must('POST', `${lp}/work-items`, member.auth, { title: 'Another' })
  t.same((await api('GET', `${lp}/work-items/${second.id as string}/attachments/upload-sessions/${started.body.data.id as string}`, member.auth)).body.code, 'APP_UPLOAD_SESSION_NOT_FOUND')
  const dropped = await must('POST', `${at}/upload-sessions`, member.auth, { name: 'x.bin', size: 3, type: 'application/octet-stream' })
  t.same((await api('DELETE', `${at}/upload-sessions/${dropped.id as string}`, member.auth)).body.data, { id: dropped.id, deleted: true })
  t.same((await api('POST', `${at}/upload-sessions/${dropped.id as string}/complete`, member.auth)).body.code, 'APP_UPLOAD_SESSION_ABORTED')
  t.same((await api('POST', `${at}/upload-sessions`, member.auth, { name: 'huge.bin', size: 200 * 1024 * 1024, type: 'application/octet-stream' })).body.details.fields[0].path, 'body.size')

  t.same((await api('DELETE', `${at}/${attached.id as string}`, guest.auth)).body.code, 'APP_TRACKER_ITEM_NOT_FOUND')
  t.equal((await api('DELETE', `${at}/${attached.id as string}`, owner.auth)).status, 200, 'an admin removes anyone\'s')
  t.same((await must('GET', at, viewer.auth)).items, [])
  t.equal((await app.inject({ url: `${at}/${attached.id as string}`, headers: viewer.auth })).json().code, 'APP_TRACKER_ATTACHMENT_NOT_FOUND')
  const fields = (await must('GET', `${lp}/work-items/${item.id as string}/activity`, viewer.auth)).items.map((entry: { field: string, to: unknown }) => [entry.field, entry.to])
  t.same(fields, [['created', 'WEB-1'], ['attachment', 'notes.txt'], ['attachment', null]])
})
