import t from 'tap'
import { buildTestApp, call, signUp } from '../helper.js'

/**
 * What the contract promises beside bodies: 405 with Allow for a method a
 * path does not take, Location on creates, the published spelling of paths,
 * and Allow on a collection method that is disabled.
 */

t.test('a method a path does not take is 405 with Allow; an unknown path stays 404', async (t) => {
  const app = await buildTestApp(t)
  const cases: Array<[string, string, number, string | undefined]> = [
    ['PUT', '/api/organizations', 405, 'GET, HEAD, POST'],
    ['PATCH', '/api/p/p1/things/r1', 405, 'GET, HEAD, PUT, DELETE'],
    ['POST', '/api/auth/me', 405, 'GET, HEAD'],
    ['GET', '/api/nowhere', 404, undefined]
  ]
  for (const [method, url, status, allow] of cases) {
    const res = await app.inject({ method: method as 'GET', url })
    t.same([res.statusCode, res.headers.allow, res.json().success], [status, allow, false], `${method} ${url}`)
    t.equal(res.json().code, status === 405 ? 'APP_METHOD_NOT_ALLOWED' : 'APP_ROUTE_NOT_FOUND')
  }
})

t.test('creates answer Location naming what they made, and it is there', async (t) => {
  const app = await buildTestApp(t)
  const admin = await signUp(app, 'admin@example.com')
  const org = await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })
  const listed = await call(app, 'GET', '/api/organizations', admin.auth)
  t.same(await call(app, 'GET', '/api/organizations/', admin.auth).then((res) => [res.status, res.body]), [200, listed.body], 'a trailing slash gets the same answer')
  t.equal(org.headers.location, `/api/organizations/${org.body.data.id as string}`)
  t.equal((await call(app, 'GET', String(org.headers.location), admin.auth)).status, 200)

  const project = await call(app, 'POST', '/api/projects', admin.auth, { orgId: org.body.data.id, name: 'Blog' })
  t.equal(project.headers.location, `/api/projects/${project.body.data.id as string}`)
  const projectId = project.body.data.id as string
  const collection = await call(app, 'POST', `/api/projects/${projectId}/collections`, admin.auth, {
    name: 'notes',
    fields: [{ name: 'text', type: 'text' }],
    methods: { create: { enabled: true, rule: { requireAuth: false } }, get: { enabled: true, rule: { requireAuth: false } } }
  })
  t.equal(collection.headers.location, `/api/projects/${projectId}/collections/notes`)
  t.equal((await call(app, 'GET', String(collection.headers.location), admin.auth)).status, 200)

  const record = await call(app, 'POST', `/api/p/${projectId}/notes`, {}, { text: 'hello' })
  t.equal(record.headers.location, `/api/p/${projectId}/notes/${record.body.data.id as string}`)
  const fetched = await call(app, 'GET', String(record.headers.location), {})
  t.same([fetched.status, fetched.body.data.text, fetched.headers.etag], [200, 'hello', record.headers.etag])

  const disabled = await call(app, 'DELETE', String(record.headers.location), {})
  t.same([disabled.status, disabled.body.code, disabled.headers.allow], [405, 'APP_METHOD_DISABLED', 'GET, HEAD'], 'a disabled method: Allow lists what this collection enables on the path')
  const listing = await call(app, 'GET', `/api/p/${projectId}/notes`, {})
  t.same([listing.status, listing.headers.allow], [405, 'POST'], 'list disabled, create enabled')
})
