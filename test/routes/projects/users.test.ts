import t, { type Test } from 'tap'
import { buildTestApp, call, orgWithRoles } from '../../helper.js'
import { receiver } from '../../services/webhooks/fixtures.js'
import { eventually } from '../auxiliary/fixtures.js'

type Headers = Record<string, string>
const bearer = (token: string): Headers => ({ authorization: `Bearer ${token}` })
const PASSWORD = 'long enough 1'

async function setup (t: Test) {
  const app = await buildTestApp(t)
  const roles = await orgWithRoles(app)
  const newProject = async (name: string) => {
    const id = (await call(app, 'POST', '/api/projects', roles.owner.auth, { orgId: roles.orgId, name })).body.data.id as string
    await call(app, 'POST', `/api/projects/${id}/auth/toggle`, roles.owner.auth, { enabled: true })
    return { id, users: `/api/projects/${id}/users`, auth: `/api/p/${id}/auth` }
  }
  const register = async (projectId: string, email: string) =>
    (await call(app, 'POST', `/api/p/${projectId}/auth/register`, {}, { email, password: PASSWORD })).body.data as { user: { id: string }, accessToken: string, refreshToken: string }
  return { app, ...roles, newProject, register }
}

t.test('the list pages newest first with cursors, filters by address, and holds no secret', async (t) => {
  const { app, owner, newProject, register } = await setup(t)
  const shop = await newProject('Shop')
  const emails = ['ann@example.com', 'bob@example.com', 'cat@shop.example', 'dan@example.com', 'eve@shop.example']
  const ids: string[] = []
  for (const email of emails) ids.push((await register(shop.id, email)).user.id)

  const seen: string[] = []
  let cursor: string | null = null
  let pages = 0
  do {
    const res = await call(app, 'GET', `${shop.users}?limit=2${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`, owner.auth)
    t.equal(res.status, 200)
    t.ok(res.body.data.items.length <= 2)
    seen.push(...res.body.data.items.map((item: { id: string }) => item.id))
    cursor = res.body.data.nextCursor
    pages++
  } while (cursor !== null)
  t.equal(pages, 3, 'five users, two a page')
  t.same(seen, [...ids].reverse(), 'every user once, newest first')

  const first = (await call(app, 'GET', `${shop.users}?limit=1`, owner.auth)).body
  const { createdAt, updatedAt } = first.data.items[0]
  const expected = { id: ids[4], email: 'eve@shop.example', emailVerified: false, disabled: false, hasPassword: true, providers: [], createdAt, updatedAt }
  t.same(first.data.items[0], expected, 'exactly the account\'s state')
  const raw = JSON.stringify((await call(app, 'GET', shop.users, owner.auth)).body)
  for (const secret of ['passwordHash', '$argon2', 'sessionEpoch', 'refreshToken', 'accessToken']) t.notOk(raw.includes(secret), `no ${secret} in the list`)

  const shopOnes = await call(app, 'GET', `${shop.users}?email=${encodeURIComponent('@SHOP.')}`, owner.auth)
  t.same(shopOnes.body.data.items.map((item: { email: string }) => item.email), ['eve@shop.example', 'cat@shop.example'], 'contains, case-insensitively')
  const literal = await call(app, 'GET', `${shop.users}?email=${encodeURIComponent('.*')}`, owner.auth)
  t.same([literal.status, literal.body.data.items], [200, []], 'the filter is text, never a pattern')
  const paged = await call(app, 'GET', `${shop.users}?email=example.com&limit=2`, owner.auth)
  t.same(paged.body.data.items.map((item: { email: string }) => item.email), ['dan@example.com', 'bob@example.com'])
  const next = await call(app, 'GET', `${shop.users}?email=example.com&limit=2&cursor=${encodeURIComponent(paged.body.data.nextCursor)}`, owner.auth)
  t.same(next.body.data.items.map((item: { email: string }) => item.email), ['ann@example.com'])
  t.equal(next.body.data.nextCursor, null)
})

t.test('a cursor works only on the list and filter that gave it', async (t) => {
  const { app, owner, newProject, register } = await setup(t)
  const shop = await newProject('Shop')
  const blog = await newProject('Blog')
  for (const email of ['ann@example.com', 'bob@example.com']) {
    await register(shop.id, email)
    await register(blog.id, email)
  }
  const cursor = encodeURIComponent((await call(app, 'GET', `${shop.users}?limit=1`, owner.auth)).body.data.nextCursor)
  await call(app, 'POST', `/api/projects/${shop.id}/collections`, owner.auth, {
    name: 'notes', fields: [{ name: 'title', type: 'text' }], methods: { list: { enabled: true, rule: { requireAuth: false } }, create: { enabled: true, rule: { requireAuth: false } } }
  })
  for (const title of ['a', 'b']) t.equal((await call(app, 'POST', `/api/p/${shop.id}/notes`, owner.auth, { title })).status, 201)
  const noteCursor = (await call(app, 'GET', `/api/p/${shop.id}/notes?limit=1`, owner.auth)).body.data.nextCursor as string
  t.type(noteCursor, 'string')
  for (const url of [`${blog.users}?limit=1&cursor=${cursor}`, `${shop.users}?limit=1&cursor=${encodeURIComponent(noteCursor)}`, `${shop.users}?limit=1&email=ann&cursor=${cursor}`, `${shop.users}?limit=1&cursor=not-a-cursor`]) {
    const res = await call(app, 'GET', url, owner.auth)
    t.same([res.status, res.body.code, res.body.details], [400, 'APP_INVALID_CURSOR', { fields: [{ path: 'query.cursor', message: 'is not a nextCursor of this list' }] }], url)
  }
  t.equal((await call(app, 'GET', `${shop.users}?limit=1&cursor=${cursor}`, owner.auth)).status, 200, 'and works where it came from')
})

t.test('who may manage end users', async (t) => {
  const { app, owner, viewer, outsider, newProject, register } = await setup(t)
  const shop = await newProject('Shop')
  const ann = (await register(shop.id, 'ann@example.com')).user.id
  const routes: Array<[string, string, unknown?]> = [
    ['GET', shop.users], ['GET', `${shop.users}/${ann}`], ['PATCH', `${shop.users}/${ann}`, { disabled: true }], ['DELETE', `${shop.users}/${ann}`]
  ]
  for (const [method, url, body] of routes) {
    const byViewer = await call(app, method as 'GET', url, viewer.auth, body)
    t.same([byViewer.status, byViewer.body.code, byViewer.body.details], [403, 'APP_FORBIDDEN', { permission: 'project.users.manage' }], `${method} ${url}: a viewer`)
    const byOutsider = await call(app, method as 'GET', url, outsider.auth, body)
    t.same([byOutsider.status, byOutsider.body.code], [404, 'APP_PROJECT_NOT_FOUND'], `${method} ${url}: an outsider`)
    t.equal((await call(app, method as 'GET', url, {}, body)).status, 401, `${method} ${url}: nobody`)
  }
  t.equal((await call(app, 'GET', `${shop.users}/${ann}`, owner.auth)).body.data.disabled, false, 'nothing changed')
  for (const [method, url, body] of routes.slice(1)) {
    const unknown = await call(app, method as 'GET', url.replace(ann, '00000000000000000000'), owner.auth, body)
    t.same([unknown.status, unknown.body.code], [404, 'APP_USER_NOT_FOUND'], `${method}: no such user`)
  }
  const bad = await call(app, 'PATCH', `${shop.users}/${ann}`, owner.auth, { disabled: 'yes' })
  t.same([bad.status, bad.body.code], [400, 'APP_VALIDATION_FAILED'])
})

t.test('disabling ends the sessions at once; enabling revives none; deleting revokes them and forgets the identities', async (t) => {
  const { app, owner, newProject, register } = await setup(t)
  const shop = await newProject('Shop')
  const ann = await register(shop.id, 'ann@example.com')
  const bob = await register(shop.id, 'bob@example.com')
  const me = async (token: string) => (await call(app, 'GET', `${shop.auth}/me`, bearer(token))).status
  const refresh = async (refreshToken: string) => (await call(app, 'POST', `${shop.auth}/refresh`, {}, { refreshToken })).status

  const disabled = await call(app, 'PATCH', `${shop.users}/${ann.user.id}`, owner.auth, { disabled: true })
  t.same([disabled.status, disabled.body.data.disabled], [200, true])
  t.equal(await me(ann.accessToken), 401, 'the project JWT stops at once')
  t.equal(await refresh(ann.refreshToken), 401, 'the refresh token is revoked')
  const refused = await call(app, 'POST', `${shop.auth}/login`, {}, { email: 'ann@example.com', password: PASSWORD })
  t.same([refused.status, refused.body.code], [401, 'APP_USER_DISABLED'])
  t.equal(await me(bob.accessToken), 200, 'another user keeps theirs')

  const enabled = await call(app, 'PATCH', `${shop.users}/${ann.user.id}`, owner.auth, { disabled: false })
  t.equal(enabled.body.data.disabled, false)
  t.equal(await me(ann.accessToken), 401, 'the old session stays ended')
  t.equal((await call(app, 'POST', `${shop.auth}/login`, {}, { email: 'ann@example.com', password: PASSWORD })).status, 200, 'and a new one starts')

  const identities = app.store.collection('project_oauth_identities')
  await identities.insertOne({ _id: 'link-1', projectId: shop.id, provider: 'idp', subject: 's1', userId: bob.user.id, email: 'bob@example.com', createdAt: new Date() })
  t.same((await call(app, 'GET', `${shop.users}/${bob.user.id}`, owner.auth)).body.data.providers, ['idp'], 'linked providers are listed')
  const gone = await call(app, 'DELETE', `${shop.users}/${bob.user.id}`, owner.auth)
  t.same([gone.status, gone.body.data], [200, { id: bob.user.id, deleted: true }])
  t.equal(await me(bob.accessToken), 401)
  t.equal(await refresh(bob.refreshToken), 401)
  t.equal(await identities.countDocuments({ userId: bob.user.id }), 0, 'its identities went with it')
  t.same((await call(app, 'GET', shop.users, owner.auth)).body.data.items.map((item: { email: string }) => item.email), ['ann@example.com'])
  t.equal((await call(app, 'DELETE', `${shop.users}/${bob.user.id}`, owner.auth)).status, 404, 'once')
})

t.test('disabling, enabling and deleting an end user go through the record feed: a _users webhook receives each', async (t) => {
  const app = await buildTestApp(t, { env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' } })
  const { owner, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Feed' })).body.data.id as string
  await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, owner.auth, { enabled: true })
  const users = `/api/projects/${projectId}/users`
  const hook = await receiver(t)
  const made = await call(app, 'POST', `/api/projects/${projectId}/auxiliary/webhooks`, owner.auth, { url: hook.url, events: ['record.updated', 'record.deleted'], filter: { collections: ['_users'] } })
  t.equal(made.status, 201, JSON.stringify(made.body))
  const ann = (await call(app, 'POST', `/api/p/${projectId}/auth/register`, {}, { email: 'ann@example.com', password: PASSWORD })).body.data as { user: { id: string } }
  t.equal((await call(app, 'PATCH', `${users}/${ann.user.id}`, owner.auth, { disabled: true })).status, 200)
  t.equal((await call(app, 'PATCH', `${users}/${ann.user.id}`, owner.auth, { disabled: false })).status, 200)
  t.equal((await call(app, 'DELETE', `${users}/${ann.user.id}`, owner.auth)).status, 200)
  t.equal((await call(app, 'PATCH', `${users}/${ann.user.id}`, owner.auth, { disabled: true })).body.code, 'APP_USER_NOT_FOUND', 'a user gone is not found')
  await eventually(t, 'three deliveries', async () => hook.received.length >= 3)
  const bodies = hook.received.map((request) => request.body as unknown as { type: string })
  t.same(bodies.map((body) => body.type), ['record.updated', 'record.updated', 'record.deleted'])
  t.ok(bodies.every((body) => JSON.stringify(body).includes(ann.user.id)), 'each names the user')
  t.match(JSON.stringify(bodies[0]), /"disabled"/, 'the update says what changed')
})
