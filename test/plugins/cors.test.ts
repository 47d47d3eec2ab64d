import t, { type Test } from 'tap'
import { request, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { buildTestApp, call, signUp, type TestApp } from '../helper.js'

const CONSOLE = 'https://console.example.com'
const APP = 'https://app.example.com'
const OTHER = 'https://other.example.com'

type Answer = { status: number, headers: IncomingHttpHeaders, body: { success?: boolean, code?: string } | null }

/** One request over a real socket, as a browser would send it. */
async function send (port: number, method: string, path: string, headers: Record<string, string>): Promise<Answer> {
  return await new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method, path, headers }, (res) => {
      const parts: Buffer[] = []
      res.on('data', (part: Buffer) => parts.push(part))
      res.on('end', () => {
        const text = Buffer.concat(parts).toString()
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text === '' ? null : JSON.parse(text) })
      })
    })
    req.on('error', reject)
    req.end()
  })
}

/** A browser's preflight for a request with `method` and an Authorization header. */
async function preflight (port: number, path: string, origin: string, method = 'GET'): Promise<Answer> {
  return await send(port, 'OPTIONS', path, { origin, 'access-control-request-method': method, 'access-control-request-headers': 'authorization, content-type' })
}

const corsHeaders = (answer: Answer): string[] => Object.keys(answer.headers).filter((name) => name.startsWith('access-control-')).sort()
const listed = (value: string | string[] | undefined): string[] => String(value ?? '').split(',').map((item) => item.trim().toLowerCase())

function assertAllowed (t: Test, answer: Answer, origin: string, name: string): void {
  t.equal(answer.headers['access-control-allow-origin'], origin, `${name}: the origin is allowed`)
  t.ok(listed(answer.headers.vary).includes('origin'), `${name}: Vary: Origin`)
  if (origin === '*') t.equal(answer.headers['access-control-allow-credentials'], undefined, `${name}: never credentials with *`)
  else t.equal(answer.headers['access-control-allow-credentials'], 'true', `${name}: credentials for a named origin`)
}

function assertPreflightAllowed (t: Test, answer: Answer, origin: string, name: string): void {
  t.equal(answer.status, 204, `${name}: preflight answered`)
  assertAllowed(t, answer, origin, name)
  t.same(listed(answer.headers['access-control-allow-methods']), ['get', 'head', 'post', 'put', 'patch', 'delete'], `${name}: methods`)
  for (const header of ['authorization', 'content-type', 'if-match', 'if-none-match', 'range']) {
    t.ok(listed(answer.headers['access-control-allow-headers']).includes(header), `${name}: ${header} may be sent`)
  }
  t.match(answer.headers['access-control-max-age'], /^\d+$/, `${name}: cached for a while`)
}

function assertRefused (t: Test, answer: Answer, name: string, preflightStatus = true): void {
  t.same(corsHeaders(answer), [], `${name}: no CORS header at all`)
  if (preflightStatus) t.same([answer.status, answer.body?.success, answer.body?.code], [403, false, 'APP_CORS_ORIGIN_REFUSED'], `${name}: preflight refused in the envelope`)
}

/** Two projects with their own allowed origins and one open to any origin, over a listening server. */
async function setup (t: Test, env: Record<string, string> = { CORS_ORIGINS: CONSOLE }) {
  const app = await buildTestApp(t, { env })
  const admin = await signUp(app, 'admin@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
  const project = async (name: string, allowedOrigins: string[]) => {
    const id = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name })).body.data.id as string
    const updated = await call(app, 'PUT', `/api/projects/${id}`, admin.auth, { allowedOrigins })
    if (updated.status !== 200) throw new Error(`setup: ${JSON.stringify(updated.body)}`)
    const open = { enabled: true, rule: { requireAuth: false } }
    await call(app, 'POST', `/api/projects/${id}/collections`, admin.auth, { name: 'notes', fields: [{ name: 'text', type: 'text' }], methods: { list: open, create: open } })
    return id
  }
  const a = await project('A', [APP])
  const b = await project('B', [OTHER])
  const open = await project('Open', ['*'])
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as AddressInfo
  return { app, admin, orgId, a, b, open, port }
}

t.test('the platform API answers CORS_ORIGINS and refuses every other origin', async (t) => {
  const { admin, a, port } = await setup(t)
  for (const [path, method] of [['/api/auth/me', 'GET'], [`/api/projects/${a}`, 'PUT'], ['/api/organizations', 'POST'], ['/api/auth/api-keys/abc', 'DELETE']]) {
    assertPreflightAllowed(t, await preflight(port, path, CONSOLE, method), CONSOLE, `${method} ${path}`)
  }
  const me = await send(port, 'GET', '/api/auth/me', { origin: CONSOLE, ...admin.auth })
  t.equal(me.status, 200)
  assertAllowed(t, me, CONSOLE, 'an answer')
  t.same(listed(me.headers['access-control-expose-headers']), ['etag', 'content-range', 'content-disposition', 'accept-ranges', 'retry-after'], 'headers a browser app reads are exposed')
  const unauthorized = await send(port, 'GET', '/api/auth/me', { origin: CONSOLE })
  t.equal(unauthorized.status, 401)
  assertAllowed(t, unauthorized, CONSOLE, 'an error answer, so the app can read its envelope')

  assertRefused(t, await preflight(port, '/api/auth/me', OTHER), 'an unknown origin')
  assertRefused(t, await preflight(port, '/api/projects', APP, 'POST'), 'an origin allowed only on a project')
  const refusedAnswer = await send(port, 'GET', '/api/auth/me', { origin: OTHER, ...admin.auth })
  assertRefused(t, refusedAnswer, 'an actual request from an unknown origin', false)
  t.ok(listed(refusedAnswer.headers.vary).includes('origin'), 'still Vary: Origin, for shared caches')
  const noOrigin = await send(port, 'GET', '/api/auth/me', admin.auth)
  t.same([noOrigin.status, corsHeaders(noOrigin)], [200, []], 'a request without Origin (no browser) is served as ever')
  t.ok(listed(noOrigin.headers.vary).includes('origin'))
})

t.test('the data API answers each project\'s own origins', async (t) => {
  const { app, admin, a, b, open, port } = await setup(t)
  assertPreflightAllowed(t, await preflight(port, `/api/p/${a}/notes`, APP, 'POST'), APP, 'project A from its origin')
  assertPreflightAllowed(t, await preflight(port, `/api/p/${a}/auth/login`, APP, 'POST'), APP, 'project A\'s end-user auth')
  const listedNotes = await send(port, 'GET', `/api/p/${a}/notes`, { origin: APP })
  t.equal(listedNotes.status, 200)
  assertAllowed(t, listedNotes, APP, 'project A\'s answer')

  assertRefused(t, await preflight(port, `/api/p/${b}/notes`, APP), 'an origin of project A on project B')
  assertRefused(t, await send(port, 'GET', `/api/p/${b}/notes`, { origin: APP }), 'an actual request of A\'s origin on B', false)
  assertPreflightAllowed(t, await preflight(port, `/api/p/${b}/notes`, OTHER), OTHER, 'project B from its own origin')
  assertRefused(t, await preflight(port, `/api/p/${a}/notes`, CONSOLE), 'a platform origin on a project that did not list it')
  assertRefused(t, await preflight(port, '/api/p/nosuchproject/notes', APP), 'a project that does not exist')
  assertRefused(t, await preflight(port, '/api/p/not%20an%20id/notes', APP), 'a path naming no project')

  assertPreflightAllowed(t, await preflight(port, `/api/p/${open}/notes`, 'https://anyone.example.net', 'POST'), '*', 'a project open to any origin')
  assertAllowed(t, await send(port, 'GET', `/api/p/${open}/notes`, { origin: 'https://anyone.example.net' }), '*', 'its answer')

  const closed = await call(app, 'PUT', `/api/projects/${a}`, admin.auth, { allowedOrigins: [] })
  t.same(closed.body.data.allowedOrigins, [])
  assertRefused(t, await preflight(port, `/api/p/${a}/notes`, APP), 'an origin just removed from the project')
})

t.test('CORS_ORIGINS=* lets any origin call the platform API, never with credentials', async (t) => {
  const { port } = await setup(t, { CORS_ORIGINS: '*' })
  assertPreflightAllowed(t, await preflight(port, '/api/auth/login', OTHER, 'POST'), '*', 'any origin')
  assertAllowed(t, await send(port, 'GET', '/api/permissions', { origin: APP }), '*', 'an answer')
})

t.test('without CORS_ORIGINS no browser origin reaches the platform API', async (t) => {
  const { port } = await setup(t, {})
  assertRefused(t, await preflight(port, '/api/auth/login', CONSOLE, 'POST'), 'a preflight')
})

t.test('allowedOrigins on a project: origins or * alone, stored as browsers send them', async (t) => {
  const app: TestApp = await buildTestApp(t)
  const admin = await signUp(app, 'admin@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
  const created = await call(app, 'POST', '/api/projects', admin.auth, { orgId, name: 'P' })
  t.same(created.body.data.allowedOrigins, [], 'none by default')
  const url = `/api/projects/${created.body.data.id as string}`

  const saved = await call(app, 'PUT', url, admin.auth, { allowedOrigins: ['HTTPS://App.Example.com:443/', 'http://localhost:5173', 'https://app.example.com'] })
  t.same(saved.body.data.allowedOrigins, ['https://app.example.com', 'http://localhost:5173'], 'normalized, duplicates dropped')
  t.same((await call(app, 'GET', url, admin.auth)).body.data.allowedOrigins, ['https://app.example.com', 'http://localhost:5173'], 'in the project\'s view')

  const bad: Array<[string, unknown, number, string]> = [
    ['a path', ['https://app.example.com/app'], 400, 'APP_INVALID_ORIGIN'],
    ['no scheme', ['app.example.com'], 400, 'APP_INVALID_ORIGIN'],
    ['another scheme', ['ftp://app.example.com'], 400, 'APP_INVALID_ORIGIN'],
    ['credentials', ['https://user:pw@app.example.com'], 400, 'APP_INVALID_ORIGIN'],
    ['the literal null origin', ['null'], 400, 'APP_INVALID_ORIGIN'],
    ['* beside an origin', ['*', 'https://app.example.com'], 400, 'APP_INVALID_ORIGIN'],
    ['not a list', 'https://app.example.com', 400, 'APP_VALIDATION_FAILED'],
    ['too many', Array.from({ length: 51 }, (_, i) => `https://a${i}.example.com`), 400, 'APP_VALIDATION_FAILED']
  ]
  for (const [name, allowedOrigins, status, code] of bad) {
    const res = await call(app, 'PUT', url, admin.auth, { allowedOrigins })
    t.same([res.status, res.body.code], [status, code], name)
  }
  t.same((await call(app, 'GET', url, admin.auth)).body.data.allowedOrigins, ['https://app.example.com', 'http://localhost:5173'], 'a refused change changed nothing')
})
