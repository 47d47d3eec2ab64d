import t, { type Test } from 'tap'
import { buildTestApp, signUp, call } from '../../helper.js'

type Headers = Record<string, string>

/**
 * What a rule hides stays hidden: a denied field cannot be filtered, sorted
 * or selected on (each would tell its values one question at a time), and
 * cursors are sealed, so neither a sort value nor an id can be read out of
 * one, and one issued for a query works for that query only.
 */
async function people (t: Test) {
  const app = await buildTestApp(t)
  const admin = await signUp(app, 'admin@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
  const projectId = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name: 'People' })).body.data.id as string
  const open = (deny: string[]) => ({ enabled: true, rule: { requireAuth: false, deny } })
  const defined = await call(app, 'POST', `/api/projects/${projectId}/collections`, admin.auth, {
    name: 'people',
    fields: [{ name: 'name', type: 'text' }, { name: 'secret', type: 'text' }, { name: 'salary', type: 'number' }, { name: 'notes', type: 'json' }],
    methods: { list: open(['secret', 'salary', 'notes']), get: open(['secret']), create: open([]), update: open(['salary']), delete: open(['secret']) }
  })
  if (defined.status !== 201) throw new Error(JSON.stringify(defined.body))
  const url = `/api/p/${projectId}/people`
  for (const [name, secret, salary] of [['ann', 'a1', 100], ['bob', 'b2', 200], ['cy', 'c3', 300]] as const) {
    await call(app, 'POST', url, {}, { name, secret, salary, notes: { pin: `${name}-pin` } })
  }
  return { app, admin, projectId, url }
}

const q = (params: Record<string, unknown>): string =>
  Object.entries(params).map(([key, value]) => `${key}=${encodeURIComponent(typeof value === 'string' ? value : JSON.stringify(value))}`).join('&')

t.test('a denied field cannot be filtered, sorted or selected on, in any spelling', async (t) => {
  const { app, url } = await people(t)
  const refusedFilters: Array<[string, unknown, string]> = [
    ['equality', { secret: 'a1' }, 'secret'],
    ['a range', { salary: { $gt: 150 } }, 'salary'],
    ['a regex', { secret: { $regex: '^a' } }, 'secret'],
    ['existence', { secret: { $exists: true } }, 'secret'],
    ['inside $or', { $or: [{ name: 'ann' }, { secret: 'a1' }] }, 'secret'],
    ['inside $nor', { $nor: [{ salary: 100 }] }, 'salary'],
    ['a json sub-path', { 'notes.pin': 'ann-pin' }, 'notes']
  ]
  for (const [name, filter, field] of refusedFilters) {
    const listed = await call(app, 'GET', `${url}?${q({ filter })}`, {})
    t.same([listed.status, listed.body.code, listed.body.details?.fields?.[0]?.field], [400, 'APP_INVALID_FILTER', field], `${name}: refused in the query string, naming the field`)
    t.match(listed.body.message, new RegExp(`"${field}" is hidden`))
    const queried = await call(app, 'POST', `${url}/query`, {}, { filter, count: true })
    t.same([queried.status, queried.body.code], [400, 'APP_INVALID_FILTER'], `${name}: and in a query body, with a count`)
  }
  for (const sort of ['secret', '-salary', 'name,secret']) {
    const res = await call(app, 'GET', `${url}?${q({ sort })}`, {})
    t.same([res.status, res.body.code], [400, 'APP_INVALID_SORT'], `sort=${sort}`)
  }
  const selected = await call(app, 'GET', `${url}?fields=name,secret`, {})
  t.same([selected.status, selected.body.code, selected.body.details], [400, 'APP_INVALID_FIELDS', { fields: [{ path: 'fields', field: 'secret', message: 'is hidden from this method\'s callers' }] }], 'fields=secret')
  const id = (await call(app, 'GET', url, {})).body.data.items[0].id as string
  t.same((await call(app, 'GET', `${url}/${id}?fields=secret`, {})).body.code, 'APP_INVALID_FIELDS', 'get: fields=secret')
  t.equal((await call(app, 'GET', `${url}/${id}?fields=salary`, {})).status, 200, 'get does not deny salary: each method has its own rule')

  const bulk = await call(app, 'PATCH', url, {}, { filter: { salary: { $gte: 200 } }, set: { name: 'x' }, dryRun: true })
  t.same([bulk.status, bulk.body.code], [400, 'APP_INVALID_FILTER'], 'a bulk update cannot count records by a field its rule hides')
  const bulkDelete = await call(app, 'DELETE', `${url}?${q({ filter: { secret: 'a1' }, dryRun: 'true' })}`, {})
  t.same([bulkDelete.status, bulkDelete.body.code], [400, 'APP_INVALID_FILTER'], 'nor a bulk delete')

  const visible = await call(app, 'GET', `${url}?${q({ filter: { name: { $in: ['ann', 'bob'] } }, sort: '-name', count: 'true' })}`, {})
  t.same([visible.status, visible.body.data.total, visible.body.data.items.map((item: { name: string }) => item.name)], [200, 2, ['bob', 'ann']], 'visible fields still filter and sort')
  t.notOk(visible.body.data.items.some((item: Record<string, unknown>) => 'secret' in item || 'salary' in item), 'and the answers leave the hidden fields out')
})

t.test('cursors are sealed and bound to their collection, filter and order', async (t) => {
  const { app, admin, projectId, url } = await people(t)
  await call(app, 'POST', `/api/projects/${projectId}/collections`, admin.auth, {
    name: 'pets', fields: [{ name: 'name', type: 'text' }], methods: { list: { enabled: true, rule: { requireAuth: false } } }
  })
  const first = await call(app, 'GET', `${url}?limit=1&sort=name`, {})
  const cursor = first.body.data.nextCursor as string
  t.equal(typeof cursor, 'string')
  const bytes = Buffer.from(cursor.replace(/\./g, ''), 'base64url').toString('latin1')
  // As JSON would carry them: random ciphertext holds a given 4-byte run with odds of about one in 2^26.
  t.notOk(['"ann"', '"a1"', ',100'].some((fragment) => bytes.includes(fragment)), 'no sort value can be read out of it')
  t.notOk(bytes.includes(first.body.data.items[0].id), 'nor the record id')
  const second = await call(app, 'GET', `${url}?limit=1&sort=name&cursor=${encodeURIComponent(cursor)}`, {})
  t.same(second.body.data.items.map((item: { name: string }) => item.name), ['bob'], 'the same query pages on')

  const misuses: Array<[string, string]> = [
    ['another order', `${url}?limit=1&sort=-name&cursor=${encodeURIComponent(cursor)}`],
    ['another filter', `${url}?limit=1&sort=name&${q({ filter: { name: { $ne: 'zed' } } })}&cursor=${encodeURIComponent(cursor)}`],
    ['another collection', `/api/p/${projectId}/pets?limit=1&sort=name&cursor=${encodeURIComponent(cursor)}`],
    ['a forged one', `${url}?limit=1&sort=name&cursor=${encodeURIComponent(Buffer.from(JSON.stringify({ s: 'name,_id', v: ['b', 'x'] })).toString('base64url'))}.sig`],
    ['garbage', `${url}?limit=1&sort=name&cursor=not-a-cursor`]
  ]
  for (const [name, target] of misuses) {
    const res = await call(app, 'GET', target, {})
    t.same([res.status, res.body.code], [400, 'APP_INVALID_CURSOR'], name)
  }
})

t.test('_users: an email the list rule denies is as hidden as any field', async (t) => {
  const { app, admin, projectId } = await people(t)
  await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, admin.auth, { enabled: true })
  const session = (await call(app, 'POST', `/api/p/${projectId}/auth/register`, {}, { email: 'ann@example.com', password: 'long enough 1' })).body.data
  await call(app, 'POST', `/api/p/${projectId}/auth/register`, {}, { email: 'bob@example.com', password: 'long enough 1' })
  const changed = await call(app, 'PUT', `/api/projects/${projectId}/collections/_users`, admin.auth, {
    methods: { list: { enabled: true, rule: { requireAuth: true, deny: ['email'] } } }
  })
  t.equal(changed.status, 200)
  const auth: Headers = { authorization: `Bearer ${session.accessToken as string}` }
  const users = `/api/p/${projectId}/_users`
  t.same((await call(app, 'GET', users, auth)).body.data.items.map((user: Record<string, unknown>) => 'email' in user), [false, false], 'emails are left out')
  for (const query of [q({ filter: { email: { $regex: '^bob' } } }), q({ filter: { email: 'bob@example.com' } }), 'sort=email', 'fields=email']) {
    const res = await call(app, 'GET', `${users}?${query}`, auth)
    t.equal(res.status, 400, `${decodeURIComponent(query)} is refused`)
  }
})

t.test('what list and get hide, writes neither answer with nor select by', async (t) => {
  const { app, url } = await people(t)
  const id = (await call(app, 'GET', `${url}?${q({ filter: { name: 'bob' } })}`, {})).body.data.items[0].id as string
  const updated = await call(app, 'PUT', `${url}/${id}`, {}, { name: 'robert' })
  t.equal(updated.status, 200)
  t.notOk(['secret', 'salary', 'notes'].some((field) => field in updated.body.data), 'an update answers without the fields reads hide')
  const created = await call(app, 'POST', url, {}, { name: 'dee', secret: 'd4', salary: 400 })
  t.equal(created.status, 201)
  t.notOk(['secret', 'salary'].some((field) => field in created.body.data), 'so does a create, even of values the caller just sent')
  const counted = await call(app, 'PATCH', url, {}, { filter: { notes: { $exists: true } }, set: { name: 'x' }, dryRun: true })
  t.same([counted.status, counted.body.code, counted.body.details?.fields?.[0]?.field], [400, 'APP_INVALID_FILTER', 'notes'], 'a bulk update cannot count by a field only list hides')
  const removed = await call(app, 'DELETE', url, {}, { filter: { salary: { $gt: 250 } }, dryRun: true })
  t.same([removed.status, removed.body.code], [400, 'APP_INVALID_FILTER'], 'nor a bulk delete')
})
