import t from 'tap'
import { createHmac } from 'node:crypto'
import { buildTestApp, tempDir } from '../../helper.js'

const json = { 'content-type': 'application/json' }

async function register (app: Awaited<ReturnType<typeof buildTestApp>>, email: string, password = 'correct horse battery') {
  return await app.inject({ method: 'POST', url: '/api/auth/register', headers: json, payload: { email, password, name: 'Ada' } })
}

async function login (app: Awaited<ReturnType<typeof buildTestApp>>, email: string, password = 'correct horse battery') {
  return await app.inject({ method: 'POST', url: '/api/auth/login', headers: json, payload: { email, password } })
}

function forge (claims: Record<string, unknown>, key: string | Buffer): string {
  const encode = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
  const head = `${encode({ alg: 'HS256', typ: 'JWT' })}.${encode(claims)}`
  return `${head}.${createHmac('sha256', key).update(head).digest('base64url')}`
}

t.test('register, login, me, refresh rotation, logout', async (t) => {
  // No grace for a double submit here: a used token is dead at once (the grace window has its own tests).
  const app = await buildTestApp(t, { env: { REFRESH_REUSE_GRACE_SECONDS: '0' } })
  const created = await register(app, '  Ada@Example.COM ')
  t.equal(created.statusCode, 201)
  t.match(created.json().data, { email: 'ada@example.com', name: 'Ada', emailVerified: false })
  t.notOk('passwordHash' in created.json().data, 'no hash leaves the server')

  const stored = await app.identity.users.records.findOne({ email: 'ada@example.com' })
  t.match(stored?.passwordHash, /^\$argon2id\$v=19\$m=19456,p=1,t=2\$/, 'argon2id at OWASP parameters')

  const duplicate = await register(app, 'ada@example.com')
  t.equal(duplicate.statusCode, 409)
  t.equal(duplicate.json().code, 'APP_EMAIL_TAKEN')

  const session = await login(app, 'ADA@example.com')
  t.equal(session.statusCode, 200)
  const { accessToken, refreshToken, tokenType, expiresIn, user } = session.json().data
  t.equal(tokenType, 'Bearer')
  t.equal(expiresIn, 900)
  t.equal(user.email, 'ada@example.com')
  const claims = JSON.parse(Buffer.from(accessToken.split('.')[1], 'base64url').toString())
  t.match(claims, { type: 'platform', sub: user.id, aud: 'plinth:platform' })

  const me = await app.inject({ url: '/api/auth/me', headers: { authorization: `Bearer ${accessToken}` } })
  t.equal(me.statusCode, 200)
  t.same(me.json().data, created.json().data)

  const refreshed = await app.inject({ method: 'POST', url: '/api/auth/refresh', headers: json, payload: { refreshToken } })
  t.equal(refreshed.statusCode, 200)
  const next = refreshed.json().data
  t.not(next.refreshToken, refreshToken, 'a new refresh token each time')
  t.equal((await app.inject({ url: '/api/auth/me', headers: { authorization: `Bearer ${next.accessToken}` } })).statusCode, 200)

  const reuse = await app.inject({ method: 'POST', url: '/api/auth/refresh', headers: json, payload: { refreshToken } })
  t.equal(reuse.statusCode, 401, 'a used refresh token is dead')
  t.equal(reuse.json().code, 'APP_INVALID_REFRESH_TOKEN')
  const familyGone = await app.inject({ method: 'POST', url: '/api/auth/refresh', headers: json, payload: { refreshToken: next.refreshToken } })
  t.equal(familyGone.statusCode, 401, 'reusing a dead token revoked its whole family')

  const second = (await login(app, 'ada@example.com')).json().data
  const out = await app.inject({ method: 'POST', url: '/api/auth/logout', headers: json, payload: { refreshToken: second.refreshToken } })
  t.equal(out.statusCode, 200)
  const afterLogout = await app.inject({ method: 'POST', url: '/api/auth/refresh', headers: json, payload: { refreshToken: second.refreshToken } })
  t.equal(afterLogout.statusCode, 401, 'logout kills the refresh token')
})

t.test('refusals', async (t) => {
  const app = await buildTestApp(t)
  await register(app, 'bob@example.com')
  const cases: Array<{ name: string, payload: Record<string, unknown>, status: number, code: string, url?: string }> = [
    { name: 'short password', payload: { email: 'c@example.com', password: 'short', name: 'C' }, status: 400, code: 'APP_WEAK_PASSWORD' },
    { name: 'password equal to email', payload: { email: 'Long.Name@example.com', password: 'long.name@example.com', name: 'C' }, status: 400, code: 'APP_WEAK_PASSWORD' },
    { name: 'bad email', payload: { email: 'not-an-email', password: 'correct horse', name: 'C' }, status: 400, code: 'APP_VALIDATION_FAILED' },
    { name: 'email without a domain dot', payload: { email: 'a@localhost', password: 'correct horse', name: 'C' }, status: 400, code: 'APP_INVALID_EMAIL' },
    { name: 'missing name', payload: { email: 'd@example.com', password: 'correct horse' }, status: 400, code: 'APP_VALIDATION_FAILED' },
    { name: 'extra field', payload: { email: 'd@example.com', password: 'correct horse', name: 'D', admin: true }, status: 400, code: 'APP_VALIDATION_FAILED' },
    { name: 'wrong password', url: '/api/auth/login', payload: { email: 'bob@example.com', password: 'wrong password' }, status: 401, code: 'APP_INVALID_CREDENTIALS' },
    { name: 'unknown email', url: '/api/auth/login', payload: { email: 'nobody@example.com', password: 'wrong password' }, status: 401, code: 'APP_INVALID_CREDENTIALS' },
    { name: 'unknown refresh token', url: '/api/auth/refresh', payload: { refreshToken: 'nope' }, status: 401, code: 'APP_INVALID_REFRESH_TOKEN' }
  ]
  for (const c of cases) {
    const res = await app.inject({ method: 'POST', url: c.url ?? '/api/auth/register', headers: json, payload: c.payload })
    t.equal(res.statusCode, c.status, `${c.name}: status`)
    t.equal(res.json().code, c.code, `${c.name}: code`)
  }
  const wrongPassword = await login(app, 'bob@example.com', 'wrong password')
  const unknownEmail = await login(app, 'nobody@example.com', 'wrong password')
  t.equal(wrongPassword.json().message, unknownEmail.json().message, 'the same answer for both failures')
})

t.test('token-kind confusion and tampering on /me', async (t) => {
  const app = await buildTestApp(t)
  await register(app, 'eve@example.com')
  const session = (await login(app, 'eve@example.com')).json().data
  const [head, body] = session.accessToken.split('.')
  const claims = JSON.parse(Buffer.from(body, 'base64url').toString())
  const expired = forge({ ...claims, iat: claims.iat - 3600, exp: claims.iat - 60 }, app.deriveSecretKey('jwt:platform'))
  t.equal((await app.inject({ url: '/api/auth/me', headers: { authorization: `Bearer ${forge(claims, app.deriveSecretKey('jwt:platform'))}` } })).statusCode, 200, 'the forger works with the real key')
  const cases: Array<[string, string | undefined]> = [
    ['no header', undefined],
    ['not bearer', `Basic ${Buffer.from('a:b').toString('base64')}`],
    ['refresh token as access token', `Bearer ${session.refreshToken}`],
    ['garbage', 'Bearer abc.def.ghi'],
    ['payload altered, signature kept', `Bearer ${head}.${Buffer.from(JSON.stringify({ ...claims, sub: 'someone-else' })).toString('base64url')}.${session.accessToken.split('.')[2]}`],
    ['type changed to project and re-signed with another key', `Bearer ${forge({ ...claims, type: 'project' }, 'another-key')}`],
    ['platform claims signed with another key', `Bearer ${forge(claims, 'another-key')}`],
    ['alg none', `Bearer ${Buffer.from(JSON.stringify({ alg: 'none', typ: 'JWT' })).toString('base64url')}.${body}.`],
    ['project-type token signed with the platform key', `Bearer ${app.jwt.sign({ sub: claims.sub, sid: claims.sid, type: 'project', projectId: 'p1' })}`],
    ['expired', `Bearer ${expired}`],
    ['PAT-shaped string with a bad checksum', `Bearer ${app.config.identity.patPrefix}_${'A'.repeat(36)}`]
  ]
  for (const [name, authorization] of cases) {
    const res = await app.inject({ url: '/api/auth/me', headers: authorization === undefined ? {} : { authorization } })
    t.equal(res.statusCode, 401, `${name}: 401`)
    t.equal(res.json().success, false, `${name}: envelope`)
  }
})

t.test('rate limits answer 429 with Retry-After', async (t) => {
  const app = await buildTestApp(t, { env: { AUTH_RATE_LIMIT_MAX: '3', AUTH_RATE_LIMIT_WINDOW_SECONDS: '600' } })
  const statuses: number[] = []
  for (let i = 0; i < 5; i++) statuses.push((await login(app, 'who@example.com', 'wrong password')).statusCode)
  t.same(statuses, [401, 401, 401, 429, 429])
  const limited = await login(app, 'who@example.com', 'wrong password')
  t.equal(limited.json().code, 'APP_RATE_LIMITED')
  t.ok(Number(limited.headers['retry-after']) > 0 && Number(limited.headers['retry-after']) <= 600, 'Retry-After within the window')
  const other = await app.inject({ method: 'POST', url: '/api/auth/refresh', headers: json, payload: { refreshToken: 'x' } })
  t.equal(other.statusCode, 401, 'buckets are separate per route')
})

t.test('two refreshes of one token at once both succeed; a replay after the grace window revokes the family', async (t) => {
  const app = await buildTestApp(t, { env: { REFRESH_REUSE_GRACE_SECONDS: '1' } })
  await register(app, 'ada@example.com')
  const { refreshToken } = (await login(app, 'ada@example.com')).json().data
  const refresh = async (token: string) => await app.inject({ method: 'POST', url: '/api/auth/refresh', headers: json, payload: { refreshToken: token } })
  const [first, second] = await Promise.all([refresh(refreshToken), refresh(refreshToken)])
  t.same([first.statusCode, second.statusCode], [200, 200], 'a double submit keeps the user signed in')
  const rotatedTwice = await refresh(first.json().data.refreshToken)
  t.equal(rotatedTwice.statusCode, 200)
  t.equal((await refresh(refreshToken)).statusCode, 401, 'a token two rotations back is refused even within the window')
  t.equal((await refresh(rotatedTwice.json().data.refreshToken)).statusCode, 401, 'and that reuse revoked the family')

  const { refreshToken: fresh } = (await login(app, 'ada@example.com')).json().data
  const next = (await refresh(fresh)).json().data.refreshToken as string
  await new Promise((resolve) => setTimeout(resolve, 1100))
  t.equal((await refresh(fresh)).statusCode, 401, 'replayed after the window')
  t.equal((await refresh(next)).statusCode, 401, 'the family is revoked')
})

t.test('processes sharing one DATA_DIR on different ports accept each other\'s tokens', async (t) => {
  const dataDir = tempDir(t)
  const one = await buildTestApp(t, { env: { DATA_DIR: dataDir, PORT: '8301' } })
  const two = await buildTestApp(t, { env: { DATA_DIR: dataDir, PORT: '8302' } })
  await register(one, 'ada@example.com')
  const { accessToken } = (await login(one, 'ada@example.com')).json().data
  const me = await two.inject({ url: '/api/auth/me', headers: { authorization: `Bearer ${accessToken}` } })
  t.equal(me.statusCode, 200, 'a platform JWT from one is valid on the other')
  const claims = JSON.parse(Buffer.from((accessToken as string).split('.')[1], 'base64url').toString())
  t.equal(claims.iss, 'plinth', 'the issuer does not name a port unless PUBLIC_URL is set')
  const other = await buildTestApp(t, { env: { PUBLIC_URL: 'https://api.example.com' } })
  await register(other, 'ada@example.com')
  const named = JSON.parse(Buffer.from(((await login(other, 'ada@example.com')).json().data.accessToken as string).split('.')[1], 'base64url').toString())
  t.equal(named.iss, 'https://api.example.com', 'with PUBLIC_URL set, it is the issuer')
})
