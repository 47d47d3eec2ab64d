import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { connect, type AddressInfo } from 'node:net'
import { Readable } from 'node:stream'
import { buildTestApp, call, signUp } from '../../helper.js'
import { storedKeys } from '../../services/files/engines.js'

const BOUNDARY = 'plinth-form-boundary-7f3a'
const FORM = `multipart/form-data; boundary=${BOUNDARY}`
const fieldPart = (name: string, value: string): string => `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`
const fileHead = (name = 'file', filename = 'notes.txt'): string =>
  `--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"; filename="${filename}"\r\nContent-Type: text/plain\r\n\r\n`
const closing = `--${BOUNDARY}--\r\n`
// Large enough that the file store has a temp file open when the form breaks.
const FILE = randomBytes(512 * 1024).toString('base64')

/** A project whose `posts` take public uploads into `attachment`, one record, and what is on disk. */
async function setup (t: Test) {
  const app = await buildTestApp(t)
  const admin = await signUp(app, 'admin@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
  const projectId = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name: 'Forms' })).body.data.id as string
  const open = { enabled: true, rule: { requireAuth: false } }
  const defined = await call(app, 'POST', `/api/projects/${projectId}/collections`, admin.auth, {
    name: 'posts',
    fields: [{ name: 'title', type: 'text' }, { name: 'attachment', type: 'file' }],
    methods: { create: open, get: open, upload: open }
  })
  if (defined.status !== 201) throw new Error(`setup: ${JSON.stringify(defined.body)}`)
  const post = (await call(app, 'POST', `/api/p/${projectId}/posts`, {}, { title: 'Hello' })).body.data
  /** Everything in the file store: objects, staged bytes, temp files or pending writes. */
  const onDisk = async (): Promise<string[]> => {
    const { objects, staged, other } = await storedKeys(app.files.store, '')
    return [...objects, ...staged, ...other]
  }
  const record = async () => (await call(app, 'GET', `/api/p/${projectId}/posts/${post.id as string}`, {})).body.data
  return { app, url: `/api/p/${projectId}/posts/${post.id as string}/files/attachment`, onDisk, record }
}

t.test('malformed, cut-off and over-full forms are 4xx in the envelope and store nothing', async (t) => {
  const { app, url, onDisk, record } = await setup(t)
  const cases: Array<[string, string, string, number, string]> = [
    ['no boundary in the Content-Type', 'multipart/form-data', `${fileHead()}${FILE}\r\n${closing}`, 400, 'APP_MULTIPART_INVALID'],
    ['a body that is not multipart at all', FORM, 'this is not a form, just some text', 400, 'APP_MULTIPART_INVALID'],
    ['a part cut off mid-file', FORM, `${fileHead()}${FILE}`, 400, 'APP_MULTIPART_INVALID'],
    ['a whole file part but no closing boundary', FORM, `${fileHead()}${FILE}\r\n--${BOUNDARY}\r\n`, 400, 'APP_MULTIPART_INVALID'],
    ['a part whose headers are cut off', FORM, `--${BOUNDARY}\r\nContent-Disposition: form-da`, 400, 'APP_MULTIPART_INVALID'],
    ['a second file', FORM, `${fileHead()}${FILE}\r\n${fileHead('other', 'b.txt')}more\r\n${closing}`, 413, 'APP_MULTIPART_TOO_MANY_PARTS'],
    ['more fields than allowed, before the file', FORM, `${Array.from({ length: 11 }, (_, i) => fieldPart(`f${i}`, 'v')).join('')}${fileHead()}${FILE}\r\n${closing}`, 413, 'APP_MULTIPART_TOO_MANY_PARTS'],
    ['more fields than allowed, after the file', FORM, `${fileHead()}${FILE}\r\n${Array.from({ length: 11 }, (_, i) => fieldPart(`f${i}`, 'v')).join('')}${closing}`, 413, 'APP_MULTIPART_TOO_MANY_PARTS'],
    ['only fields', FORM, `${fieldPart('title', 'x')}${closing}`, 400, 'APP_FILE_REQUIRED']
  ]
  for (const [name, contentType, payload, status, code] of cases) {
    const res = await app.inject({ method: 'POST', url, headers: { 'content-type': contentType }, payload })
    t.same([res.statusCode, res.json().success, res.json().code], [status, false, code], name)
    t.same(await onDisk(), [], `${name}: nothing on disk`)
  }
  const unchanged = await record()
  t.same([unchanged.version, unchanged.attachment ?? null], [1, null], 'the record was never touched')

  const fine = await app.inject({ method: 'POST', url, headers: { 'content-type': FORM }, payload: `${fieldPart('note', 'fields beside the file are fine')}${fileHead()}${FILE}\r\n${closing}` })
  t.equal(fine.statusCode, 201, 'a well-formed form with a field beside its file is taken')
  t.equal(fine.json().data.file.size, FILE.length)
  t.equal((await onDisk()).length, 1)

  // Seven-byte pieces put the close delimiter across piece boundaries, as a slow network would.
  const form = Buffer.from(`${fileHead('file', 'small.txt')}a small file\r\n${closing}`)
  const pieces = Array.from({ length: Math.ceil(form.length / 7) }, (_, i) => form.subarray(i * 7, (i + 1) * 7))
  const trickled = await app.inject({ method: 'POST', url, headers: { 'content-type': FORM }, payload: Readable.from(pieces) })
  t.same([trickled.statusCode, trickled.json().data?.file.name], [201, 'small.txt'], 'a form arriving in small pieces is taken whole')
})

t.test('a body that ends before its Content-Length, over a real socket, is a 4xx and stores nothing', async (t) => {
  const { app, url, onDisk, record } = await setup(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  const body = `${fileHead()}${FILE}\r\n${closing}`
  const sent = body.slice(0, body.length / 2)
  const answer = await new Promise<string>((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.write(`POST ${url} HTTP/1.1\r\nHost: plinth.test\r\nContent-Type: ${FORM}\r\nContent-Length: ${body.length}\r\n\r\n${sent}`)
      // Half-close: the client sends no more, but can still read the answer.
      socket.end()
    })
    const received: Buffer[] = []
    socket.on('data', (chunk: Buffer) => received.push(chunk))
    socket.on('error', reject)
    socket.on('close', () => { resolve(Buffer.concat(received).toString()) })
  })
  const [head, json] = answer.split('\r\n\r\n')
  t.match(head, /^HTTP\/1\.1 400 /, 'a client error')
  // Node's parser meets the early end first; were the route to, it would name the form instead.
  t.match(JSON.parse(json), { success: false, code: /^APP_(MALFORMED_REQUEST|MULTIPART_INVALID)$/ }, 'in the envelope')
  // The answer may come from the HTTP parser before the route has cleaned up; wait (tap's timeout guards) for the temp file to go.
  while ((await onDisk()).length > 0) await new Promise((resolve) => setTimeout(resolve, 10))
  t.same(await onDisk(), [], 'no file, no temp file')
  t.equal((await record()).version, 1, 'the record is unchanged')
})
