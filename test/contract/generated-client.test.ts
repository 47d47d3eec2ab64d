import t, { type Test } from 'tap'
import { createHash } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import createClient, { type Middleware } from 'openapi-fetch'
import type { components, paths } from '../../sdk/generated/plinth.js'
import { buildTestApp } from '../helper.js'

/**
 * The README's walk-through as a client generated from openapi.yaml makes
 * it (openapi-typescript types, openapi-fetch calls), against a listening
 * server: register, organization, project, collection, end user, records,
 * a chunked upload and its download. Compiled under `strict` by typecheck,
 * so a contract a client cannot be built on fails before this runs.
 */

type ErrorEnvelope = components['schemas']['ErrorEnvelope']

/** The data of an answer, or the test fails with the error envelope the server sent. */
function ok<T> (t: Test, answer: { data?: { success: true, data: T }, error?: ErrorEnvelope | unknown, response: Response }, what: string): T {
  if (answer.data === undefined) throw new Error(`${what}: ${answer.response.status} ${JSON.stringify(answer.error)}`)
  t.pass(`${what}: ${answer.response.status}`)
  return answer.data.data
}

const bearer = (token: string): Middleware => ({
  onRequest ({ request }) {
    request.headers.set('authorization', `Bearer ${token}`)
    return request
  }
})

t.test('the walk-through through a generated client', async (t) => {
  const app = await buildTestApp(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  const baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const anonymous = createClient<paths>({ baseUrl })

  ok(t, await anonymous.POST('/api/auth/register', { body: { email: 'ada@example.com', password: 'correct horse battery', name: 'Ada' } }), 'register')
  const login = ok(t, await anonymous.POST('/api/auth/login', { body: { email: 'ada@example.com', password: 'correct horse battery' } }), 'log in')
  const admin = createClient<paths>({ baseUrl })
  admin.use(bearer(login.accessToken))
  t.equal(ok(t, await admin.GET('/api/auth/me'), 'me').email, 'ada@example.com')

  const created = await admin.POST('/api/organizations', { body: { name: 'Analytical Engines' } })
  const org = ok(t, created, 'organization')
  t.equal(created.response.headers.get('location'), `/api/organizations/${org.id}`, 'Location names it')
  const project = ok(t, await admin.POST('/api/projects', { body: { orgId: org.id, name: 'Notes' } }), 'project')
  const projectId = project.id
  ok(t, await admin.POST('/api/projects/{projectId}/auth/toggle', { params: { path: { projectId } }, body: { enabled: true } }), 'end-user auth on')

  const own = { enabled: true, rule: { requireAuth: true, owner: 'author' } }
  ok(t, await admin.POST('/api/projects/{projectId}/collections', {
    params: { path: { projectId } },
    body: {
      name: 'notes',
      fields: [{ name: 'title', type: 'text', required: true }, { name: 'author', type: 'text' }, { name: 'scan', type: 'file' }],
      methods: { list: own, get: own, create: own, update: own, upload: own, download: own }
    }
  }), 'collection')

  const session = ok(t, await anonymous.POST('/api/p/{projectId}/auth/register', {
    params: { path: { projectId } },
    body: { email: 'bob@example.com', password: 'long enough 1' }
  }), 'end user')
  const user = createClient<paths>({ baseUrl })
  user.use(bearer(session.accessToken))
  t.equal(ok(t, await user.GET('/api/p/{projectId}/auth/me', { params: { path: { projectId } } }), 'end user me').id, session.user.id)

  const table = 'notes'
  const note = ok(t, await user.POST('/api/p/{projectId}/{table}', { params: { path: { projectId, table } }, body: { title: 'First' } }), 'create a record')
  t.equal(note.author, session.user.id, 'the owner rule set the author')
  const page = ok(t, await user.GET('/api/p/{projectId}/{table}', {
    params: { path: { projectId, table }, query: { filter: JSON.stringify({ title: 'First' }), limit: 10 } }
  }), 'list with a filter')
  t.same(page.items.map((item) => item.id), [note.id])
  const changed = ok(t, await user.PUT('/api/p/{projectId}/{table}/{id}', {
    params: { path: { projectId, table, id: note.id }, header: { 'if-match': `"${String(note.version)}"` } },
    body: { title: 'First, edited' }
  }), 'update with If-Match')
  t.equal(changed.title, 'First, edited')

  // Three chunks' worth, the last one short: the upload session's whole protocol.
  const file = { projectId, table, id: note.id, field: 'scan' }
  const started = ok(t, await user.POST('/api/p/{projectId}/{table}/{id}/files/{field}/upload-sessions', {
    params: { path: file },
    body: { name: 'scan.bin', size: 0, type: 'application/octet-stream' }
  }), 'probe the chunk size')
  const chunkSize = started.chunkSize
  const bytes = Buffer.alloc(chunkSize * 2 + 1234)
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 31) % 251
  const sha256 = createHash('sha256').update(bytes).digest('hex')
  const upload = ok(t, await user.POST('/api/p/{projectId}/{table}/{id}/files/{field}/upload-sessions', {
    params: { path: file },
    body: { name: 'scan.bin', size: bytes.length, type: 'application/octet-stream', sha256 }
  }), 'start an upload')
  t.equal(upload.chunkCount, 3)
  for (let index = upload.chunkCount - 1; index >= 0; index--) {
    const chunk = bytes.subarray(index * chunkSize, Math.min(bytes.length, (index + 1) * chunkSize))
    ok(t, await user.PUT('/api/p/{projectId}/{table}/{id}/files/{field}/upload-sessions/{sessionId}/chunks/{index}', {
      params: { path: { ...file, sessionId: upload.id, index } },
      body: new Blob([chunk]),
      bodySerializer: (body) => body,
      headers: { 'content-type': 'application/octet-stream' }
    }), `chunk ${index}`)
  }
  const attached = ok(t, await user.POST('/api/p/{projectId}/{table}/{id}/files/{field}/upload-sessions/{sessionId}/complete', {
    params: { path: { ...file, sessionId: upload.id } }
  }), 'complete the upload')
  t.same([attached.file.size, attached.file.sha256], [bytes.length, sha256])

  const download = await user.GET('/api/p/{projectId}/{table}/{id}/files/{field}/{fileId}', {
    params: { path: { ...file, fileId: attached.file.id } },
    parseAs: 'arrayBuffer'
  })
  t.equal(download.response.status, 200, 'download')
  t.ok(Buffer.from(download.data as ArrayBuffer).equals(bytes), 'the same bytes come back')
  t.equal(download.response.headers.get('etag'), `"${sha256}"`)

  const missing = await user.GET('/api/p/{projectId}/{table}/{id}/files/{field}/{fileId}', {
    params: { path: { ...file, fileId: 'no-such-file' } }
  })
  t.equal(missing.response.status, 404)
  t.equal(missing.error?.code, 'APP_FILE_NOT_FOUND', 'a download error is the JSON envelope, typed as such')

  const refused = await anonymous.GET('/api/p/{projectId}/{table}', { params: { path: { projectId, table } } })
  t.same([refused.response.status, refused.error?.code], [401, 'APP_UNAUTHORIZED'], 'errors are typed envelopes')
  const invalid = await user.POST('/api/p/{projectId}/{table}', { params: { path: { projectId, table } }, body: { colour: 'red' } })
  t.same(invalid.error?.details?.fields?.map((issue) => issue.path), ['colour'], 'and details have the one typed shape')
})
