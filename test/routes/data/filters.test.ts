import t, { type Test } from 'tap'
import { buildTestApp, signUp, call } from '../../helper.js'

/**
 * Filters are held to the fields' types and to one set of limits however
 * they arrive; bulk writes need a filter that selects; and field names that
 * happen to be the names of Object.prototype's members are ordinary names.
 */
async function shop (t: Test, fields: unknown[]) {
  const app = await buildTestApp(t)
  const admin = await signUp(app, 'admin@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
  const projectId = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name: 'Shop' })).body.data.id as string
  const open = { enabled: true, rule: { requireAuth: false } }
  const defined = await call(app, 'POST', `/api/projects/${projectId}/collections`, admin.auth, {
    name: 'items', fields, methods: { list: open, get: open, create: open, update: open, delete: open }
  })
  if (defined.status !== 201) throw new Error(JSON.stringify(defined.body))
  return { app, admin, url: `/api/p/${projectId}/items` }
}

const q = (filter: unknown): string => `filter=${encodeURIComponent(JSON.stringify(filter))}`

t.test('comparisons must use the field\'s own type, and dates must exist', async (t) => {
  const { app, url } = await shop(t, [
    { name: 'n', type: 'number' }, { name: 'flag', type: 'boolean' }, { name: 'day', type: 'date' },
    { name: 'title', type: 'text' }, { name: 'tags', type: 'select', values: ['a', 'b'], multiple: true }, { name: 'meta', type: 'json' }
  ])
  t.equal((await call(app, 'POST', url, {}, { n: 3, flag: true, day: '2024-02-29', title: 't', tags: ['a'], meta: { n: '3' } })).status, 201)
  const refused: Array<[string, unknown, string]> = [
    ['a string against a number', { n: { $gt: '3' } }, 'n'],
    ['equality with a string on a number', { n: '3' }, 'n'],
    ['$in with a wrong member', { n: { $in: [1, '2'] } }, 'n'],
    ['a string for a boolean', { flag: 'true' }, 'flag'],
    ['a number against text', { title: { $lt: 5 } }, 'title'],
    ['an impossible date', { day: { $gte: '2024-02-30' } }, 'day'],
    ['a date that is not ISO', { day: 'March 5' }, 'day'],
    ['$regex on a number', { n: { $regex: '3' } }, 'n'],
    ['$size on a single value', { title: { $size: 1 } }, 'title'],
    ['$elemMatch on a single value', { n: { $elemMatch: { $gt: 1 } } }, 'n'],
    ['a number inside $all of a select', { tags: { $all: [1] } }, 'tags'],
    ['a wrong type under $not', { n: { $not: { $lt: 'x' } } }, 'n'],
    ['createdAt with a non-date', { createdAt: { $gt: 5 } }, 'createdAt']
  ]
  for (const [name, filter, field] of refused) {
    const res = await call(app, 'GET', `${url}?${q(filter)}`, {})
    t.same([res.status, res.body.code, res.body.details?.fields?.[0]?.field], [400, 'APP_INVALID_FILTER', field], name)
  }
  const accepted: Array<[string, unknown, number]> = [
    ['numbers', { n: { $gte: 3, $lt: 4 } }, 1],
    ['null means no value', { n: { $ne: null } }, 1],
    ['a leap day', { day: '2024-02-29' }, 1],
    ['a date-time with a zone', { day: { $lt: '2024-02-29T10:00:00+02:00' } }, 1],
    ['a member of a list', { tags: 'a' }, 1],
    ['the whole list', { tags: ['a'] }, 1],
    ['$elemMatch over a list', { tags: { $elemMatch: { $in: ['a'] } } }, 1],
    ['anything inside json', { 'meta.n': '3' }, 1],
    ['$size of a list', { tags: { $size: 1 } }, 1]
  ]
  for (const [name, filter, count] of accepted) {
    const res = await call(app, 'GET', `${url}?${q(filter)}`, {})
    t.same([res.status, res.body.data?.items.length], [200, count], name)
  }
  const created = await call(app, 'POST', url, {}, { day: '2023-02-29' })
  t.same([created.status, created.body.code, created.body.details?.fields?.[0]?.path], [400, 'APP_INVALID_FIELD', 'day'], 'a record with a day that does not exist is refused, not rolled into March')
  t.equal((await call(app, 'POST', url, {}, { day: '2024-04-31T10:00:00Z' })).status, 400, 'April has 30 days')
})

t.test('a filter in the query string meets the limits a query body meets', async (t) => {
  const { app, url } = await shop(t, [{ name: 'meta', type: 'json' }, { name: 'n', type: 'number' }])
  let deep: unknown = 1
  for (let i = 0; i < 40; i++) deep = [deep]
  const filters: Array<[string, unknown]> = [
    ['values nested deep inside $in', { meta: { $in: [deep] } }],
    ['clauses nested deep', { $and: [{ $and: [{ $and: [{ $and: [{ $and: [{ $and: [{ $and: [{ n: 1 }] }] }] }] }] }] }] }],
    ['too many clauses', Object.fromEntries(Array.from({ length: 70 }, (_, i) => [`meta.k${i}`, i]))]
  ]
  for (const [name, filter] of filters) {
    const viaQuery = await call(app, 'GET', `${url}?${q(filter)}`, {})
    const viaBody = await call(app, 'POST', `${url}/query`, {}, { filter })
    t.same([viaQuery.status, viaQuery.body.code], [400, 'APP_INVALID_FILTER'], `${name}: refused in the query string`)
    t.same([viaBody.status, viaBody.body.code, viaBody.body.message], [viaQuery.status, viaQuery.body.code, viaQuery.body.message], `${name}: the same answer as in a body`)
  }
  // As text: no JSON.stringify on this side could write it either.
  const abyss = `{"filter":{"meta":${'['.repeat(100_000)}1${']'.repeat(100_000)}}}`
  const sentDeep = await app.inject({ method: 'POST', url: `${url}/query`, headers: { 'content-type': 'application/json' }, payload: abyss })
  const deepBody = { status: sentDeep.statusCode, body: sentDeep.json() }
  t.same([deepBody.status, deepBody.body.code], [400, 'APP_INVALID_FILTER'], 'a value 100,000 levels deep is measured before anything recurses over it: a 400, not a stack overflow')
})

t.test('bulk writes need a filter that selects: forms that match everything do not count', async (t) => {
  const { app, url } = await shop(t, [{ name: 'title', type: 'text' }])
  for (const title of ['a', 'b']) await call(app, 'POST', url, {}, { title })
  const everything: unknown[] = [
    {}, { $and: [{}] }, { $or: [{}] }, { $or: [{ title: 'a' }, {}] }, { $and: [{}, { $or: [{}] }] },
    { id: { $exists: true } }, { createdAt: { $exists: true } }, { $and: [{ updatedAt: { $exists: 1 } }] }
  ]
  for (const filter of everything) {
    const patched = await call(app, 'PATCH', url, {}, { filter, set: { title: 'gone' } })
    t.same([patched.status, patched.body.code], [400, 'APP_FILTER_REQUIRED'], `PATCH ${JSON.stringify(filter)}`)
    const deleted = await call(app, 'DELETE', url, {}, { filter })
    t.same([deleted.status, deleted.body.code], [400, 'APP_FILTER_REQUIRED'], `DELETE ${JSON.stringify(filter)}`)
  }
  const left = await call(app, 'GET', `${url}?sort=title`, {})
  t.same(left.body.data.items.map((item: { title: string }) => item.title), ['a', 'b'], 'nothing changed')
  const selective = await call(app, 'PATCH', url, {}, { filter: { $or: [{ title: 'a' }, { title: 'zzz' }] }, set: { title: 'c' } })
  t.same(selective.body.data, { matched: 1, modified: 1, dryRun: false }, 'a filter that selects is taken')
  t.equal((await call(app, 'DELETE', url, {}, { filter: { title: { $exists: true } } })).body.data.deleted, 2, '$exists on a field records may lack selects')
})

t.test('constructor, toString and the other prototype names are ordinary field names', async (t) => {
  const names = ['constructor', 'toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf', 'toLocaleString']
  const { app, admin, url } = await shop(t, names.map((name, i) => ({ name, type: i === 1 ? 'number' : 'text' })))
  const values = Object.fromEntries(names.map((name, i) => [name, i === 1 ? 7 : `${name}-value`]))
  const created = await call(app, 'POST', url, {}, values)
  t.equal(created.status, 201, JSON.stringify(created.body))
  t.match(created.body.data, values)
  const bare = await call(app, 'POST', url, {}, {})
  t.equal(bare.status, 201)
  t.notOk(names.some((name) => Object.hasOwn(bare.body.data as object, name)), 'a record without them shows none of them')

  for (const name of names) {
    const equal = await call(app, 'GET', `${url}?${q({ [name]: values[name] })}`, {})
    t.same([equal.status, equal.body.data.items.map((item: { id: string }) => item.id)], [200, [created.body.data.id]], `filter on ${name}`)
    const missing = await call(app, 'GET', `${url}?${q({ [name]: null })}`, {})
    t.same(missing.body.data.items.map((item: { id: string }) => item.id), [bare.body.data.id], `${name}: null finds the record without it`)
    const absent = await call(app, 'GET', `${url}?${q({ [name]: { $exists: false } })}`, {})
    t.same(absent.body.data.items.map((item: { id: string }) => item.id), [bare.body.data.id], `${name}: $exists false likewise`)
    const sorted = await call(app, 'GET', `${url}?sort=-${name}&limit=1`, {})
    t.equal(sorted.status, 200, `sort on ${name}`)
    const next = await call(app, 'GET', `${url}?sort=-${name}&limit=1&cursor=${encodeURIComponent(sorted.body.data.nextCursor as string)}`, {})
    t.equal(next.body.data.items.length, 1, `${name}: the cursor pages on`)
    const selected = await call(app, 'GET', `${url}/${created.body.data.id as string}?fields=${name}`, {})
    t.same(Object.keys(selected.body.data), ['id', name], `fields=${name}`)
  }
  const updated = await call(app, 'PUT', `${url}/${bare.body.data.id as string}`, {}, { constructor: 'set later', toString: 1 })
  t.match([updated.status, updated.body.data], [200, { constructor: 'set later', toString: 1 }])
  const bulk = await call(app, 'PATCH', url, {}, { filter: { valueOf: { $exists: false } }, set: { valueOf: 'filled' } })
  t.same(bulk.body.data, { matched: 1, modified: 1, dryRun: false }, 'bulk update by a prototype name')
  const unknown = await call(app, 'POST', url, {}, { propertyIsEnumerable: 'x' })
  t.same([unknown.status, unknown.body.code], [400, 'APP_UNKNOWN_FIELD'], 'an undeclared prototype name is an unknown field, not a member of Object')
  const unknownFilter = await call(app, 'GET', `${url}?${q({ __defineGetter__: 1 })}`, {})
  t.same([unknownFilter.status, unknownFilter.body.code], [400, 'APP_INVALID_FILTER'], 'and filtering on one is refused like any unknown field')
  const twoWithout = (await call(app, 'GET', `${url}?${q({ isPrototypeOf: null })}`, {})).body.data.items.length
  t.ok(twoWithout >= 1)
  await call(app, 'POST', url, {}, {})
  const unique = await call(app, 'PUT', url.replace('/api/p/', '/api/projects/').replace(/\/items$/, '/collections/items'), admin.auth, {
    fields: names.map((name, i) => ({ name, type: i === 1 ? 'number' : 'text', ...(name === 'isPrototypeOf' ? { unique: true } : {}) }))
  })
  t.same([unique.status, unique.body.code], [409, 'APP_DEFINITION_CONFLICT'], 'a unique index over records lacking the field')
  t.match(unique.body.message, /have no value/, 'counts them as holding no value, not as holding Object\'s own member')
})
