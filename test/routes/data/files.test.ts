import t, { type Test } from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { request } from 'node:http'
import type { AddressInfo } from 'node:net'
import { buildTestApp, call, signUp, type TestApp, registerEndUser } from '../../helper.js'
import { storedKeys } from '../../services/files/engines.js'

type Headers = Record<string, string>

const MB = 1024 * 1024
const ownerRule = { requireAuth: true, owner: 'author' }
const sha256 = (data: Buffer): string => createHash('sha256').update(data).digest('hex')
const PNG = Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), randomBytes(200)])

/** Project auth on, `posts` with owner rules on every method including the file ones, and two end users. */
async function blog (t: Test) {
  const app = await buildTestApp(t)
  const admin = await signUp(app, 'admin@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
  const projectId = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name: 'Blog' })).body.data.id as string
  await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, admin.auth, { enabled: true })
  const methods = Object.fromEntries(['list', 'get', 'create', 'update', 'delete', 'upload', 'download', 'fileDelete'].map((m) => [m, { enabled: true, rule: ownerRule }]))
  const defined = await call(app, 'POST', `/api/projects/${projectId}/collections`, admin.auth, {
    name: 'posts',
    fields: [
      { name: 'title', type: 'text', required: true },
      { name: 'author', type: 'text' },
      { name: 'attachment', type: 'file', maxSize: 64 * MB },
      { name: 'cover', type: 'file', maxSize: MB, allowedTypes: ['image/*'] },
      { name: 'gallery', type: 'file', multiple: true, max: 2 }
    ],
    methods
  })
  if (defined.status !== 201) throw new Error(`setup: ${JSON.stringify(defined.body)}`)
  const endUser = async (email: string) => await registerEndUser(app, projectId, email)
  const ann = await endUser('ann@example.com')
  const bob = await endUser('bob@example.com')
  const posts = `/api/p/${projectId}/posts`
  const newPost = async (title = 'Post') => (await call(app, 'POST', posts, ann.auth, { title })).body.data.id as string
  // The ids of the file objects the project holds, wherever under its folder (each lives in its record's folder).
  const stored = async (): Promise<string[]> => (await storedKeys(app.files.store, `files/${projectId}`)).objects.map((key) => key.slice(key.lastIndexOf('/') + 1)).sort()
  return { app, admin, projectId, posts, ann, bob, newPost, stored }
}

async function putChunk (app: TestApp, url: string, headers: Headers, body: Buffer, contentType = 'application/octet-stream') {
  const res = await app.inject({ method: 'PUT', url, headers: { ...headers, 'content-type': contentType }, payload: body })
  return { status: res.statusCode, body: res.json() }
}

async function download (app: TestApp, url: string, headers: Headers) {
  const res = await app.inject({ method: 'GET', url, headers })
  return { status: res.statusCode, headers: res.headers, raw: res.rawPayload }
}

function multipartBody (name: string, type: string, data: Buffer) {
  const boundary = `----plinth${randomBytes(8).toString('hex')}`
  const payload = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="${name}"\r\nContent-Type: ${type}\r\n\r\n`),
    data,
    Buffer.from(`\r\n--${boundary}--\r\n`)
  ])
  return { payload, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } }
}

async function uploadWhole (app: TestApp, url: string, headers: Headers, name: string, type: string, data: Buffer) {
  const form = multipartBody(name, type, data)
  const res = await app.inject({ method: 'POST', url, headers: { ...headers, ...form.headers }, payload: form.payload })
  return { status: res.statusCode, body: res.json() }
}

t.test('a 20 MB file in chunks: out of order, retried, resumed, then downloaded whole and by range', async (t) => {
  const { app, posts, ann, newPost, stored } = await blog(t)
  const id = await newPost()
  const data = randomBytes(20 * MB)
  const base = `${posts}/${id}/files/attachment`
  const started = await call(app, 'POST', `${base}/upload-sessions`, ann.auth, { name: 'report – 2026.bin', size: data.length, type: 'application/octet-stream', sha256: sha256(data) })
  t.equal(started.status, 201)
  const { id: sessionId, chunkSize, chunkCount } = started.body.data
  t.equal(chunkCount, Math.ceil(data.length / chunkSize))
  t.ok(chunkCount >= 3, 'several chunks')
  t.same(started.body.data.missing, Array.from({ length: chunkCount }, (_, i) => i))
  const session = `${base}/upload-sessions/${sessionId}`
  const chunk = (i: number): Buffer => data.subarray(i * chunkSize, (i + 1) * chunkSize)

  const last = chunkCount - 1
  t.equal((await putChunk(app, `${session}/chunks/${last}`, ann.auth, chunk(last))).status, 200, 'the last chunk first')
  t.equal((await putChunk(app, `${session}/chunks/0`, ann.auth, chunk(0))).status, 200)
  const retried = await putChunk(app, `${session}/chunks/0`, ann.auth, chunk(0))
  t.same([retried.status, retried.body.data.received], [200, [0, last]], 'a retried chunk is idempotent')

  const early = await call(app, 'POST', `${session}/complete`, ann.auth)
  t.same([early.status, early.body.code], [409, 'APP_UPLOAD_INCOMPLETE'], 'completing with chunks missing is refused')

  // The client "drops" here and resumes from the status.
  const status = await call(app, 'GET', session, ann.auth)
  t.equal(status.status, 200)
  const missing = status.body.data.missing as number[]
  t.same(missing, Array.from({ length: chunkCount - 2 }, (_, i) => i + 1))
  for (const i of missing) t.equal((await putChunk(app, `${session}/chunks/${i}`, ann.auth, chunk(i))).status, 200)

  const completed = await call(app, 'POST', `${session}/complete`, ann.auth)
  t.equal(completed.status, 200)
  const file = completed.body.data.file
  t.match(file, { name: 'report – 2026.bin', size: data.length, type: 'application/octet-stream', sha256: sha256(data) })
  t.same(completed.body.data.record.attachment, file, 'the field holds the descriptor')
  t.equal(completed.body.data.record.version, 2, 'attaching bumps the version')
  t.same(await stored(), [file.id], 'one object, no chunks left as files')
  const again = await call(app, 'POST', `${session}/complete`, ann.auth)
  t.same([again.status, again.body.data.file.id], [200, file.id], 'completing again returns the same file')

  const url = `${base}/${file.id}`
  const whole = await download(app, url, ann.auth)
  t.equal(whole.status, 200)
  t.equal(sha256(whole.raw), sha256(data), 'the download is the original')
  t.equal(whole.headers['content-length'], String(data.length))
  t.equal(whole.headers['content-type'], 'application/octet-stream')
  t.equal(whole.headers['accept-ranges'], 'bytes')
  t.equal(whole.headers['x-content-type-options'], 'nosniff')
  t.match(whole.headers['content-security-policy'], /^default-src 'none'/)
  t.equal(whole.headers['content-disposition'], 'attachment; filename="report _ 2026.bin"; filename*=UTF-8\'\'report%20%E2%80%93%202026.bin')
  const etag = whole.headers.etag as string
  t.equal(etag, `"${sha256(data)}"`)

  const ranges: Array<[string, number, number]> = [['bytes=0-99', 0, 99], ['bytes=10485700-10485899', 10485700, 10485899], ['bytes=-100', data.length - 100, data.length - 1]]
  for (const [range, start, end] of ranges) {
    const part = await download(app, url, { ...ann.auth, range })
    t.equal(part.status, 206, range)
    t.equal(part.headers['content-range'], `bytes ${start}-${end}/${data.length}`)
    t.equal(part.headers['content-length'], String(end - start + 1))
    t.ok(part.raw.equals(data.subarray(start, end + 1)), `${range} is the right bytes`)
  }
  const unsatisfiable = await download(app, url, { ...ann.auth, range: `bytes=${data.length}-` })
  t.equal(unsatisfiable.status, 416)
  t.equal(unsatisfiable.headers['content-range'], `bytes */${data.length}`)
  t.equal(JSON.parse(unsatisfiable.raw.toString()).code, 'APP_RANGE_NOT_SATISFIABLE')
  const cached = await download(app, url, { ...ann.auth, 'if-none-match': etag })
  t.same([cached.status, cached.raw.length], [304, 0])
  t.equal((await download(app, url, { ...ann.auth, 'if-none-match': '"other"' })).status, 200)

  const deleted = await call(app, 'DELETE', `${posts}/${id}`, ann.auth)
  t.equal(deleted.status, 200)
  t.same(await stored(), [], 'deleting the record deleted its file')
})

t.test('another end user, anonymous callers and a disabled method never reach a file', async (t) => {
  const { app, admin, projectId, posts, ann, bob, newPost, stored } = await blog(t)
  const id = await newPost()
  const base = `${posts}/${id}/files/attachment`
  const uploaded = await uploadWhole(app, base, ann.auth, 'notes.txt', 'text/plain', Buffer.from('hello, files\n'))
  t.equal(uploaded.status, 201)
  const fileId = uploaded.body.data.file.id as string
  const session = (await call(app, 'POST', `${base}/upload-sessions`, ann.auth, { name: 'a.bin', size: 10, type: 'application/octet-stream' })).body.data.id as string

  const cases: Array<[string, () => Promise<{ status: number, code?: string }>]> = [
    ['download', async () => { const r = await download(app, `${base}/${fileId}`, bob.auth); return { status: r.status, code: JSON.parse(r.raw.toString()).code } }],
    ['start upload', async () => { const r = await call(app, 'POST', `${base}/upload-sessions`, bob.auth, { name: 'x', size: 1, type: 'text/plain' }); return { status: r.status, code: r.body.code } }],
    ['session status', async () => { const r = await call(app, 'GET', `${base}/upload-sessions/${session}`, bob.auth); return { status: r.status, code: r.body.code } }],
    ['chunk', async () => { const r = await putChunk(app, `${base}/upload-sessions/${session}/chunks/0`, bob.auth, Buffer.alloc(10)); return { status: r.status, code: r.body.code } }],
    ['multipart', async () => { const r = await uploadWhole(app, base, bob.auth, 'x.txt', 'text/plain', Buffer.from('x')); return { status: r.status, code: r.body.code } }],
    ['file delete', async () => { const r = await call(app, 'DELETE', `${base}/${fileId}`, bob.auth); return { status: r.status, code: r.body.code } }]
  ]
  for (const [name, run] of cases) t.same(await run(), { status: 404, code: 'APP_RECORD_NOT_FOUND' }, `another user: ${name}`)
  for (const [name] of cases) {
    const anonymous = name === 'multipart'
      ? await uploadWhole(app, base, {}, 'x.txt', 'text/plain', Buffer.from('x'))
      : name === 'download' ? { status: (await download(app, `${base}/${fileId}`, {})).status, body: {} } : await call(app, name === 'file delete' ? 'DELETE' : 'POST', name === 'file delete' ? `${base}/${fileId}` : `${base}/upload-sessions`, {}, name === 'file delete' ? undefined : { name: 'x', size: 1, type: 'text/plain' })
    t.equal(anonymous.status, 401, `anonymous: ${name}`)
  }
  t.same(await stored(), [fileId], 'nothing changed')

  const disabled = await call(app, 'PUT', `/api/projects/${projectId}/collections/posts`, admin.auth, { methods: { upload: { enabled: false, rule: ownerRule } } })
  t.equal(disabled.status, 200)
  const refused = await call(app, 'POST', `${base}/upload-sessions`, ann.auth, { name: 'x', size: 1, type: 'text/plain' })
  t.same([refused.status, refused.body.code], [405, 'APP_METHOD_DISABLED'])
  const refusedWhole = await uploadWhole(app, base, ann.auth, 'x.txt', 'text/plain', Buffer.from('x'))
  t.same([refusedWhole.status, refusedWhole.body.code], [405, 'APP_METHOD_DISABLED'])
  t.equal((await download(app, `${base}/${fileId}`, ann.auth)).status, 200, 'downloads have their own method')
})

t.test('types are sniffed: text declared as image/png is refused on an image field', async (t) => {
  const { app, posts, ann, newPost, stored } = await blog(t)
  const id = await newPost()
  const base = `${posts}/${id}/files/cover`
  const text = Buffer.from('definitely not a picture\n')
  const started = await call(app, 'POST', `${base}/upload-sessions`, ann.auth, { name: 'cat.png', size: text.length, type: 'image/png' })
  const session = `${base}/upload-sessions/${started.body.data.id as string}`
  t.equal((await putChunk(app, `${session}/chunks/0`, ann.auth, text)).status, 200)
  const refused = await call(app, 'POST', `${session}/complete`, ann.auth)
  t.same([refused.status, refused.body.code, refused.body.details.actual], [415, 'APP_FILE_TYPE_NOT_ALLOWED', 'text/plain'])
  t.same(await stored(), [], 'the joined object was deleted')
  const whole = await uploadWhole(app, base, ann.auth, 'cat.png', 'image/png', text)
  t.same([whole.status, whole.body.code], [415, 'APP_FILE_TYPE_NOT_ALLOWED'], 'multipart too')
  t.same(await stored(), [])
  t.equal((await call(app, 'GET', `${posts}/${id}`, ann.auth)).body.data.cover, undefined, 'the field is untouched')

  const png = await uploadWhole(app, base, ann.auth, 'cat.png', 'application/octet-stream', PNG)
  t.same([png.status, png.body.data.file.type], [201, 'image/png'], 'a real PNG passes whatever was declared')
  const served = await download(app, `${base}/${png.body.data.file.id as string}`, ann.auth)
  t.equal(served.headers['content-type'], 'image/png')
  t.match(served.headers['content-disposition'], /^inline; /)

  const replaced = await uploadWhole(app, base, ann.auth, 'dog.png', 'image/png', Buffer.concat([PNG, Buffer.from('x')]))
  t.equal(replaced.status, 201)
  t.same(await stored(), [replaced.body.data.file.id], 'replacing a single file deletes the previous one')
  t.equal(replaced.body.data.record.version, 3)
})

t.test('multipart upload, multiple fields, fileDelete and the cleanup of deleted records and dropped collections', async (t) => {
  const { app, admin, projectId, posts, ann, newPost, stored } = await blog(t)
  const id = await newPost()
  const gallery = `${posts}/${id}/files/gallery`
  const one = await uploadWhole(app, gallery, ann.auth, 'one.png', 'image/png', PNG)
  const two = await uploadWhole(app, gallery, ann.auth, 'two.txt', 'text/plain', Buffer.from('two'))
  t.same([one.status, two.status], [201, 201])
  t.same(two.body.data.record.gallery.map((f: { name: string }) => f.name), ['one.png', 'two.txt'], 'multiple fields collect files')
  const three = await uploadWhole(app, gallery, ann.auth, 'three.txt', 'text/plain', Buffer.from('three'))
  t.same([three.status, three.body.code], [409, 'APP_TOO_MANY_FILES'])
  const early = await call(app, 'POST', `${gallery}/upload-sessions`, ann.auth, { name: 'x', size: 1, type: 'text/plain' })
  t.same([early.status, early.body.code], [409, 'APP_TOO_MANY_FILES'], 'refused before any byte is sent')
  t.equal((await stored()).length, 2)

  const removed = await call(app, 'DELETE', `${gallery}/${one.body.data.file.id as string}`, ann.auth)
  t.equal(removed.status, 200)
  t.same(removed.body.data.record.gallery.map((f: { name: string }) => f.name), ['two.txt'])
  t.same(await stored(), [two.body.data.file.id], 'fileDelete removes the object from the FileStore')
  const gone = await call(app, 'DELETE', `${gallery}/${one.body.data.file.id as string}`, ann.auth)
  t.same([gone.status, gone.body.code], [404, 'APP_FILE_NOT_FOUND'])
  const notHeld = await download(app, `${posts}/${id}/files/attachment/${two.body.data.file.id as string}`, ann.auth)
  t.equal(notHeld.status, 404, 'a file is only reachable through the field holding it')

  const others = [await newPost('b'), await newPost('c')]
  for (const other of others) t.equal((await uploadWhole(app, `${posts}/${other}/files/attachment`, ann.auth, 'f.txt', 'text/plain', Buffer.from(other))).status, 201)
  t.equal((await stored()).length, 3)
  const bulk = await call(app, 'DELETE', posts, ann.auth, { filter: { title: { $in: ['b'] } } })
  t.equal(bulk.body.data.deleted, 1)
  t.equal((await stored()).length, 2, 'bulk deletes take their files along')

  const dropped = await call(app, 'DELETE', `/api/projects/${projectId}/collections/posts`, admin.auth)
  t.equal(dropped.status, 200)
  t.same(await stored(), [], 'dropping the collection deleted the files of its records')
})

t.test('bad input is refused in the envelope, never a 500', async (t) => {
  const { app, posts, ann, newPost } = await blog(t)
  const id = await newPost()
  const base = `${posts}/${id}/files/attachment`
  const data = Buffer.from('0123456789')
  const start = async (body: Record<string, unknown>) => await call(app, 'POST', `${base}/upload-sessions`, ann.auth, { name: 'a.bin', size: data.length, type: 'application/octet-stream', ...body })
  const session = `${base}/upload-sessions/${(await start({ sha256: sha256(Buffer.from('something else')) })).body.data.id as string}`

  const cases: Array<[string, () => Promise<{ status: number, body: { code: string } }>, number, string]> = [
    ['negative size', async () => await start({ size: -1 }), 400, 'APP_VALIDATION_FAILED'],
    ['above maxSize', async () => await start({ size: 64 * MB + 1 }), 413, 'APP_FILE_TOO_LARGE'],
    ['cover above 1 MB', async () => await call(app, 'POST', `${posts}/${id}/files/cover/upload-sessions`, ann.auth, { name: 'c.png', size: MB + 1, type: 'image/png' }), 413, 'APP_FILE_TOO_LARGE'],
    ['bad media type', async () => await start({ type: 'not a type' }), 400, 'APP_UPLOAD_INVALID'],
    ['not a file field', async () => await call(app, 'POST', `${posts}/${id}/files/title/upload-sessions`, ann.auth, { name: 'a', size: 1, type: 'text/plain' }), 404, 'APP_FIELD_NOT_FOUND'],
    ['no such field', async () => await call(app, 'POST', `${posts}/${id}/files/nope/upload-sessions`, ann.auth, { name: 'a', size: 1, type: 'text/plain' }), 404, 'APP_FIELD_NOT_FOUND'],
    ['no such record', async () => await call(app, 'POST', `${posts}/missing/files/attachment/upload-sessions`, ann.auth, { name: 'a', size: 1, type: 'text/plain' }), 404, 'APP_RECORD_NOT_FOUND'],
    ['missing session', async () => await call(app, 'GET', `${base}/upload-sessions/nosuchsession`, ann.auth), 404, 'APP_UPLOAD_SESSION_NOT_FOUND'],
    ['chunk index past the end', async () => await putChunk(app, `${session}/chunks/1`, ann.auth, data), 400, 'APP_INVALID_CHUNK'],
    ['chunk index not a number', async () => await putChunk(app, `${session}/chunks/x`, ann.auth, data), 400, 'APP_VALIDATION_FAILED'],
    ['negative chunk index', async () => await putChunk(app, `${session}/chunks/-1`, ann.auth, data), 400, 'APP_VALIDATION_FAILED'],
    ['short chunk', async () => await putChunk(app, `${session}/chunks/0`, ann.auth, data.subarray(1)), 400, 'APP_INVALID_CHUNK'],
    ['chunk as JSON', async () => await putChunk(app, `${session}/chunks/0`, ann.auth, Buffer.from('{"a":1}'), 'application/json'), 415, 'APP_UNSUPPORTED_MEDIA_TYPE'],
    ['chunk as an unknown type', async () => await putChunk(app, `${session}/chunks/0`, ann.auth, data, 'image/png'), 415, 'APP_UNSUPPORTED_MEDIA_TYPE'],
    ['chunk larger than a chunk can be', async () => await putChunk(app, `${session}/chunks/0`, ann.auth, Buffer.alloc(app.files.chunkSize + 128 * 1024)), 413, 'APP_PAYLOAD_TOO_LARGE'],
    ['complete with chunks missing', async () => await call(app, 'POST', `${session}/complete`, ann.auth), 409, 'APP_UPLOAD_INCOMPLETE'],
    ['multipart route given JSON', async () => await call(app, 'POST', base, ann.auth, { file: 'x' }), 415, 'APP_UNSUPPORTED_MEDIA_TYPE'],
    ['multipart without a boundary', async () => { const form = multipartBody('a.txt', 'text/plain', data); return await call(app, 'POST', base, { ...ann.auth, 'content-type': 'multipart/form-data' }, form.payload) }, 400, 'APP_MULTIPART_INVALID'],
    ['unknown file', async () => await call(app, 'DELETE', `${base}/nosuchfile`, ann.auth), 404, 'APP_FILE_NOT_FOUND']
  ]
  for (const [name, run, status, code] of cases) {
    const res = await run()
    t.same([res.status, res.body.code], [status, code], name)
  }

  t.equal((await putChunk(app, `${session}/chunks/0`, ann.auth, data)).status, 200)
  const mismatch = await call(app, 'POST', `${session}/complete`, ann.auth)
  t.same([mismatch.status, mismatch.body.code], [422, 'APP_UPLOAD_CHECKSUM_MISMATCH'], 'the declared sha256 is checked')
  const aborted = await call(app, 'DELETE', session, ann.auth)
  t.same([aborted.status, aborted.body.data.status], [200, 'aborted'])
  const late = await putChunk(app, `${session}/chunks/0`, ann.auth, data)
  t.same([late.status, late.body.code], [410, 'APP_UPLOAD_SESSION_ABORTED'])

  const tooBig = await uploadWhole(app, `${posts}/${id}/files/cover`, ann.auth, 'big.png', 'image/png', Buffer.concat([PNG, Buffer.alloc(MB)]))
  t.same([tooBig.status, tooBig.body.code], [413, 'APP_FILE_TOO_LARGE'], 'multipart uploads stop at the field\'s maxSize')
})

/** One PUT over a real socket; `cut` sends that many body bytes and then drops the connection. */
async function rawPut (port: number, path: string, headers: Headers, body: Buffer, options: { chunked?: boolean, cut?: number } = {}): Promise<{ status: number, body: { code?: string, data?: { missing: number[] } } } | 'dropped'> {
  return await new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: 'PUT', headers: { ...headers, 'content-type': 'application/octet-stream', ...(options.chunked === true ? {} : { 'content-length': String(body.length) }) } }, (res) => {
      const parts: Buffer[] = []
      res.on('data', (part: Buffer) => parts.push(part))
      res.on('end', () => { resolve({ status: res.statusCode ?? 0, body: JSON.parse(Buffer.concat(parts).toString()) }) })
    })
    req.on('error', (error) => { if (options.cut !== undefined) resolve('dropped'); else reject(error) })
    if (options.cut !== undefined) {
      req.write(body.subarray(0, options.cut), () => { setTimeout(() => { req.destroy() }, 20) })
      return
    }
    if (options.chunked === true) for (let at = 0; at < body.length; at += 100_000) req.write(body.subarray(at, at + 100_000))
    req.end(options.chunked === true ? undefined : body)
  })
}

t.test('over a real socket: chunks with and without a length, one cut off mid-body, sends at once into reused buffers', async (t) => {
  const { app, posts, ann, newPost } = await blog(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const port = (app.server.address() as AddressInfo).port
  const id = await newPost()
  const data = randomBytes(3 * app.files.chunkSize + 12_345)
  const base = `${posts}/${id}/files/attachment/upload-sessions`
  const started = await call(app, 'POST', base, ann.auth, { name: 'socket.bin', size: data.length, type: 'application/octet-stream', sha256: sha256(data) })
  const { id: sessionId, chunkSize, chunkCount } = started.body.data as { id: string, chunkSize: number, chunkCount: number }
  const chunkUrl = (i: number): string => `${base}/${sessionId}/chunks/${i}`
  const chunk = (i: number): Buffer => data.subarray(i * chunkSize, (i + 1) * chunkSize)

  t.equal(await rawPut(port, chunkUrl(0), ann.auth, chunk(0), { cut: 1000 }), 'dropped', 'the client drops mid-chunk')
  t.match(await rawPut(port, chunkUrl(1), ann.auth, chunk(1), { chunked: true }), { status: 200 }, 'a chunk without a Content-Length')
  t.match(await rawPut(port, chunkUrl(2), ann.auth, Buffer.concat([chunk(2), Buffer.alloc(chunkSize)]), { chunked: true }), { status: 413, body: { code: 'APP_PAYLOAD_TOO_LARGE' } }, 'one that runs past any chunk size, without a Content-Length')
  const status = await call(app, 'GET', `${base}/${sessionId}`, ann.auth)
  t.same(status.body.data.missing, [0, 2, 3], 'the cut-off chunk is missing, not half there')
  const sends = await Promise.all([0, 2, 3].map(async (i) => await rawPut(port, chunkUrl(i), ann.auth, chunk(i))))
  t.same(sends.map((sent) => sent === 'dropped' ? 0 : sent.status), [200, 200, 200], 'three sends at once')
  t.equal(chunkCount, 4)
  const completed = await call(app, 'POST', `${base}/${sessionId}/complete`, ann.auth)
  t.equal(completed.status, 200)
  t.equal(completed.body.data.file.sha256, sha256(data), 'no send saw another\'s bytes through a reused buffer')
  const downloaded = await download(app, `${posts}/${id}/files/attachment/${completed.body.data.file.id as string}`, ann.auth)
  t.equal(sha256(downloaded.raw), sha256(data))
})
