import t, { type Test } from 'tap'
import { buildTestApp, signUp, call, type TestApp } from '../../helper.js'

type Headers = Record<string, string>
const bearer = (token: string): Headers => ({ authorization: `Bearer ${token}` })
const PASSWORD = 'long enough 1'

/**
 * End users' sessions as Supabase and PocketBase give them: a short-lived
 * project JWT renewed by a rotating refresh token, and every session ended
 * at once when the user is deleted, disabled or changes their password.
 */
async function setup (t: Test, env: Record<string, string> = {}) {
  const app = await buildTestApp(t, { env: { AUTH_RATE_LIMIT_MAX: '1000', ...env } })
  const admin = await signUp(app, 'admin@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
  const newProject = async (name: string) => {
    const id = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name })).body.data.id as string
    await call(app, 'POST', `/api/projects/${id}/auth/toggle`, admin.auth, { enabled: true })
    const service = (await call(app, 'POST', `/api/projects/${id}/service-tokens`, admin.auth, { name: 'server' })).body.data.token as string
    const owner = { requireAuth: true, owner: 'author' }
    await call(app, 'POST', `/api/projects/${id}/collections`, admin.auth, {
      name: 'notes',
      fields: [{ name: 'text', type: 'text' }, { name: 'author', type: 'text' }],
      methods: Object.fromEntries(['list', 'get', 'create', 'update', 'delete'].map((method) => [method, { enabled: true, rule: owner }]))
    })
    return { id, auth: `/api/p/${id}/auth`, notes: `/api/p/${id}/notes`, users: `/api/p/${id}/_users`, service }
  }
  const shop = await newProject('Shop')
  const register = async (email: string, project = shop) => (await call(app, 'POST', `${project.auth}/register`, {}, { email, password: PASSWORD })).body.data
  return { app, admin, shop, newProject, register }
}

/** What an end user's token can still do: me, verify, and each data method. */
async function reach (app: TestApp, project: { auth: string, notes: string, service: string }, token: string, noteId: string) {
  return {
    me: (await call(app, 'GET', `${project.auth}/me`, bearer(token))).status,
    verify: (await call(app, 'POST', `${project.auth}/verify`, bearer(project.service), { token })).body.data.valid as boolean,
    list: (await call(app, 'GET', project.notes, bearer(token))).status,
    create: (await call(app, 'POST', project.notes, bearer(token), { text: 'x' })).status,
    update: (await call(app, 'PUT', `${project.notes}/${noteId}`, bearer(token), { text: 'y' })).status,
    delete: (await call(app, 'DELETE', `${project.notes}/${noteId}`, bearer(token))).status
  }
}
const refused = { me: 401, verify: false, list: 401, create: 401, update: 401, delete: 401 }

t.test('sign-up and login hand out a short-lived JWT and a rotating refresh token', async (t) => {
  const { app, shop, register } = await setup(t)
  const session = await register('ann@example.com')
  t.match(session, { tokenType: 'Bearer', expiresIn: 900, refreshToken: String })
  const claims = JSON.parse(Buffer.from((session.accessToken as string).split('.')[1], 'base64url').toString())
  t.equal(claims.exp - claims.iat, 900, 'project JWTs live 15 minutes by default')

  const refreshed = await call(app, 'POST', `${shop.auth}/refresh`, {}, { refreshToken: session.refreshToken })
  t.equal(refreshed.status, 200)
  t.match(refreshed.body.data, { user: { id: session.user.id }, tokenType: 'Bearer', expiresIn: 900 })
  t.not(refreshed.body.data.refreshToken, session.refreshToken, 'a new refresh token each time')
  t.equal((await call(app, 'GET', `${shop.auth}/me`, bearer(refreshed.body.data.accessToken))).status, 200, 'the new JWT works')

  const logout = await call(app, 'POST', `${shop.auth}/logout`, {}, { refreshToken: refreshed.body.data.refreshToken })
  t.same(logout.body.data, { loggedOut: true })
  const afterLogout = await call(app, 'POST', `${shop.auth}/refresh`, {}, { refreshToken: refreshed.body.data.refreshToken })
  t.same([afterLogout.status, afterLogout.body.code], [401, 'APP_INVALID_REFRESH_TOKEN'], 'logout ends the session')

  const login = (await call(app, 'POST', `${shop.auth}/login`, {}, { email: 'ann@example.com', password: PASSWORD })).body.data
  const other = await setup(t)
  const elsewhere = await call(other.app, 'POST', `${other.shop.auth}/refresh`, {}, { refreshToken: login.refreshToken })
  t.equal(elsewhere.status, 401, 'a refresh token is worth nothing on another deployment')
  const otherProject = await (await setup(t)).newProject('Other')
  t.equal((await call(app, 'POST', `/api/p/${otherProject.id}/auth/refresh`, {}, { refreshToken: login.refreshToken })).status, 404, 'nor on a project that does not exist here')
  for (const bad of ['', 'x'.repeat(513)]) {
    t.equal((await call(app, 'POST', `${shop.auth}/refresh`, {}, { refreshToken: bad })).status, 400, 'a malformed refresh token is a 400')
  }
})

t.test('a refresh token works only on its own project, and not while auth is off', async (t) => {
  const { app, admin, shop, newProject, register } = await setup(t)
  const blog = await newProject('Blog')
  const session = await register('ann@example.com')
  const wrong = await call(app, 'POST', `${blog.auth}/refresh`, {}, { refreshToken: session.refreshToken })
  t.same([wrong.status, wrong.body.code], [401, 'APP_INVALID_REFRESH_TOKEN'], 'another project refuses it')
  await call(app, 'POST', `/api/projects/${shop.id}/auth/toggle`, admin.auth, { enabled: false })
  const off = await call(app, 'POST', `${shop.auth}/refresh`, {}, { refreshToken: session.refreshToken })
  t.same([off.status, off.body.code], [403, 'APP_PROJECT_AUTH_DISABLED'], 'auth off')
  await call(app, 'POST', `/api/projects/${shop.id}/auth/toggle`, admin.auth, { enabled: true })
  t.equal((await call(app, 'POST', `${shop.auth}/refresh`, {}, { refreshToken: session.refreshToken })).status, 200, 'and on again, the session is intact')
})

t.test('a deleted end user loses every session at once', async (t) => {
  const { app, admin, shop, register } = await setup(t)
  await call(app, 'PUT', `/api/projects/${shop.id}/collections/_users`, admin.auth, { methods: { delete: { enabled: true, rule: null } } })
  const ann = await register('ann@example.com')
  const note = (await call(app, 'POST', shop.notes, bearer(ann.accessToken), { text: 'mine' })).body.data.id as string
  t.match(await reach(app, shop, ann.accessToken, note), { me: 200, verify: true, list: 200, create: 201, update: 200 })
  t.equal((await call(app, 'DELETE', `${shop.users}/${ann.user.id as string}`, admin.auth)).status, 200)
  t.same(await reach(app, shop, ann.accessToken, note), refused, 'the JWT stops on every route, long before it expires')
  t.equal((await call(app, 'POST', `${shop.auth}/refresh`, {}, { refreshToken: ann.refreshToken })).status, 401, 'and the refresh token is dead')
  const again = await register('ann@example.com')
  t.not(again.user.id, ann.user.id, 'someone registering the same address later is another user')
  t.same(await reach(app, shop, ann.accessToken, note), refused, 'whom the old token never reaches')
})

t.test('a disabled end user loses every session, and enabling them again revives none', async (t) => {
  const { app, admin, shop, register } = await setup(t)
  const users = (await call(app, 'GET', `/api/projects/${shop.id}/collections/_users`, admin.auth)).body.data
  const flagged = await call(app, 'PUT', `/api/projects/${shop.id}/collections/_users`, admin.auth, {
    fields: [...users.fields, { name: 'disabled', type: 'boolean' }], methods: { update: { enabled: true, rule: null } }
  })
  t.equal(flagged.status, 200, 'an admin gives _users the disabled flag')
  const ann = await register('ann@example.com')
  const bob = await register('bob@example.com')
  const note = (await call(app, 'POST', shop.notes, bearer(ann.accessToken), { text: 'mine' })).body.data.id as string

  t.equal((await call(app, 'PUT', `${shop.users}/${ann.user.id as string}`, admin.auth, { disabled: true })).status, 200)
  t.same(await reach(app, shop, ann.accessToken, note), refused, 'the JWT stops at once')
  t.equal((await call(app, 'POST', `${shop.auth}/refresh`, {}, { refreshToken: ann.refreshToken })).status, 401, 'the refresh token is dead')
  const login = await call(app, 'POST', `${shop.auth}/login`, {}, { email: 'ann@example.com', password: PASSWORD })
  t.same([login.status, login.body.code], [401, 'APP_USER_DISABLED'], 'and the user cannot sign in')
  t.equal((await call(app, 'POST', `/api/projects/${shop.id}/users/${ann.user.id as string}/token`, admin.auth)).status, 403, 'nor be minted a token')
  t.equal((await call(app, 'GET', `${shop.auth}/me`, bearer(bob.accessToken))).status, 200, 'other users are untouched')

  t.equal((await call(app, 'PUT', `${shop.users}/${ann.user.id as string}`, admin.auth, { disabled: false })).status, 200)
  t.same(await reach(app, shop, ann.accessToken, note), refused, 'enabled again, the old JWT still does nothing')
  t.equal((await call(app, 'POST', `${shop.auth}/refresh`, {}, { refreshToken: ann.refreshToken })).status, 401, 'nor the old refresh token')
  const back = (await call(app, 'POST', `${shop.auth}/login`, {}, { email: 'ann@example.com', password: PASSWORD })).body.data
  t.match(await reach(app, shop, back.accessToken, note), { me: 200, verify: true, list: 200 }, 'a new sign-in works')

  const bulk = await call(app, 'PATCH', shop.users, admin.auth, { filter: { email: 'bob@example.com' }, set: { disabled: true } })
  t.equal(bulk.body.data.modified, 1)
  t.equal((await call(app, 'GET', `${shop.auth}/me`, bearer(bob.accessToken))).status, 401, 'a bulk update disables just as well')
})

t.test('changing the password ends every other session and returns a new one', async (t) => {
  const { app, shop, register } = await setup(t)
  const phone = await register('ann@example.com')
  const laptop = (await call(app, 'POST', `${shop.auth}/login`, {}, { email: 'ann@example.com', password: PASSWORD })).body.data
  const path = `${shop.auth}/password`
  const refusals: Array<[string, Headers, unknown, number, string]> = [
    ['no token', {}, { currentPassword: PASSWORD, newPassword: 'a new long one' }, 401, 'APP_UNAUTHORIZED'],
    ['a wrong current password', bearer(laptop.accessToken), { currentPassword: 'not my password', newPassword: 'a new long one' }, 403, 'APP_WRONG_PASSWORD'],
    ['a weak new password', bearer(laptop.accessToken), { currentPassword: PASSWORD, newPassword: 'short' }, 400, 'APP_WEAK_PASSWORD'],
    ['the email as password', bearer(laptop.accessToken), { currentPassword: PASSWORD, newPassword: 'ann@example.com' }, 400, 'APP_WEAK_PASSWORD'],
    ['a missing field', bearer(laptop.accessToken), { currentPassword: PASSWORD }, 400, 'APP_VALIDATION_FAILED']
  ]
  for (const [name, headers, body, status, code] of refusals) {
    const res = await call(app, 'POST', path, headers, body)
    t.same([res.status, res.body.code], [status, code], name)
  }
  t.equal((await call(app, 'GET', `${shop.auth}/me`, bearer(phone.accessToken))).status, 200, 'refused changes end nothing')

  const changed = await call(app, 'POST', path, bearer(laptop.accessToken), { currentPassword: PASSWORD, newPassword: 'a new long one' })
  t.equal(changed.status, 200)
  t.match(changed.body.data, { user: { id: laptop.user.id }, refreshToken: String })
  t.equal((await call(app, 'GET', `${shop.auth}/me`, bearer(changed.body.data.accessToken))).status, 200, 'the new session works')
  for (const [name, session] of [['the phone', phone], ['the laptop', laptop]] as const) {
    t.equal((await call(app, 'GET', `${shop.auth}/me`, bearer(session.accessToken))).status, 401, `${name}'s JWT is refused`)
    t.equal((await call(app, 'POST', `${shop.auth}/refresh`, {}, { refreshToken: session.refreshToken })).status, 401, `${name}'s refresh token is dead`)
  }
  t.equal((await call(app, 'POST', `${shop.auth}/login`, {}, { email: 'ann@example.com', password: PASSWORD })).status, 401, 'the old password is gone')
  t.equal((await call(app, 'POST', `${shop.auth}/login`, {}, { email: 'ann@example.com', password: 'a new long one' })).status, 200, 'the new one works')
})

t.test('two refreshes of one token at once both succeed; a replay after the grace window ends the session', async (t) => {
  const { app, shop, register } = await setup(t, { REFRESH_REUSE_GRACE_SECONDS: '1' })
  const session = await register('ann@example.com')
  const [first, second] = await Promise.all([0, 1].map(async () => await call(app, 'POST', `${shop.auth}/refresh`, {}, { refreshToken: session.refreshToken })))
  t.same([first.status, second.status], [200, 200], 'a double submit does not log the user out')
  t.not(first.body.data.refreshToken, second.body.data.refreshToken)
  const current = second.body.data.refreshToken as string

  await new Promise((resolve) => setTimeout(resolve, 1100))
  const replay = await call(app, 'POST', `${shop.auth}/refresh`, {}, { refreshToken: session.refreshToken })
  t.same([replay.status, replay.body.code], [401, 'APP_INVALID_REFRESH_TOKEN'], 'replayed after the window, the old token is refused')
  t.equal((await call(app, 'POST', `${shop.auth}/refresh`, {}, { refreshToken: current })).status, 401, 'and its whole family is revoked')
  t.equal((await call(app, 'POST', `${shop.auth}/refresh`, {}, { refreshToken: first.body.data.refreshToken })).status, 401, 'the sibling too')
})

t.test('login is limited per account across addresses, with a cooldown rather than a lock', async (t) => {
  const { app, shop, register } = await setup(t, { AUTH_RATE_LIMIT_MAX: '3', AUTH_RATE_LIMIT_WINDOW_SECONDS: '3' })
  const attempt = async (email: string, address: string) => (await app.inject({ method: 'POST', url: `${shop.auth}/login`, remoteAddress: address, payload: { email, password: 'wrong password' } })).statusCode
  // Windows are aligned to the limiter's clock (the store's): start at the top of one, so the attempts below fall in it.
  // A round that a slow machine spread over two windows proves nothing either way: it is made again with a new account.
  const sleep = async (ms: number) => await new Promise((resolve) => setTimeout(resolve, ms))
  const windowOf = (): number => Math.floor(app.storeClock.nowMs() / 3000)
  let email = ''
  let statuses: number[] = []
  for (let round = 0; round < 5; round++) {
    email = `ann${round}@example.com`
    await register(email)
    await sleep(3000 - (app.storeClock.nowMs() % 3000) + 20)
    const window = windowOf()
    statuses = []
    for (let i = 0; i < 4; i++) statuses.push(await attempt(email, `10.0.0.${i + 1}`))
    if (windowOf() === window) break
  }
  t.same(statuses, [401, 401, 401, 429], 'four addresses, one account: the fourth attempt is held off')
  t.equal(await attempt('bob@example.com', '10.0.0.9'), 401, 'another account is not')
  await sleep(3000 - (app.storeClock.nowMs() % 3000) + 20)
  t.equal((await app.inject({ method: 'POST', url: `${shop.auth}/login`, remoteAddress: '10.0.0.7', payload: { email, password: PASSWORD } })).statusCode, 200, 'after the window the owner signs in')
})

t.test('deleting the project forgets its end users\' sessions', async (t) => {
  const { app, admin, shop, register } = await setup(t)
  const session = await register('ann@example.com')
  t.equal((await call(app, 'DELETE', `/api/projects/${shop.id}`, admin.auth)).status, 200)
  t.equal(await app.store.collection('project_refresh_tokens').countDocuments({ scope: shop.id }), 0)
  t.equal((await call(app, 'POST', `${shop.auth}/refresh`, {}, { refreshToken: session.refreshToken })).status, 404)
})
