import t from 'tap'
import { buildTestApp, signUp, call } from '../../helper.js'

const bearer = (token: string): Record<string, string> => ({ authorization: `Bearer ${token}` })

/**
 * `_users` through the data API: a collection like the others once an admin
 * gives its methods rules, except that the password hash is never readable,
 * filterable, sortable or writable there.
 */
t.test('_users is a collection with rules, and the password hash never leaves the server', async (t) => {
  const app = await buildTestApp(t)
  const admin = await signUp(app, 'admin@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
  const projectId = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name: 'App' })).body.data.id as string
  await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, admin.auth, { enabled: true })
  const definition = `/api/projects/${projectId}/collections/_users`
  const users = `/api/p/${projectId}/_users`
  const register = async (email: string) => {
    const session = (await call(app, 'POST', `/api/p/${projectId}/auth/register`, {}, { email, password: 'long enough 1', extraFields: { nickname: email.split('@')[0] } })).body.data
    return { id: session.user.id as string, auth: bearer(session.accessToken as string) }
  }

  const fields = [{ name: 'email', type: 'email', required: true, unique: true }, { name: 'emailVerified', type: 'boolean' }, { name: 'nickname', type: 'text', max: 40 }]
  const self = { requireAuth: true, filter: { id: '@request.auth.id' } }
  const changed = await call(app, 'PUT', definition, admin.auth, {
    fields,
    methods: {
      list: { enabled: true, rule: null },
      get: { enabled: true, rule: self },
      update: { enabled: true, rule: { ...self, readonly: ['email', 'emailVerified'] } },
      create: { enabled: true, rule: null }
    }
  })
  t.equal(changed.status, 200, JSON.stringify(changed.body))
  const ann = await register('ann@example.com')
  const bob = await register('bob@example.com')

  const listed = await call(app, 'GET', `${users}?sort=email`, admin.auth)
  t.equal(listed.status, 200)
  t.same(listed.body.data.items.map((user: { email: string }) => user.email), ['ann@example.com', 'bob@example.com'], 'a platform admin lists the end users')
  t.notOk(listed.body.data.items.some((user: Record<string, unknown>) => 'passwordHash' in user), 'without their password hashes')
  t.equal(listed.body.data.items[0].nickname, 'ann', 'extra fields given at registration are fields of the record')
  t.equal((await call(app, 'GET', users, ann.auth)).status, 403, 'list has no rule: end users may not call it')
  t.equal((await call(app, 'GET', users, {})).status, 401)

  const own = await call(app, 'GET', `${users}/${ann.id}`, ann.auth)
  t.equal(own.status, 200)
  t.match(own.body.data, { id: ann.id, email: 'ann@example.com', nickname: 'ann' })
  t.notOk('passwordHash' in own.body.data)
  t.equal((await call(app, 'GET', `${users}/${bob.id}`, ann.auth)).status, 404, 'another user\'s record is invisible')

  const renamed = await call(app, 'PUT', `${users}/${ann.id}`, ann.auth, { nickname: 'annie' })
  t.same([renamed.status, renamed.body.data?.nickname], [200, 'annie'], 'an end user edits their own profile ' + JSON.stringify(renamed.body))
  t.equal((await call(app, 'PUT', `${users}/${bob.id}`, ann.auth, { nickname: 'pwned' })).status, 404, 'and nobody else\'s')
  const refusals: Array<[string, string, Record<string, string>, unknown, number, string]> = [
    ['write the hash', 'PUT', ann.auth, { passwordHash: 'x' }, 400, 'APP_UNKNOWN_FIELD'],
    ['change the email', 'PUT', ann.auth, { email: 'bob@example.com' }, 403, 'APP_READONLY_FIELD'],
    ['mark the email verified', 'PUT', ann.auth, { emailVerified: true }, 403, 'APP_READONLY_FIELD']
  ]
  for (const [name, method, auth, body, status, code] of refusals) {
    const res = await call(app, method as 'PUT', `${users}/${ann.id}`, auth, body)
    t.same([res.status, res.body.code], [status, code], name)
  }
  for (const query of ['filter={"passwordHash":{"$exists":true}}', 'filter={"passwordHash":{"$regex":"^\\\\$argon2"}}', 'sort=passwordHash', 'fields=passwordHash']) {
    const res = await call(app, 'GET', `${users}?${query.replace(/[{}":$\\^]/g, encodeURIComponent)}`, admin.auth)
    t.equal(res.status, 400, `${query} is refused`)
    t.notMatch(JSON.stringify(res.body), /argon2/, 'and the answer shows no hash')
  }
  const login = await call(app, 'POST', `/api/p/${projectId}/auth/login`, {}, { email: 'ann@example.com', password: 'long enough 1' })
  t.equal(login.status, 200, 'profile edits leave the password alone')

  const created = await call(app, 'POST', users, admin.auth, { email: 'Carol@Example.com ', nickname: 'carol' })
  t.equal(created.status, 201, 'an admin may create a user record without a password')
  const noPassword = await call(app, 'POST', `/api/p/${projectId}/auth/login`, {}, { email: 'carol@example.com', password: 'anything at all' })
  t.same([noPassword.status, noPassword.body.code], [401, 'APP_INVALID_CREDENTIALS'], 'who cannot log in until a password is set another way')
  const taken = await call(app, 'POST', users, admin.auth, { email: 'ann@example.com' })
  t.same([taken.status, taken.body.code], [409, 'APP_DUPLICATE_VALUE'], 'emails stay unique')
  const registerTaken = await call(app, 'POST', `/api/p/${projectId}/auth/register`, {}, { email: 'carol@example.com', password: 'long enough 1' })
  t.equal(registerTaken.status, 409, 'and registration sees the record created through the data API')
})
