import t, { type Test } from 'tap'
import * as argon2 from 'argon2'
import { ManualClock } from '../../../services/platform/clock.js'
import { passwordNeedsRehash, verifyPassword } from '../../../services/platform/crypto.js'
import { MAX_EXTRA_FIELDS, MAX_EXTRA_FIELDS_BYTES } from '../../../services/projects/project-users.js'
import { collectionKey } from '../../../services/collections/write-gate.js'
import { PROJECT_USERS_TABLE, projectCollectionName } from '../../../services/projects/naming.js'
import { projectUsersOn, refusal, tempStore } from '../../helper.js'

const PASSWORD = 'correct horse battery'

async function setup (t: Test) {
  const store = await tempStore(t, 'plinth-project-users-')
  const clock = new ManualClock(Date.UTC(2026, 0, 1))
  const { users, enable, declare } = projectUsersOn(store, clock)
  await enable('proj-a')
  await enable('proj-b')
  // The profile fields these tests send, declared as a project would (undeclared ones are refused: see the route tests).
  const profile = [{ name: 'displayName', type: 'text' as const }, { name: 'plan' }, { name: 'tags' }, { name: 'bio', type: 'text' as const }, { name: 'ok' }, { name: 'profile' }, { name: 'list' },
    ...Array.from({ length: MAX_EXTRA_FIELDS + 1 }, (_, i) => ({ name: `f${i}` }))]
  await declare('proj-a', profile)
  await declare('proj-b', profile)
  const raw = (projectId: string) => store.collection(projectCollectionName(projectId, PROJECT_USERS_TABLE))
  return { store, clock, users, raw, enable }
}

t.test('enable creates the unique email index and can be called again', async (t) => {
  const { users, raw } = await setup(t)
  await users.enable('proj-a')
  const emailIndexes = (await raw('proj-a').listIndexes()).filter((index) => index.key.email === 1)
  t.same(emailIndexes.map((index) => ({ key: index.key, unique: index.unique })), [{ key: { email: 1 }, unique: true }])
})

t.test('register stores a hash and the extra fields, and shows neither the hash nor the password', async (t) => {
  const { users, raw } = await setup(t)
  const user = await users.register('proj-a', { email: '  Ada@Example.COM ', password: PASSWORD, extraFields: { displayName: 'Ada', plan: { tier: 'pro', seats: 3 }, tags: ['a', 'b'] } })
  t.match(user.id, /^[0-9a-z]{20}$/)
  t.same(user, {
    id: user.id,
    email: 'ada@example.com',
    emailVerified: false,
    createdAt: '2026-01-01T00:00:00.000Z',
    updatedAt: '2026-01-01T00:00:00.000Z',
    displayName: 'Ada',
    plan: { tier: 'pro', seats: 3 },
    tags: ['a', 'b']
  })
  const stored = await raw('proj-a').findOne({ _id: user.id })
  t.equal(stored?.displayName, 'Ada', 'extra fields sit at the top level of the document')
  t.match(stored?.passwordHash, /^\$argon2id\$/)
  t.ok(await verifyPassword(stored?.passwordHash as string, PASSWORD))
  t.notOk(JSON.stringify(stored).includes(PASSWORD), 'the password itself is stored nowhere')
  t.same(await users.get('proj-a', user.id), user, 'get answers the same view')
  t.same(await users.register('proj-a', { email: 'bare@example.com', password: PASSWORD }).then((u) => Object.keys(u).sort()),
    ['createdAt', 'email', 'emailVerified', 'id', 'updatedAt'])
})

t.test('register refuses bad emails and weak passwords as platform users do', async (t) => {
  const { users } = await setup(t)
  const cases: Array<[string, { email: string, password: string }, string]> = [
    ['no @', { email: 'ada.example.com', password: PASSWORD }, 'APP_INVALID_EMAIL'],
    ['no dot in the domain', { email: 'ada@localhost', password: PASSWORD }, 'APP_INVALID_EMAIL'],
    ['a space inside', { email: 'a da@example.com', password: PASSWORD }, 'APP_INVALID_EMAIL'],
    ['password too short', { email: 'ada@example.com', password: 'short' }, 'APP_WEAK_PASSWORD'],
    ['password too long', { email: 'ada@example.com', password: 'x'.repeat(257) }, 'APP_WEAK_PASSWORD'],
    ['password is the email', { email: 'ada@example.com', password: ' ADA@example.com' }, 'APP_WEAK_PASSWORD']
  ]
  for (const [name, input, code] of cases) await t.rejects(users.register('proj-a', input), { status: 400, code }, name)
})

t.test('one account per email per project', async (t) => {
  const { users, store } = await setup(t)
  const first = await users.register('proj-a', { email: 'ada@example.com', password: PASSWORD })
  for (const email of ['ada@example.com', 'ADA@example.com', ' ada@EXAMPLE.com  ']) {
    await t.rejects(users.register('proj-a', { email, password: PASSWORD }), { status: 409, code: 'APP_EMAIL_TAKEN' }, email)
  }
  const other = await users.register('proj-b', { email: 'ada@example.com', password: PASSWORD })
  t.not(other.id, first.id, 'the same email in another project is another user')

  // A fresh service on a newly enabled project keeps emails unique.
  const fresh = projectUsersOn(store, new ManualClock())
  await fresh.enable('proj-new')
  await fresh.users.register('proj-new', { email: 'bob@example.com', password: PASSWORD })
  await t.rejects(fresh.users.register('proj-new', { email: 'Bob@example.com', password: PASSWORD }), { status: 409, code: 'APP_EMAIL_TAKEN' })
})

t.test('extraFields: reserved names, unstorable names and size are refused before anything is stored', async (t) => {
  const { users, raw } = await setup(t)
  const reserved = ['_id', 'id', 'email', 'password', 'passwordHash', 'createdAt', 'updatedAt', 'emailVerified', '_private', '__proto__', '$where', '$set', 'a.b', '']
  for (const field of reserved) {
    // Through JSON.parse, as a request body arrives, so '__proto__' is an own key.
    const extraFields = JSON.parse(JSON.stringify({ ok: 1 }).replace('{', `{${JSON.stringify(field)}:"x",`)) as Record<string, unknown>
    t.ok(Object.keys(extraFields).includes(field), `fixture holds ${JSON.stringify(field)}`)
    const error = await users.register('proj-a', { email: 'x@example.com', password: PASSWORD, extraFields }).catch((e: unknown) => e)
    t.match(error, { status: 400, code: 'APP_RESERVED_FIELD', details: { fields: [{ path: `extraFields.${field}` }] } }, JSON.stringify(field))
    t.ok((error as Error).message.includes(`'${field}'`), `the message names ${JSON.stringify(field)}`)
  }
  const nested: Array<[Record<string, unknown>, string]> = [
    [{ profile: { $gt: 1 } }, 'profile.$gt'],
    [{ profile: { 'a.b': 1 } }, 'profile.a.b'],
    [{ list: [1, { deep: { '': 2 } }] }, 'list[1].deep.']
  ]
  for (const [extraFields, path] of nested) {
    await t.rejects(users.register('proj-a', { email: 'x@example.com', password: PASSWORD, extraFields }), { status: 400, code: 'APP_RESERVED_FIELD', details: { fields: [{ path: `extraFields.${path}` }] } }, path)
  }

  const tooLarge = { status: 400, code: 'APP_EXTRA_FIELDS_TOO_LARGE' }
  const fields = (count: number) => Object.fromEntries(Array.from({ length: count }, (_, i) => [`f${i}`, i]))
  await t.rejects(users.register('proj-a', { email: 'x@example.com', password: PASSWORD, extraFields: fields(MAX_EXTRA_FIELDS + 1) }), tooLarge, '51 fields')
  const bio = (bytes: number) => ({ bio: 'é'.repeat(Math.floor((bytes - '{"bio":""}'.length) / 2)) })
  t.equal(Buffer.byteLength(JSON.stringify(bio(MAX_EXTRA_FIELDS_BYTES + 2))), MAX_EXTRA_FIELDS_BYTES + 2)
  await t.rejects(users.register('proj-a', { email: 'x@example.com', password: PASSWORD, extraFields: bio(MAX_EXTRA_FIELDS_BYTES + 2) }), tooLarge, 'counted in UTF-8 bytes')
  t.equal(await raw('proj-a').countDocuments({}), 0, 'no refused registration left a record')

  t.equal(Object.keys((await users.register('proj-a', { email: 'max@example.com', password: PASSWORD, extraFields: fields(MAX_EXTRA_FIELDS) }))).length, 5 + MAX_EXTRA_FIELDS, '50 fields fit')
  t.equal((await users.register('proj-a', { email: 'bio@example.com', password: PASSWORD, extraFields: bio(MAX_EXTRA_FIELDS_BYTES) })).bio, bio(MAX_EXTRA_FIELDS_BYTES).bio, '16 KB fits')
})

t.test('authenticate: the right password logs in; every failure is the same 401', async (t) => {
  const { users } = await setup(t)
  const ada = await users.register('proj-a', { email: 'ada@example.com', password: PASSWORD, extraFields: { displayName: 'Ada' } })
  await users.register('proj-b', { email: 'bob@example.com', password: PASSWORD })
  t.same((await users.authenticate('proj-a', 'ada@example.com', PASSWORD)).user, ada)
  t.same((await users.authenticate('proj-a', '  ADA@Example.com', PASSWORD)).user, ada, 'email normalised')

  const failures: Array<[string, string, string, string]> = [
    ['wrong password', 'proj-a', 'ada@example.com', 'wrong horse battery'],
    ['password in another case', 'proj-a', 'ada@example.com', PASSWORD.toUpperCase()],
    ['unknown email', 'proj-a', 'nobody@example.com', PASSWORD],
    ['a user of another project', 'proj-a', 'bob@example.com', PASSWORD],
    ['a project without users', 'proj-c', 'ada@example.com', PASSWORD],
    ['an invalid email', 'proj-a', 'not an email', PASSWORD]
  ]
  const answers = []
  for (const [name, projectId, email, password] of failures) {
    const error = await users.authenticate(projectId, email, password).catch((e: unknown) => e)
    t.match(error, { status: 401, code: 'APP_INVALID_CREDENTIALS' }, name)
    answers.push(JSON.stringify({ ...(error as object), message: (error as Error).message }))
  }
  t.equal(new Set(answers).size, 1, 'the same status, code and message for every failure')
})

t.test('an unknown email costs about as much as a wrong password', async (t) => {
  const { users } = await setup(t)
  await users.register('proj-a', { email: 'ada@example.com', password: PASSWORD })
  const timed = async (email: string): Promise<number> => {
    const start = process.hrtime.bigint()
    await users.authenticate('proj-a', email, 'wrong horse battery').catch(() => undefined)
    return Number(process.hrtime.bigint() - start) / 1e6
  }
  await timed('nobody@example.com') // builds the decoy hash once
  const unknown: number[] = []
  const wrong: number[] = []
  for (let i = 0; i < 5; i++) {
    unknown.push(await timed('nobody@example.com'))
    wrong.push(await timed('ada@example.com'))
  }
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[2]
  // Without the decoy an unknown email costs one index read (well under a millisecond) against tens of ms of argon2.
  const ratio = median(unknown) / median(wrong)
  t.ok(ratio > 0.2 && ratio < 5, `unknown ${median(unknown).toFixed(1)} ms vs wrong ${median(wrong).toFixed(1)} ms`)
})

t.test('a hash made with weaker parameters is replaced on the next successful login', async (t) => {
  const { users, raw, clock } = await setup(t)
  const weak = await argon2.hash(PASSWORD, { type: argon2.argon2id, memoryCost: 4096, timeCost: 1, parallelism: 1 })
  t.ok(passwordNeedsRehash(weak))
  const createdAt = clock.now()
  const { insertedId } = await raw('proj-a').insertOne({ email: 'old@example.com', passwordHash: weak, emailVerified: true, createdAt, updatedAt: createdAt })
  clock.advance(60_000)
  const { user } = await users.authenticate('proj-a', 'old@example.com', PASSWORD)
  t.equal(user.id, insertedId)
  const stored = await raw('proj-a').findOne({ _id: insertedId })
  t.not(stored?.passwordHash, weak)
  t.notOk(passwordNeedsRehash(stored?.passwordHash as string), 'now at today\'s parameters')
  t.ok(await verifyPassword(stored?.passwordHash as string, PASSWORD))
  t.same(stored?.updatedAt, createdAt, 'a rehash is not a profile change')
  t.same((await users.authenticate('proj-a', 'old@example.com', PASSWORD)).user, user, 'and the password still works')
})

t.test('get and findById: only a user of this project', async (t) => {
  const { users, raw } = await setup(t)
  const ada = await users.register('proj-a', { email: 'ada@example.com', password: PASSWORD })
  const notFound = { status: 404, code: 'APP_USER_NOT_FOUND' }
  t.same(await users.findById('proj-a', ada.id), ada)
  await t.rejects(users.get('proj-b', ada.id), notFound, 'another project')
  await t.rejects(users.get('proj-a', 'no-such-user'), notFound, 'unknown id')
  t.equal(await users.findById('proj-b', ada.id), null)
  t.equal(await users.findById('proj-a', 'no-such-user'), null)

  // Whatever else writes to the collection, reserved and internal names never reach the view.
  await raw('proj-a').updateOne({ _id: ada.id }, { $set: { _internal: 1, password: 'plain', nickname: 'A' } })
  t.same(await users.get('proj-a', ada.id), { ...ada, nickname: 'A' })
})

t.test('sign-up takes the _users write gate: it waits for a definition change under way', async (t) => {
  const store = await tempStore(t, 'plinth-project-users-')
  const clock = new ManualClock(Date.UTC(2026, 0, 1))
  const { users, writes, enable, stats } = projectUsersOn(store, clock)
  await enable('p')
  let release = (): void => {}
  const changing = writes.change(collectionKey('p', PROJECT_USERS_TABLE), async () => { await new Promise<void>((resolve) => { release = resolve }) })
  const registering = users.register('p', { email: 'ada@example.com', password: PASSWORD })
  while (stats.writes === 0) await new Promise((resolve) => setTimeout(resolve, 5))
  for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve))
  const stored = store.collection(projectCollectionName('p', PROJECT_USERS_TABLE))
  t.equal(await stored.countDocuments({}), 0, 'the sign-up waits while the definition changes')
  release()
  await changing
  t.match(await registering, { email: 'ada@example.com' }, 'and is stored once the change is done')
  t.equal(await stored.countDocuments({}), 1)
})

t.test('page: newest first, the address filter taken literally, cursors bound to the project and filter', async (t) => {
  const { users, raw } = await setup(t)
  const emails = ['a.b@example.com', 'axb@example.com', 'c+d@example.com', 'e(f)@example.com']
  const ids: string[] = []
  for (const email of emails) ids.push((await users.createFromProvider('proj-a', email, true)).user.id)
  await users.createFromProvider('proj-b', 'a.b@example.com', true)

  const first = await users.page('proj-a', { limit: 3 })
  t.same(first.items.map((item) => item.id), ids.slice(1).reverse())
  t.same(first.items[0], { id: ids[3], email: 'e(f)@example.com', emailVerified: true, disabled: false, hasPassword: false, createdAt: first.items[0].createdAt, updatedAt: first.items[0].updatedAt })
  const rest = await users.page('proj-a', { limit: 3, cursor: first.nextCursor ?? '' })
  t.same([rest.items.map((item) => item.id), rest.nextCursor], [[ids[0]], null])

  const emailsOf = async (emailContains: string) => (await users.page('proj-a', { emailContains })).items.map((item) => item.email)
  t.same(await emailsOf('A.B'), ['a.b@example.com'], 'a dot is a dot, and case does not matter')
  t.same(await emailsOf('c+d'), ['c+d@example.com'])
  t.same(await emailsOf('(f)'), ['e(f)@example.com'])
  t.same(await emailsOf('.*'), [])

  const refusals = [
    users.page('proj-b', { limit: 3, cursor: first.nextCursor ?? '' }),
    users.page('proj-a', { limit: 3, cursor: first.nextCursor ?? '', emailContains: 'example' })
  ]
  for (const refused of refusals) t.equal((await refusal(refused)).code, 'APP_INVALID_CURSOR')

  t.equal(await users.setDisabled('proj-a', ids[0], true), true)
  t.match(await raw('proj-a').findOne({ _id: ids[0] }), { disabled: true, version: 2 }, 'the record\'s version moves')
  t.equal((await users.state('proj-a', ids[0]))?.disabled, true)
  t.equal(await users.setDisabled('proj-a', 'nobody', true), false)
  t.equal(await users.state('proj-a', 'nobody'), null)
})
