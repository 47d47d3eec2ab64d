import t, { type Test } from 'tap'
import { createHash } from 'node:crypto'
import { connect, createServer, type AddressInfo, type Socket } from 'node:net'
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { buildTestApp } from '../helper.js'
import { commonErrors } from '../../services/platform/errors.js'
import { createAdmin, PlinthError } from '../../sdk/admin/index.js'
import { createClient, memoryStorage, type UploadProgress } from '../../sdk/client/index.js'

interface Refusal { method: string, path: string, error: Error }

/** A listening app whose next requests can be refused with a real error answer (429/503 and Retry-After from the error handler). */
async function listeningApp (t: Test) {
  const refusals: Refusal[] = []
  const app = await buildTestApp(t, {
    extra: fp(async (app: FastifyInstance) => {
      app.addHook('onRequest', async (request) => {
        const next = refusals[0]
        if (next !== undefined && next.method === request.method && request.url.split('?')[0] === next.path) {
          refusals.shift()
          throw next.error
        }
      })
    })
  })
  // What reached the server, counted on its own socket: method and path of every request.
  const seen: string[] = []
  app.server.on('request', (request: { method?: string, url?: string }) => { seen.push(`${request.method} ${(request.url ?? '').split('?')[0]}`) })
  await app.listen({ port: 0, host: '127.0.0.1' })
  const baseUrl = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const admin = createAdmin({ baseUrl })
  await admin.auth.register({ email: 'ada@example.com', password: 'correct horse battery', name: 'Ada' })
  await admin.auth.login({ email: 'ada@example.com', password: 'correct horse battery' })
  const org = await admin.organizations.create({ name: 'Engines' })
  const project = await admin.projects.create({ orgId: org.id, name: 'Notes' })
  await admin.projects.setAuth(project.id, true)
  const own = { enabled: true, rule: { requireAuth: true, owner: 'author' } }
  await admin.collections.create(project.id, {
    name: 'notes',
    fields: [{ name: 'title', type: 'text', required: true }, { name: 'author', type: 'text' }, { name: 'scan', type: 'file' }],
    methods: { list: own, get: own, create: own, update: own, upload: own, download: own }
  })
  const count = (what: string): number => seen.filter((line) => line === what).length
  return { app, baseUrl, admin, org, project, refusals, seen, count }
}

/** A loopback TCP proxy that cuts the connection (both ways, at once) after `cutAfter` bytes have gone upstream, once. */
async function cuttingProxy (t: Test, target: number, cutAfter: number) {
  let upstreamBytes = 0
  let cuts = 0
  const sockets = new Set<Socket>()
  const proxy = createServer((client) => {
    const server = connect(target, '127.0.0.1')
    sockets.add(client).add(server)
    client.on('close', () => sockets.delete(client))
    server.on('close', () => sockets.delete(server))
    client.on('error', () => {})
    server.on('error', () => {})
    server.pipe(client)
    client.on('data', (part: Buffer) => {
      upstreamBytes += part.length
      if (cuts === 0 && upstreamBytes >= cutAfter) {
        cuts++
        client.resetAndDestroy()
        server.destroy()
        return
      }
      server.write(part)
    })
    client.on('end', () => server.end())
  })
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve))
  t.teardown(async () => {
    for (const socket of sockets) socket.destroy()
    await new Promise((resolve) => proxy.close(resolve))
  })
  return { url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`, cuts: () => cuts }
}

t.test('ten parallel calls on an expired session make one refresh request', async (t) => {
  const { baseUrl, project, count } = await listeningApp(t)
  const storage = memoryStorage()
  const client = createClient({ baseUrl, projectId: project.id, storage })
  const signedUp = await client.auth.signUp({ email: 'bob@example.com', password: 'long enough 1' })
  await client.collection('notes').create({ title: 'First' })

  // The stored session says its token has expired (the server would still take it: only the client's clock decides).
  const key = `plinth.session.${project.id}`
  const expire = async (): Promise<void> => {
    const stored = JSON.parse(await storage.get(key) ?? 'null') as { expiresAt: string }
    await storage.set(key, JSON.stringify({ ...stored, expiresAt: new Date(Date.now() - 1000).toISOString() }))
  }
  const refreshPath = `POST /api/p/${project.id}/auth/refresh`
  const listPath = `GET /api/p/${project.id}/notes`
  await expire()
  const pages = await Promise.all(Array.from({ length: 10 }, async () => await client.collection('notes').list()))
  t.equal(count(refreshPath), 1, 'one refresh request reached the server')
  t.equal(count(listPath), 10, 'and the ten calls, each answered')
  t.same(pages.map((page) => page.items.length), Array(10).fill(1))
  const refreshed = await client.auth.session()
  t.not(refreshed?.refreshToken, signedUp.refreshToken, 'the rotated refresh token is kept')
  t.ok(Date.parse(refreshed?.expiresAt ?? '') > Date.now(), 'with its new expiry')

  await client.collection('notes').list()
  t.equal(count(refreshPath), 1, 'a fresh token is not refreshed again')

  // Due within the margin (not yet expired) refreshes the same way: once, for every waiting call.
  const early = createClient({ baseUrl, projectId: project.id, storage, refreshMarginSeconds: 365 * 24 * 3600 })
  await Promise.all(Array.from({ length: 10 }, async () => await early.collection('notes').list()))
  t.equal(count(refreshPath), 2, 'a token inside the refresh margin: one more refresh for ten calls')
})

t.test('an upload whose connection is cut resumes from the chunks the server holds', async (t) => {
  const { app, project, count, baseUrl } = await listeningApp(t)
  const chunkSize = app.files.chunkSize
  const bytes = new Uint8Array(chunkSize + 2 * 1024 * 1024)
  for (let i = 0; i < bytes.length; i++) bytes[i] = (i * 7 + (i >> 12)) % 253
  const sha256 = createHash('sha256').update(bytes).digest('hex')

  const direct = createClient({ baseUrl, projectId: project.id })
  await direct.auth.signUp({ email: 'bob@example.com', password: 'long enough 1' })
  const note = await direct.collection('notes').create({ title: 'Scan' })
  const token = (await direct.auth.session())?.accessToken ?? ''

  // Cut half-way through the second chunk: the first is on the server's disk by then.
  const proxy = await cuttingProxy(t, (app.server.address() as AddressInfo).port, chunkSize + 1024 * 1024)
  const viaProxy = createClient({ baseUrl: proxy.url, projectId: project.id })
  await viaProxy.auth.login({ email: 'bob@example.com', password: 'long enough 1' })
  const progress: UploadProgress[] = []
  let sessionId = ''
  const uploaded = await viaProxy.collection('notes').upload(note.id, 'scan', new Blob([bytes]), {
    name: 'scan.bin', onProgress: (step) => progress.push(step), onSession: (session) => { sessionId = session.id }
  })
  t.equal(proxy.cuts(), 1, 'the connection was cut once')
  t.same([uploaded.file.size, uploaded.file.sha256], [bytes.length, sha256], 'completed with the whole file\'s sha256, checked by the server')
  t.same(progress.map((step) => [step.chunk, step.sentBytes, step.totalBytes]), [[0, chunkSize, bytes.length], [1, bytes.length, bytes.length]], 'progress after each acknowledged chunk')
  const chunkPath = (index: number): string => `PUT /api/p/${project.id}/notes/${note.id}/files/scan/upload-sessions/${sessionId}/chunks/${index}`
  t.equal(count(chunkPath(0)), 1, 'the first chunk, held by the server, was not sent again')
  t.equal(count(chunkPath(1)), 2, 'the cut chunk was sent again')
  t.equal(count(`GET /api/p/${project.id}/notes/${note.id}/files/scan/upload-sessions/${sessionId}`), 1, 'the server was asked what it holds')

  const download = await fetch(`${baseUrl}/api/p/${project.id}/notes/${note.id}/files/scan/${uploaded.file.id}`, { headers: { authorization: `Bearer ${token}` } })
  t.equal(createHash('sha256').update(Buffer.from(await download.arrayBuffer())).digest('hex'), sha256, 'the stored bytes are the file')
})

t.test('retries: idempotent methods and 429/503 with Retry-After only', async (t) => {
  const { admin, org, refusals, count } = await listeningApp(t)
  const busy = (retryAfterSeconds: number): Error => commonErrors.rateLimited({ retryAfterSeconds })
  const draining = (): Error => commonErrors.shuttingDown()

  refusals.push({ method: 'GET', path: '/api/organizations', error: busy(0) })
  t.same((await admin.organizations.list()).map((o) => o.id), [org.id], 'a GET answered 429 with Retry-After: 0 is retried')
  t.equal(count('GET /api/organizations'), 2)

  refusals.push({ method: 'GET', path: `/api/organizations/${org.id}`, error: busy(3600) })
  t.match(await admin.organizations.get(org.id).catch((error: unknown) => error), { name: 'PlinthError', status: 429, code: 'APP_RATE_LIMITED', details: { retryAfterSeconds: 3600 } },
    'a Retry-After past maxDelaySeconds is reported, not waited for')
  t.equal(count(`GET /api/organizations/${org.id}`), 1)

  const quick = createAdmin({ baseUrl: admin.http.baseUrl, token: (await admin.tokens.create({ name: 'ci' })).token, })
  refusals.push({ method: 'POST', path: '/api/organizations', error: draining() })
  const refused = await quick.organizations.create({ name: 'Twice?' }).catch((error: unknown) => error)
  t.ok(refused instanceof PlinthError, 'one typed error class')
  t.match(refused, { status: 503, code: 'APP_SHUTTING_DOWN', details: { retryAfterSeconds: 1 } }, 'a POST answered 503 with Retry-After: 1 is not repeated')
  t.equal(count('POST /api/organizations'), 2, 'the first create and this one: no retry')
  t.equal((await quick.organizations.list()).length, 1, 'nothing was created twice')

  refusals.push({ method: 'PUT', path: `/api/organizations/${org.id}`, error: busy(0) }, { method: 'PUT', path: `/api/organizations/${org.id}`, error: busy(0) })
  t.equal((await quick.organizations.update(org.id, { name: 'Engines Ltd' })).name, 'Engines Ltd', 'a PUT survives two 429s (retries: 2)')
  t.equal(count(`PUT /api/organizations/${org.id}`), 3)
  refusals.push(...Array.from({ length: 3 }, () => ({ method: 'GET', path: '/api/organizations', error: busy(0) })))
  t.match(await quick.organizations.list().catch((error: unknown) => error), { status: 429 }, 'the third refusal is the answer')
  t.equal(count('GET /api/organizations'), 2 + 1 + 3, 'three attempts, then the error')
})
