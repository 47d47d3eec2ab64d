import t, { type Test } from 'tap'
import { createHmac } from 'node:crypto'
import { buildTestApp, signUp, call } from '../../helper.js'
import { PROJECT_USERS_TABLE, projectCollectionName } from '../../../services/projects/naming.js'
import { AppError } from '../../../services/platform/errors.js'

type Headers = Record<string, string>

const bearer = (token: string): Headers => ({ authorization: `Bearer ${token}` })

async function setup (t: Test, env: Record<string, string> = {}) {
  const app = await buildTestApp(t, { env })
  const owner = await signUp(app, 'owner@example.com')
  const viewer = await signUp(app, 'viewer@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', owner.auth, { name: 'Acme' })).body.data.id as string
  await call(app, 'POST', `/api/organizations/${orgId}/members`, owner.auth, { userId: viewer.id, role: 'viewer' })
  const newProject = async (name: string, authOn = true) => {
    const id = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name })).body.data.id as string
    if (authOn) {
      await call(app, 'POST', `/api/projects/${id}/auth/toggle`, owner.auth, { enabled: true })
      // The profile fields these tests send at sign-up, declared on _users as a project would.
      const users = (await call(app, 'GET', `/api/projects/${id}/collections/_users`, owner.auth)).body.data
      const profile = ['displayName', 'plan', 'team'].map((name) => ({ name, type: 'text' }))
      await call(app, 'PUT', `/api/projects/${id}/collections/_users`, owner.auth, { fields: [...users.fields, ...profile] })
    }
    const service = (await call(app, 'POST', `/api/projects/${id}/service-tokens`, owner.auth, { name: 'server' })).body.data.token as string
    return { id, base: `/api/p/${id}/auth`, service }
  }
  return { app, owner, viewer, newProject }
}

/** A JWT signed with a key of our choosing: what an attacker who knows the claims but not the key can make. */
function forge (claims: Record<string, unknown>, key: string | Buffer = 'not the key'): string {
  const encode = (part: object) => Buffer.from(JSON.stringify(part)).toString('base64url')
  const body = `${encode({ alg: 'HS256', typ: 'JWT' })}.${encode(claims)}`
  return `${body}.${createHmac('sha256', key).update(body).digest('base64url')}`
}

t.test('register, login and me while auth is on', async (t) => {
  const { app, newProject } = await setup(t)
  const shop = await newProject('Shop')
  const registered = await call(app, 'POST', `${shop.base}/register`, {}, { email: ' Ann@Example.com ', password: 'long enough 1', extraFields: { displayName: 'Ann', plan: 'pro' } })
  t.equal(registered.status, 201)
  t.match(registered.body.data, { tokenType: 'Bearer', user: { email: 'ann@example.com', displayName: 'Ann', plan: 'pro', emailVerified: false } })
  t.notOk('passwordHash' in registered.body.data.user, 'the password hash is never returned')
  const [, payload] = (registered.body.data.accessToken as string).split('.')
  t.match(JSON.parse(Buffer.from(payload, 'base64url').toString()), { type: 'project', pid: shop.id, sub: registered.body.data.user.id })

  const refusals: Array<[string, unknown, number, string]> = [
    ['duplicate email', { email: 'ann@example.com', password: 'long enough 2' }, 409, 'APP_EMAIL_TAKEN'],
    ['weak password', { email: 'bob@example.com', password: 'short' }, 400, 'APP_WEAK_PASSWORD'],
    ['reserved field', { email: 'bob@example.com', password: 'long enough 1', extraFields: { passwordHash: 'x' } }, 400, 'APP_RESERVED_FIELD'],
    ['reserved id', { email: 'bob@example.com', password: 'long enough 1', extraFields: { id: 'admin' } }, 400, 'APP_RESERVED_FIELD'],
    ['operator name', { email: 'bob@example.com', password: 'long enough 1', extraFields: { $set: 1 } }, 400, 'APP_RESERVED_FIELD'],
    ['unknown field', { email: 'bob@example.com', password: 'long enough 1', role: 'admin' }, 400, 'APP_VALIDATION_FAILED']
  ]
  for (const [name, payload, status, code] of refusals) {
    const res = await call(app, 'POST', `${shop.base}/register`, {}, payload)
    t.same([res.status, res.body.code], [status, code], name)
  }
  t.equal(await app.store.collection(`p_${shop.id}__users`).countDocuments({}), 1, 'no refused registration stored anything')

  const login = await call(app, 'POST', `${shop.base}/login`, {}, { email: 'ANN@example.com', password: 'long enough 1' })
  t.equal(login.status, 200)
  // One name for one thing: the platform's login and an end user's answer the same four.
  const platformLogin = await call(app, 'POST', '/api/auth/login', {}, { email: 'owner@example.com', password: 'correct horse battery' })
  const tokenNames = { accessToken: String, refreshToken: String, expiresIn: Number, tokenType: 'Bearer' }
  t.match(platformLogin.body.data, tokenNames, 'the platform login')
  for (const [name, answer] of [['register', registered], ['login', login]] as const) {
    t.match(answer.body.data, tokenNames, `the end-user ${name}`)
    t.notOk('token' in answer.body.data, `the end-user ${name} has no second name for it`)
  }
  const wrongPassword = await call(app, 'POST', `${shop.base}/login`, {}, { email: 'ann@example.com', password: 'wrong password' })
  const unknownEmail = await call(app, 'POST', `${shop.base}/login`, {}, { email: 'who@example.com', password: 'wrong password' })
  t.same([wrongPassword.status, wrongPassword.body], [unknownEmail.status, unknownEmail.body], 'one answer for a wrong password and an unknown email')
  t.equal(wrongPassword.status, 401)

  const me = await call(app, 'GET', `${shop.base}/me`, bearer(login.body.data.accessToken))
  t.match(me.body.data, { id: registered.body.data.user.id, email: 'ann@example.com', displayName: 'Ann' })
  t.equal((await app.inject({ url: `${shop.base}/me` })).statusCode, 401, 'me needs a token')
})

t.test('auth off refuses end users but keeps them; unknown projects are 404', async (t) => {
  const { app, owner, newProject } = await setup(t)
  const closed = await newProject('Closed', false)
  const refused = await call(app, 'POST', `${closed.base}/register`, {}, { email: 'a@example.com', password: 'long enough 1' })
  t.same([refused.status, refused.body.code], [403, 'APP_PROJECT_AUTH_DISABLED'])
  t.equal((await call(app, 'POST', `${closed.base}/login`, {}, { email: 'a@example.com', password: 'long enough 1' })).body.code, 'APP_PROJECT_AUTH_DISABLED')

  const open = await newProject('Open')
  const session = (await call(app, 'POST', `${open.base}/register`, {}, { email: 'a@example.com', password: 'long enough 1' })).body.data
  await call(app, 'POST', `/api/projects/${open.id}/auth/toggle`, owner.auth, { enabled: false })
  t.equal((await call(app, 'GET', `${open.base}/me`, bearer(session.accessToken))).body.code, 'APP_PROJECT_AUTH_DISABLED', 'a project JWT stops working while auth is off')
  t.same((await call(app, 'POST', `${open.base}/verify`, bearer(open.service), { token: session.accessToken })).body.data, { valid: false })
  await call(app, 'POST', `/api/projects/${open.id}/auth/toggle`, owner.auth, { enabled: true })
  t.equal((await call(app, 'GET', `${open.base}/me`, bearer(session.accessToken))).status, 200, 'and works again, user intact, when it is back on')

  const missing = await call(app, 'POST', '/api/p/00000000000000000000/auth/register', {}, { email: 'a@example.com', password: 'long enough 1' })
  t.same([missing.status, missing.body.code], [404, 'APP_PROJECT_NOT_FOUND'])
})

t.test('token kinds never pass for one another', async (t) => {
  const { app, owner, newProject } = await setup(t)
  const a = await newProject('A')
  const b = await newProject('B')
  const annA = (await call(app, 'POST', `${a.base}/register`, {}, { email: 'ann@example.com', password: 'long enough 1' })).body.data
  await call(app, 'POST', `${b.base}/register`, {}, { email: 'ann@example.com', password: 'long enough 1' })
  const pat = (await call(app, 'POST', '/api/auth/api-keys', owner.auth, { name: 'ci' })).body.data.token as string
  const [header, payload, signature] = (annA.accessToken as string).split('.')
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString())
  const retargeted = `${header}.${Buffer.from(JSON.stringify({ ...claims, pid: b.id, aud: `plinth:project:${b.id}` })).toString('base64url')}.${signature}`

  const onProjectMe: Array<[string, string]> = [
    ['project A\'s JWT on project B', annA.accessToken],
    ['a platform JWT', owner.token],
    ['a PAT', pat],
    ['a service token', b.service],
    ['A\'s token with its claims moved to B', retargeted],
    ['a forged project token', forge({ ...claims, pid: b.id, aud: `plinth:project:${b.id}` })],
    ['alg none', `${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${payload}.`],
    ['garbage', 'not-a-token']
  ]
  for (const [name, token] of onProjectMe) {
    const res = await call(app, 'GET', `${b.base}/me`, bearer(token))
    t.equal(res.status, 401, `${name} is refused on /me`)
    const verified = await call(app, 'POST', `${b.base}/verify`, bearer(b.service), { token })
    t.same(verified.body.data, { valid: false }, `${name} does not verify`)
  }

  const platformMe = await call(app, 'GET', '/api/auth/me', bearer(annA.accessToken))
  t.equal(platformMe.status, 401, 'a project JWT is not a platform credential')
  t.equal((await call(app, 'GET', '/api/projects', bearer(annA.accessToken))).status, 401)
  t.equal((await call(app, 'GET', '/api/auth/me', bearer(a.service))).status, 401, 'nor is a service token')

  // Each refusal of a token no refresh can cure has its own code, says what was sent and what the route takes, and
  // names the route's security schemes.
  const platformOnly = ['platformToken']
  const endUserOnly = ['projectUserToken']
  const dataKinds = ['projectUserToken', 'platformToken']
  const said: Array<[string, string, string, RegExp, string[]]> = [
    ['a project JWT on a platform route', '/api/projects', annA.accessToken, /^A project \(end-user\) token was sent where a platform access token .* or a personal access token .* is needed$/, platformOnly],
    ['a service token on a platform route', '/api/auth/me', a.service, /^A project service token was sent where a platform access token/, platformOnly],
    ['a platform JWT on an end-user route', `${a.base}/me`, owner.token, /^A platform access token was sent where an end user's project token of this project .* is needed$/, endUserOnly],
    ['a PAT on an end-user route', `${a.base}/me`, pat, /^A personal access token was sent where an end user's project token/, endUserOnly],
    ['a service token on an end-user route', `${a.base}/me`, a.service, /^A project service token was sent where an end user's project token/, endUserOnly],
    ['another project\'s JWT on an end-user route', `${b.base}/me`, annA.accessToken, /^A project \(end-user\) token of another project was sent where an end user's project token of this project/, endUserOnly],
    ['another project\'s JWT on the data API', `/api/p/${b.id}/_users`, annA.accessToken, /^A project \(end-user\) token of another project was sent where .* or none is needed$/, dataKinds],
    ['a service token on the data API', `/api/p/${a.id}/_users`, a.service, /^A project service token was sent where an end user's project token of this project .* a platform access token/, dataKinds]
  ]
  for (const [name, url, token, message, allowed] of said) {
    const res = await call(app, 'GET', url, bearer(token))
    t.same([res.status, res.body.code, res.body.details], [401, 'APP_WRONG_TOKEN_KIND', { allowed }], name)
    t.match(res.body.message, message, `${name}: says so`)
  }

  // A token of the right kind that fails its checks is just invalid: expired (worth a refresh), tampered with, moved.
  const expired = forge({ sub: owner.id, sid: 'x', type: 'platform', exp: 1 })
  const expiredPlatform = await call(app, 'GET', '/api/projects', bearer(expired))
  t.same([expiredPlatform.status, expiredPlatform.body.code, expiredPlatform.body.message], [401, 'APP_INVALID_TOKEN', 'Token is invalid or expired'], 'a platform token that fails its checks is just invalid')
  const now = Math.floor(Date.now() / 1000)
  const invalid: Array<[string, string, string]> = [
    ['an expired project JWT of this project', `${a.base}/me`, forge({ ...claims, iat: now - 7200, exp: now - 3600 }, app.deriveSecretKey(`jwt:project:${a.id}`))],
    ['the same on the data API', `/api/p/${a.id}/_users`, forge({ ...claims, iat: now - 7200, exp: now - 3600 }, app.deriveSecretKey(`jwt:project:${a.id}`))],
    ['A\'s token with its claims moved to B, on B', `${b.base}/me`, retargeted],
    ['the same on B\'s data API', `/api/p/${b.id}/_users`, retargeted],
    ['a tampered platform JWT', '/api/projects', `${owner.token}x`]
  ]
  for (const [name, url, token] of invalid) {
    const res = await call(app, 'GET', url, bearer(token))
    t.same([res.status, res.body.code], [401, 'APP_INVALID_TOKEN'], name)
  }

  const scoped = (await call(app, 'POST', '/api/auth/api-keys', owner.auth, { name: 'reader', scopes: ['git.read', 'dns.read'] })).body.data.token as string
  const narrowed = await call(app, 'GET', `/api/projects/${a.id}`, bearer(scoped))
  t.same([narrowed.status, narrowed.body.code, narrowed.body.details], [403, 'APP_FORBIDDEN', { permission: 'project.read' }])
  t.equal(narrowed.body.message, 'This needs the "project.read" permission, and this personal access token is scoped to dns.read, git.read: make a token with the "project.read" scope', 'a scoped PAT\'s refusal names its scopes and the one needed')
  await call(app, 'PUT', `/api/projects/${a.id}/collections/_users`, owner.auth, { methods: { list: { enabled: true, rule: null } } })
  const records = await call(app, 'GET', `/api/p/${a.id}/_users`, bearer(scoped))
  t.match(records.body, { code: 'APP_FORBIDDEN', message: /scoped to dns\.read, git\.read: make a token with the "records\.read" scope$/, details: { permission: 'records.read' } }, 'on the data API too')
  const unscoped = (await call(app, 'POST', '/api/auth/api-keys', owner.auth, { name: 'all' })).body.data.token as string
  t.equal((await call(app, 'GET', `/api/projects/${a.id}`, bearer(unscoped))).status, 200)
})

t.test('verify needs a service token of that very project', async (t) => {
  const { app, owner, newProject } = await setup(t)
  const a = await newProject('A')
  const b = await newProject('B')
  const session = (await call(app, 'POST', `${a.base}/register`, {}, { email: 'ann@example.com', password: 'long enough 1', extraFields: { team: 'red' } })).body.data
  const ok = await call(app, 'POST', `${a.base}/verify`, bearer(a.service), { token: session.accessToken })
  t.match(ok.body.data, { valid: true, user: { id: session.user.id, email: 'ann@example.com', team: 'red' } })
  t.notOk('passwordHash' in ok.body.data.user)
  t.same((await call(app, 'POST', `${a.base}/verify`, bearer(a.service), { token: `${session.accessToken as string}x` })).body.data, { valid: false }, 'tampered')
  for (const [name, token] of [['empty', ''], ['oversized', `${session.accessToken as string}.${'a'.repeat(9000)}`], ['not a JWT', 'hello'], ['a PAT as the token', a.service]]) {
    const res = await call(app, 'POST', `${a.base}/verify`, bearer(a.service), { token })
    t.same([res.status, res.body.data], [200, { valid: false }], `${name}: valid false`)
  }
  t.match(await call(app, 'POST', `${a.base}/verify`, bearer(a.service), { token: 5 }), { status: 400, body: { code: 'APP_VALIDATION_FAILED' } }, 'a token that is not a string')
  t.match(await call(app, 'POST', `${a.base}/verify`, bearer(a.service), {}), { status: 400, body: { code: 'APP_VALIDATION_FAILED' } }, 'no token')
  t.match(ok.body.data, { valid: true }, 'the valid answer is unchanged by the refusals')
  t.match((await call(app, 'POST', `${b.base}/verify`, bearer(b.service), { token: session.accessToken })).body.data, { valid: false }, 'project B refuses A\'s token even after A said valid')
  t.match((await call(app, 'POST', `${a.base}/verify`, bearer(a.service), { token: session.accessToken })).body.data, { valid: true }, 'and A still says valid')

  for (const [name, headers] of [
    ['no credential', {}],
    ['another project\'s service token', bearer(b.service)],
    ['a PAT', bearer((await call(app, 'POST', '/api/auth/api-keys', owner.auth, { name: 'x' })).body.data.token)],
    ['a platform JWT', owner.auth],
    ['the project JWT itself', bearer(session.accessToken)]
  ] as Array<[string, Headers]>) {
    const res = await call(app, 'POST', `${a.base}/verify`, headers, { token: session.accessToken })
    t.equal(res.status, 401, `${name} cannot call verify`)
  }

  const tokenId = (await call(app, 'GET', `/api/projects/${a.id}/service-tokens`, owner.auth)).body.data[0].id as string
  await call(app, 'DELETE', `/api/projects/${a.id}/service-tokens/${tokenId}`, owner.auth)
  t.equal((await call(app, 'POST', `${a.base}/verify`, bearer(a.service), { token: session.accessToken })).status, 401, 'a revoked service token stops at once')
})

t.test('project tokens carry their lifetime and are refused once expired', async (t) => {
  const { app, newProject } = await setup(t, { PROJECT_TOKEN_TTL_SECONDS: '60' })
  const shop = await newProject('Shop')
  const session = (await call(app, 'POST', `${shop.base}/register`, {}, { email: 'ann@example.com', password: 'long enough 1' })).body.data
  t.equal(session.expiresIn, 60)
  const [, payload] = (session.accessToken as string).split('.')
  const claims = JSON.parse(Buffer.from(payload, 'base64url').toString())
  t.equal(claims.exp - claims.iat, 60, 'the lifetime follows PROJECT_TOKEN_TTL_SECONDS')

  // Signed with the project's real key, so only the expiry is wrong with it.
  const key = app.deriveSecretKey(`jwt:project:${shop.id}`)
  const now = Math.floor(Date.now() / 1000)
  const expired = forge({ ...claims, iat: now - 120, exp: now - 1 }, key)
  const fresh = forge({ ...claims, iat: now, exp: now + 60 }, key)
  t.equal((await call(app, 'GET', `${shop.base}/me`, bearer(fresh))).status, 200, 'the same claims with a future expiry pass')
  t.equal((await call(app, 'GET', `${shop.base}/me`, bearer(expired))).status, 401, 'an expired token is refused')
  t.same((await call(app, 'POST', `${shop.base}/verify`, bearer(shop.service), { token: expired })).body.data, { valid: false })
  t.equal((await call(app, 'GET', `/api/p/${shop.id}/posts`, bearer(expired))).status, 401, 'and by the data API')
})

t.test('deeply nested extra fields are refused, not a crash', async (t) => {
  const { app, newProject } = await setup(t)
  const shop = await newProject('Shop')
  let deep: unknown = 'leaf'
  for (let i = 0; i < 1000; i++) deep = [deep]
  const res = await call(app, 'POST', `${shop.base}/register`, {}, { email: 'deep@example.com', password: 'long enough 1', extraFields: { deep } })
  t.same([res.status, res.body.code], [400, 'APP_EXTRA_FIELDS_TOO_LARGE'])
})

t.test('admins mint end-user tokens; viewers cannot', async (t) => {
  const { app, owner, viewer, newProject } = await setup(t)
  const shop = await newProject('Shop')
  const user = (await call(app, 'POST', `${shop.base}/register`, {}, { email: 'ann@example.com', password: 'long enough 1' })).body.data.user
  const minted = await call(app, 'POST', `/api/projects/${shop.id}/users/${user.id as string}/token`, owner.auth)
  t.equal(minted.status, 201)
  t.equal((await call(app, 'GET', `${shop.base}/me`, bearer(minted.body.data.accessToken))).body.data.id, user.id)
  const byViewer = await call(app, 'POST', `/api/projects/${shop.id}/users/${user.id as string}/token`, viewer.auth)
  t.same([byViewer.status, byViewer.body.details], [403, { permission: 'project.users.manage' }])
  const unknown = await call(app, 'POST', `/api/projects/${shop.id}/users/00000000000000000000/token`, owner.auth)
  t.same([unknown.status, unknown.body.code], [404, 'APP_USER_NOT_FOUND'])
})

t.test('login is rate-limited per project and address', async (t) => {
  // A day's window: fixed windows start at multiples of their length, and four slow attempts must not straddle a boundary.
  const { app, newProject } = await setup(t, { AUTH_RATE_LIMIT_MAX: '3', AUTH_RATE_LIMIT_WINDOW_SECONDS: '86400' })
  const shop = await newProject('Shop')
  const statuses: number[] = []
  for (let i = 0; i < 4; i++) statuses.push((await call(app, 'POST', `${shop.base}/login`, {}, { email: 'who@example.com', password: 'wrong password' })).status)
  t.same(statuses, [401, 401, 401, 429])
  const limited = await app.inject({ method: 'POST', url: `${shop.base}/login`, payload: { email: 'who@example.com', password: 'wrong password' } })
  t.ok(Number(limited.headers['retry-after']) > 0, 'with Retry-After')
  const other = await newProject('Other')
  t.equal((await call(app, 'POST', `${other.base}/login`, {}, { email: 'who@example.com', password: 'wrong password' })).status, 401, 'another project has its own budget')
})

t.test('a verify answer follows every change: the user\'s fields, auth off and on, the user deleted', async (t) => {
  const { app, owner, newProject } = await setup(t)
  const shop = await newProject('Shop')
  const session = (await call(app, 'POST', `${shop.base}/register`, {}, { email: 'ann@example.com', password: 'long enough 1', extraFields: { team: 'red' } })).body.data
  const verify = async () => (await call(app, 'POST', `${shop.base}/verify`, bearer(shop.service), { token: session.accessToken })).body.data
  t.match(await verify(), { valid: true, user: { team: 'red' } })
  t.match(await verify(), { valid: true, user: { team: 'red' } }, 'asked again in the same state')
  const users = app.store.collection(projectCollectionName(shop.id, PROJECT_USERS_TABLE))
  await users.updateOne({ _id: session.user.id }, { $set: { team: 'blue' } })
  t.match(await verify(), { valid: true, user: { team: 'blue' } }, 'a changed field shows at once')
  await call(app, 'POST', `/api/projects/${shop.id}/auth/toggle`, owner.auth, { enabled: false })
  t.same(await verify(), { valid: false }, 'auth off')
  await call(app, 'POST', `/api/projects/${shop.id}/auth/toggle`, owner.auth, { enabled: true })
  t.match(await verify(), { valid: true }, 'auth on again')
  await users.deleteOne({ _id: session.user.id })
  t.same(await verify(), { valid: false }, 'the user deleted')
})

t.test('a verify that fails on the server side answers in the error envelope, once', async (t) => {
  const { app, newProject } = await setup(t)
  const shop = await newProject('Shop')
  const auth = app.projectAuth.auth
  const original = auth.verify.bind(auth)
  // The Store failing mid-lookup: the route must pass the error to Fastify's handler, not leave the request hanging.
  auth.verify = async () => { throw new AppError('APP_STORE_UNAVAILABLE', 503, 'The store is gone') }
  t.teardown(() => { auth.verify = original })
  const res = await call(app, 'POST', `${shop.base}/verify`, bearer(shop.service), { token: 'x.y.z' })
  t.equal(res.status, 503)
  t.match(res.body, { success: false, code: 'APP_STORE_UNAVAILABLE', message: 'The store is gone' })
})
