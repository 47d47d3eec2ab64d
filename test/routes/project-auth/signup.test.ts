import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { buildTestApp, signUp, call, type TestApp } from '../../helper.js'
import { PROJECT_USERS_TABLE, projectCollectionName } from '../../../services/projects/naming.js'

type Headers = Record<string, string>
const bearer = (token: string): Headers => ({ authorization: `Bearer ${token}` })
const PASSWORD = 'long enough 1'

/**
 * Sign-up writes the new user's `_users` record as a data-API create would:
 * the definition decides what extraFields may hold, the rules' read-only
 * fields stay the server's, and file fields are the upload routes' alone.
 */
async function project (t: Test) {
  // Every case below is a sign-up from one address: the limiter is not what is tested here.
  const app = await buildTestApp(t, { env: { AUTH_RATE_LIMIT_MAX: '1000' } })
  const admin = await signUp(app, 'admin@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
  const projectId = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name: 'App' })).body.data.id as string
  await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, admin.auth, { enabled: true })
  const service = (await call(app, 'POST', `/api/projects/${projectId}/service-tokens`, admin.auth, { name: 'server' })).body.data.token as string
  const teams = await call(app, 'POST', `/api/projects/${projectId}/collections`, admin.auth, { name: 'teams', fields: [{ name: 'name', type: 'text' }], methods: {} })
  if (teams.status !== 201) throw new Error(JSON.stringify(teams.body))
  const redTeam = (await app.store.collection(projectCollectionName(projectId, 'teams')).insertOne({ name: 'red', createdAt: new Date(), updatedAt: new Date(), version: 1 })).insertedId
  const usersDefinition = `/api/projects/${projectId}/collections/_users`
  const current = (await call(app, 'GET', usersDefinition, admin.auth)).body.data
  const self = { requireAuth: true, filter: { id: '@request.auth.id' } }
  const changed = await call(app, 'PUT', usersDefinition, admin.auth, {
    // Strict: these tests hold sign-up to the declared fields alone (a fresh project's open _users has its own test).
    signUpFields: 'strict',
    fields: [
      ...current.fields,
      { name: 'displayName', type: 'text', required: true, max: 40 },
      // Unique as in MongoDB: a missing value counts as null, so every sign-up below gives one.
      { name: 'nickname', type: 'text', unique: true },
      { name: 'role', type: 'select', values: ['user', 'admin'], default: 'user' },
      { name: 'plan', type: 'select', values: ['free', 'pro'] },
      { name: 'age', type: 'number', min: 13 },
      { name: 'team', type: 'relation', collection: 'teams' },
      { name: 'avatar', type: 'file' },
      { name: 'constructor', type: 'text' },
      { name: 'toString', type: 'number' }
    ],
    methods: {
      get: { enabled: true, rule: self },
      update: { enabled: true, rule: { ...self, readonly: ['email', 'emailVerified', 'role'] } },
      upload: { enabled: true, rule: self },
      download: { enabled: true, rule: self },
      fileDelete: { enabled: true, rule: self }
    }
  })
  if (changed.status !== 200) throw new Error(JSON.stringify(changed.body))
  const register = async (email: string, extraFields: Record<string, unknown> = {}) =>
    await call(app, 'POST', `/api/p/${projectId}/auth/register`, {}, { email, password: PASSWORD, extraFields: { displayName: email.split('@')[0], nickname: email, ...extraFields } })
  const users = app.store.collection(projectCollectionName(projectId, PROJECT_USERS_TABLE))
  return { app, admin, projectId, service, redTeam, register, users }
}

t.test('extraFields meet the _users definition exactly as a data-API create does', async (t) => {
  const { app, projectId, redTeam, register, users } = await project(t)
  const refused: Array<[string, Record<string, unknown>, number, string, string?]> = [
    ['an undeclared field', { favouriteColour: 'blue' }, 400, 'APP_UNKNOWN_FIELD', 'favouriteColour'],
    ['a wrong type', { age: 'twelve' }, 400, 'APP_INVALID_FIELD', 'age'],
    ['below a minimum', { age: 9 }, 400, 'APP_INVALID_FIELD', 'age'],
    ['a select value not listed', { plan: 'enterprise' }, 400, 'APP_INVALID_FIELD', 'plan'],
    ['too long', { displayName: 'x'.repeat(41) }, 400, 'APP_INVALID_FIELD', 'displayName'],
    ['a required field left empty', { displayName: null }, 400, 'APP_INVALID_FIELD', 'displayName'],
    ['a relation to nothing', { team: 'no-such-team' }, 400, 'APP_INVALID_RELATION'],
    ['a field the update rule makes read-only', { role: 'admin' }, 403, 'APP_READONLY_FIELD', 'role'],
    ['a file descriptor', { avatar: { id: 'f1', name: 'a.png', size: 1, type: 'image/png', sha256: 'x', createdAt: '2026-01-01T00:00:00Z' } }, 403, 'APP_READONLY_FIELD', 'avatar'],
    ['the disabled flag', { disabled: false }, 400, 'APP_RESERVED_FIELD', 'extraFields.disabled']
  ]
  for (const [name, extraFields, status, code, field] of refused) {
    const res = await register('bob@example.com', extraFields)
    t.same([res.status, res.body.code], [status, code], name)
    if (field !== undefined) t.equal(res.body.details?.fields?.[0]?.path, field, `${name}: names the field`)
  }
  const missing = await call(app, 'POST', `/api/p/${projectId}/auth/register`, {}, { email: 'bob@example.com', password: PASSWORD })
  t.same([missing.status, missing.body.code, missing.body.details], [400, 'APP_FIELD_REQUIRED', { fields: [{ path: 'displayName', message: 'is required' }] }], 'a required field missing')
  t.equal(await users.countDocuments({}), 0, 'no refused sign-up stored anything')

  const ann = await register('ann@example.com', { nickname: 'annie', plan: 'pro', age: 30, team: redTeam, constructor: 'c', toString: 2 })
  t.equal(ann.status, 201, JSON.stringify(ann.body))
  t.match(ann.body.data.user, { displayName: 'ann', nickname: 'annie', plan: 'pro', age: 30, team: redTeam, role: 'user', constructor: 'c', toString: 2 })
  t.equal(ann.body.data.user.role, 'user', 'the default fills the read-only role')
  const taken = await register('carol@example.com', { nickname: 'annie' })
  t.same([taken.status, taken.body.code, taken.body.details], [409, 'APP_DUPLICATE_VALUE', { fields: [{ path: 'nickname', message: 'is already taken' }] }], 'a unique field already taken')
  const sameEmail = await register('ANN@example.com')
  t.same([sameEmail.status, sameEmail.body.code], [409, 'APP_EMAIL_TAKEN'], 'the email stays unique whatever the case')
})

t.test('a fresh project keeps undeclared profile fields at sign-up; the rules\' protections hold; strict refuses them', async (t) => {
  const app = await buildTestApp(t, { env: { AUTH_RATE_LIMIT_MAX: '1000' } })
  const admin = await signUp(app, 'admin@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
  const projectId = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name: 'Fresh' })).body.data.id as string
  await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, admin.auth, { enabled: true })
  const service = (await call(app, 'POST', `/api/projects/${projectId}/service-tokens`, admin.auth, { name: 'server' })).body.data.token as string
  const definition = `/api/projects/${projectId}/collections/_users`
  const register = async (email: string, extraFields: Record<string, unknown>) =>
    await call(app, 'POST', `/api/p/${projectId}/auth/register`, {}, { email, password: PASSWORD, extraFields })
  t.equal((await call(app, 'GET', definition, admin.auth)).body.data.signUpFields, 'open', 'switching auth on makes _users open')

  const eve = await register('eve@example.com', { displayName: 'Eve', prefs: { theme: 'dark' } })
  t.equal(eve.status, 201, JSON.stringify(eve.body))
  t.match(eve.body.data.user, { displayName: 'Eve', prefs: { theme: 'dark' } }, 'sign-up answers with them')
  const me = await call(app, 'GET', `/api/p/${projectId}/auth/me`, bearer(eve.body.data.accessToken))
  t.match(me.body.data, { email: 'eve@example.com', displayName: 'Eve', prefs: { theme: 'dark' } }, 'me returns them')
  const verified = await call(app, 'POST', `/api/p/${projectId}/auth/verify`, bearer(service), { token: eve.body.data.accessToken })
  t.match(verified.body.data.user, { displayName: 'Eve' }, 'the project\'s server sees them')
  await call(app, 'PUT', definition, admin.auth, { methods: { get: { enabled: true, rule: null } } })
  const asAdmin = await call(app, 'GET', `/api/p/${projectId}/_users/${eve.body.data.user.id as string}`, admin.auth)
  t.match(asAdmin.body.data, { displayName: 'Eve', prefs: { theme: 'dark' } }, 'and so do admins')

  const current = (await call(app, 'GET', definition, admin.auth)).body.data
  const protectedFields = await call(app, 'PUT', definition, admin.auth, {
    fields: [...current.fields, { name: 'role', type: 'select', values: ['user', 'admin'], default: 'user' }, { name: 'age', type: 'number', min: 13 }, { name: 'avatar', type: 'file' }, { name: 'ownerId', type: 'text' }],
    methods: {
      create: { enabled: false, rule: { requireAuth: true, owner: 'ownerId' } },
      update: { enabled: true, rule: { requireAuth: true, filter: { id: '@request.auth.id' }, readonly: ['role'] } }
    }
  })
  t.equal(protectedFields.status, 200, JSON.stringify(protectedFields.body))
  const refused: Array<[string, Record<string, unknown>, number, string, string]> = [
    ['a declared field the update rule makes read-only', { role: 'admin' }, 403, 'APP_READONLY_FIELD', 'role'],
    ['a declared field of the wrong type', { age: 'old' }, 400, 'APP_INVALID_FIELD', 'age'],
    ['a declared field outside its bounds', { age: 9 }, 400, 'APP_INVALID_FIELD', 'age'],
    ['a file field', { avatar: { id: 'f1' } }, 403, 'APP_READONLY_FIELD', 'avatar'],
    ['the create rule\'s owner field, chosen', { ownerId: 'someone-else' }, 403, 'APP_RULE_CHECK_FAILED', 'ownerId'],
    ['a reserved name', { sessionEpoch: 0 }, 400, 'APP_RESERVED_FIELD', 'extraFields.sessionEpoch'],
    ['a system field', { version: 9 }, 400, 'APP_RESERVED_FIELD', 'extraFields.version'],
    ['a name no field could have', { 'display name': 'x' }, 400, 'APP_INVALID_FIELD', 'display name']
  ]
  for (const [name, extraFields, status, code, field] of refused) {
    const res = await register('mallory@example.com', { displayName: 'M', ...extraFields })
    t.same([res.status, res.body.code, res.body.details?.fields?.[0]?.path], [status, code, field], name)
  }
  const defaults = await register('bob@example.com', { displayName: 'Bob' })
  t.match(defaults.body.data.user, { displayName: 'Bob', role: 'user', ownerId: defaults.body.data.user.id }, 'declared defaults and the owner fill in beside the kept field')

  const declared = (await call(app, 'GET', definition, admin.auth)).body.data.fields
  const misdeclared = await call(app, 'PUT', definition, admin.auth, { fields: [...declared, { name: 'displayName', type: 'number' }] })
  t.same([misdeclared.status, misdeclared.body.code, misdeclared.body.details?.fields?.[0]?.path], [409, 'APP_DEFINITION_CONFLICT', 'displayName'], 'declaring a kept field as what its values are not is refused')
  t.equal((await call(app, 'PUT', definition, admin.auth, { fields: [...declared, { name: 'displayName', type: 'text', max: 40 }] })).status, 200, 'as what they are, it is declared')

  const strict = await call(app, 'PUT', definition, admin.auth, { signUpFields: 'strict' })
  t.same([strict.status, strict.body.data.signUpFields], [200, 'strict'])
  const unknown = await register('carol@example.com', { displayName: 'Carol', nickname: 'caz' })
  t.same([unknown.status, unknown.body.code, unknown.body.details?.fields?.[0]?.path], [400, 'APP_UNKNOWN_FIELD', 'nickname'], 'strict: an undeclared field is refused')
  t.equal((await register('carol@example.com', { displayName: 'Carol' })).status, 201, 'declared ones still pass')
  const elsewhere = await call(app, 'POST', `/api/projects/${projectId}/collections`, admin.auth, { name: 'notes', signUpFields: 'open' })
  t.same([elsewhere.status, elsewhere.body.code], [400, 'APP_VALIDATION_FAILED'], 'the setting is not for other collections')
  await call(app, 'POST', `/api/projects/${projectId}/collections`, admin.auth, { name: 'notes' })
  const onNotes = await call(app, 'PUT', `/api/projects/${projectId}/collections/notes`, admin.auth, { signUpFields: 'open' })
  t.same([onNotes.status, onNotes.body.code], [400, 'APP_INVALID_DEFINITION'])
  t.notOk('signUpFields' in (await call(app, 'GET', `/api/projects/${projectId}/collections/notes`, admin.auth)).body.data, 'nor shown on them')
})

t.test('a read-only role chosen at sign-up never reaches the project\'s server', async (t) => {
  const { app, projectId, service, register } = await project(t)
  t.equal((await register('mallory@example.com', { role: 'admin' })).status, 403)
  const session = (await register('mallory@example.com')).body.data
  const verified = await call(app, 'POST', `/api/p/${projectId}/auth/verify`, bearer(service), { token: session.accessToken })
  t.match(verified.body.data, { valid: true, user: { role: 'user' } }, 'verify hands the server the role the definition gave')
  const escalated = await call(app, 'PUT', `/api/p/${projectId}/_users/${session.user.id as string}`, bearer(session.accessToken), { role: 'admin' })
  t.same([escalated.status, escalated.body.code], [403, 'APP_READONLY_FIELD'], 'nor can the user set it afterwards')
})

async function uploadAvatar (app: TestApp, projectId: string, userId: string, token: string, bytes: Buffer) {
  const boundary = `----plinth${randomBytes(8).toString('hex')}`
  const payload = Buffer.concat([
    Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="a.bin"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    bytes,
    Buffer.from(`\r\n--${boundary}--\r\n`)
  ])
  const res = await app.inject({ method: 'POST', url: `/api/p/${projectId}/_users/${userId}/files/avatar`, headers: { ...bearer(token), 'content-type': `multipart/form-data; boundary=${boundary}` }, payload })
  return { status: res.statusCode, body: res.json() }
}

t.test('a file is only ever served or deleted through the record and field that own it', async (t) => {
  const { app, projectId, register, users } = await project(t)
  const ann = (await register('ann@example.com')).body.data
  const secret = randomBytes(64)
  const uploaded = await uploadAvatar(app, projectId, ann.user.id, ann.accessToken, secret)
  t.equal(uploaded.status, 201)
  const annFile = uploaded.body.data.file as { id: string, sha256: string }

  // A descriptor written around the upload routes, straight into the Store.
  const mallory = (await register('mallory@example.com')).body.data
  const forged = { ...annFile, name: 'stolen.bin', size: secret.length, type: 'application/octet-stream', createdAt: new Date().toISOString() }
  await users.updateOne({ _id: mallory.user.id }, { $set: { avatar: forged } })
  const files = `/api/p/${projectId}/_users/${mallory.user.id as string}/files/avatar/${annFile.id}`
  const stolen = await app.inject({ method: 'GET', url: files, headers: bearer(mallory.accessToken) })
  t.same([stolen.statusCode, stolen.json().code], [404, 'APP_FILE_NOT_FOUND'], 'another record\'s file id finds nothing in this record\'s folder')
  const removed = await app.inject({ method: 'DELETE', url: files, headers: bearer(mallory.accessToken) })
  t.equal(removed.statusCode, 200, 'the forged descriptor leaves mallory\'s record')
  const own = await app.inject({ method: 'GET', url: `/api/p/${projectId}/_users/${ann.user.id as string}/files/avatar/${annFile.id}`, headers: bearer(ann.accessToken) })
  t.same([own.statusCode, own.rawPayload.equals(secret)], [200, true], 'and ann\'s file is still there, whole')

  await users.updateOne({ _id: mallory.user.id }, { $set: { avatar: { ...forged, sha256: 'not hex at all' } } })
  const malformed = await app.inject({ method: 'GET', url: files, headers: bearer(mallory.accessToken) })
  t.same([malformed.statusCode, malformed.json().code], [404, 'APP_FILE_NOT_FOUND'], 'a malformed descriptor is no file: 404, not a 500')
})

t.test('sign-up meets the _users create rule\'s check and the email field\'s own rules; users never see what reads deny', async (t) => {
  const { app, admin, projectId, service, register } = await project(t)
  const definition = `/api/projects/${projectId}/collections/_users`
  const current = (await call(app, 'GET', definition, admin.auth)).body.data
  const fields = current.fields.map((field: { name: string }) => field.name === 'email' ? { ...field, pattern: '[^@]+@corp\\.example' } : field)
  const changed = await call(app, 'PUT', definition, admin.auth, {
    fields: [...fields, { name: 'fraudScore', type: 'number', default: 0 }],
    methods: {
      create: { enabled: false, rule: { requireAuth: true, check: { plan: { $ne: 'pro' } }, readonly: ['fraudScore'] } },
      get: { enabled: true, rule: { requireAuth: true, filter: { id: '@request.auth.id' }, deny: ['fraudScore'] } }
    }
  })
  t.equal(changed.status, 200, JSON.stringify(changed.body))
  const outsider = await register('outsider@gmail.example')
  t.same([outsider.status, outsider.body.code, outsider.body.details?.fields?.[0]?.path], [400, 'APP_INVALID_FIELD', 'email'], 'the email field\'s pattern holds at sign-up')
  const pro = await register('pro@corp.example', { plan: 'pro' })
  t.same([pro.status, pro.body.code, pro.body.details?.fields?.[0]?.path], [403, 'APP_RULE_CHECK_FAILED', 'plan'], 'and so does the create rule\'s check')
  const scored = await register('cheat@corp.example', { fraudScore: -100 })
  t.same([scored.status, scored.body.code], [403, 'APP_READONLY_FIELD'], 'and its read-only fields')

  const session = (await register('ann@corp.example', { plan: 'free' })).body.data
  t.equal(session.user.email, 'ann@corp.example')
  t.notOk('fraudScore' in session.user, 'sign-up answers without what the get rule denies')
  const me = await call(app, 'GET', `/api/p/${projectId}/auth/me`, bearer(session.accessToken))
  t.same([me.status, 'fraudScore' in me.body.data], [200, false], 'so does me')
  const refreshed = await call(app, 'POST', `/api/p/${projectId}/auth/refresh`, {}, { refreshToken: session.refreshToken })
  t.notOk('fraudScore' in refreshed.body.data.user, 'and refresh')
  const login = await call(app, 'POST', `/api/p/${projectId}/auth/login`, {}, { email: 'ann@corp.example', password: PASSWORD })
  t.notOk('fraudScore' in login.body.data.user, 'and login')
  const verified = await call(app, 'POST', `/api/p/${projectId}/auth/verify`, bearer(service), { token: session.accessToken })
  t.match(verified.body.data, { valid: true, user: { fraudScore: 0 } }, 'the project\'s own server, with its service token, sees the whole record')
})
