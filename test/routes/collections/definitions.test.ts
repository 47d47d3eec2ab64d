import t, { type Test } from 'tap'
import { buildTestApp, call, orgWithRoles } from '../../helper.js'

type Headers = Record<string, string>

async function setup (t: Test) {
  const app = await buildTestApp(t)
  const { owner, member, viewer, outsider, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Shop' })).body.data.id as string
  const base = `/api/projects/${projectId}/collections`
  const indexes = async (name: string) => (await app.store.collection(`p_${projectId}_${name}`).listIndexes()).map((index) => index.name).sort()
  return { app, owner, member, viewer, outsider, orgId, projectId, base, indexes }
}

const posts = {
  name: 'posts',
  fields: [{ name: 'title', type: 'text', required: true }, { name: 'slug', type: 'text', unique: true }, { name: 'author', type: 'text' }],
  indexes: [{ fields: ['author', '-createdAt'] }],
  methods: { list: { enabled: true, rule: { requireAuth: false } }, create: { enabled: true, rule: { requireAuth: true, owner: 'author' } } }
}

t.test('who may read and manage collection definitions', async (t) => {
  const { app, owner, member, viewer, outsider, base, indexes } = await setup(t)
  const created = await call(app, 'POST', base, owner.auth, posts)
  t.equal(created.status, 201)
  t.match(created.body, { success: true, data: { name: 'posts', fields: posts.fields, indexes: posts.indexes } })
  t.same(created.body.data.methods.delete, { enabled: false, rule: null })
  t.same(created.body.data.methods.create, posts.methods.create)
  t.same(await indexes('posts'), ['_id_', 'def_i_-createdAt,_id', 'def_i_-updatedAt,_id', 'def_i_author,-createdAt,_id', 'def_u_slug'])

  const pat = (await call(app, 'POST', '/api/auth/api-keys', owner.auth, { name: 'ci' })).body.data.token as string
  const byPat = await call(app, 'POST', base, { authorization: `Bearer ${pat}` }, { name: 'tags' })
  t.equal(byPat.status, 201, 'a PAT works like a platform JWT')

  for (const who of [viewer, member]) {
    const listed = await call(app, 'GET', base, who.auth)
    t.same(listed.body.data.map((c: { name: string }) => c.name), ['posts', 'tags'], 'readers list them by name')
    t.same((await call(app, 'GET', `${base}/posts`, who.auth)).body.data, created.body.data)
  }

  const refusals: Array<[string, 'GET' | 'POST' | 'PUT' | 'DELETE', string, Headers, unknown, number, string]> = [
    ['viewer creates', 'POST', base, viewer.auth, { name: 'mine' }, 403, 'APP_FORBIDDEN'],
    ['member changes', 'PUT', `${base}/posts`, member.auth, { fields: [] }, 403, 'APP_FORBIDDEN'],
    ['viewer drops', 'DELETE', `${base}/posts`, viewer.auth, undefined, 403, 'APP_FORBIDDEN'],
    ['outsider lists', 'GET', base, outsider.auth, undefined, 404, 'APP_PROJECT_NOT_FOUND'],
    ['outsider reads', 'GET', `${base}/posts`, outsider.auth, undefined, 404, 'APP_PROJECT_NOT_FOUND'],
    ['outsider creates', 'POST', base, outsider.auth, { name: 'mine' }, 404, 'APP_PROJECT_NOT_FOUND'],
    ['outsider drops', 'DELETE', `${base}/posts`, outsider.auth, undefined, 404, 'APP_PROJECT_NOT_FOUND'],
    ['nobody', 'GET', base, {}, undefined, 401, 'APP_UNAUTHORIZED'],
    ['unknown project', 'GET', '/api/projects/nothere/collections', owner.auth, undefined, 404, 'APP_PROJECT_NOT_FOUND']
  ]
  for (const [name, method, url, headers, payload, status, code] of refusals) {
    const res = await call(app, method, url, headers, payload)
    t.same([res.status, res.body.code], [status, code], name)
  }
  const forbidden = await call(app, 'POST', base, viewer.auth, { name: 'mine' })
  t.same(forbidden.body.details, { permission: 'collections.manage' })
  t.equal((await call(app, 'GET', `${base}/posts`, owner.auth)).body.data.updatedAt, created.body.data.updatedAt, 'refused calls changed nothing')
})

t.test('invalid requests and definitions are refused naming the offending path', async (t) => {
  const { app, owner, base } = await setup(t)
  t.equal((await call(app, 'POST', base, owner.auth, posts)).status, 201)
  const field = (extra: object) => ({ name: 'things', fields: [{ name: 'a', type: 'text' }, { name: 'b', type: 'text' }, { name: 'c', type: 'text', ...extra }] })
  const cases: Array<[string, 'POST' | 'PUT' | 'GET' | 'DELETE', string, unknown, number, string, string | RegExp]> = [
    ['_users by POST', 'POST', base, { name: '_users' }, 400, 'APP_RESERVED_COLLECTION', /^name: "_users" is reserved/],
    ['another underscore name', 'POST', base, { name: '_things' }, 400, 'APP_VALIDATION_FAILED', /^body\.name /],
    ['an existing name', 'POST', base, { name: 'posts' }, 409, 'APP_COLLECTION_EXISTS', 'A collection named "posts" already exists in this project'],
    ['an invalid pattern', 'POST', base, field({ pattern: '(unclosed' }), 400, 'APP_INVALID_DEFINITION', 'fields[2].pattern: invalid regular expression'],
    ['an option of another type', 'POST', base, field({ values: ['x'] }), 400, 'APP_INVALID_DEFINITION', 'fields[2].values: is only for select fields (not text)'],
    ['a bad default', 'POST', base, field({ max: 2, default: 'long' }), 400, 'APP_INVALID_DEFINITION', 'fields[2].default: must be at most 2 characters'],
    ['a reserved field', 'POST', base, { name: 'things', fields: [{ name: 'createdAt', type: 'date' }] }, 400, 'APP_RESERVED_FIELD', 'fields[0].name: "createdAt" is reserved'],
    ['duplicate fields', 'POST', base, { name: 'things', fields: [{ name: 'a', type: 'text' }, { name: 'a', type: 'text' }] }, 400, 'APP_INVALID_DEFINITION', 'fields[1].name: "a" is defined twice'],
    ['a relation to nowhere', 'POST', base, { name: 'things', fields: [{ name: 'r', type: 'relation', collection: 'ghosts' }] }, 400, 'APP_INVALID_DEFINITION', 'fields[0].collection: "ghosts" is not a collection of this project'],
    ['an index on no field', 'POST', base, { name: 'things', indexes: [{ fields: ['nope'] }] }, 400, 'APP_INVALID_DEFINITION', 'indexes[0].fields[0]: "nope" is not a field of this collection'],
    ['an owner of the wrong type', 'POST', base, { name: 'things', fields: [{ name: 'n', type: 'number' }], methods: { get: { enabled: true, rule: { requireAuth: true, owner: 'n' } } } }, 400, 'APP_INVALID_DEFINITION', 'methods.get.rule.owner: "n" must be a text or relation field of this collection'],
    ['a rule filter outside the subset', 'POST', base, { name: 'things', methods: { list: { enabled: true, rule: { requireAuth: false, filter: { $where: 'true' } } } } }, 400, 'APP_INVALID_DEFINITION', /^methods\.list\.rule\.filter\.\$where: /],
    ['a rule filter on an unknown field', 'POST', base, { name: 'things', methods: { list: { enabled: true, rule: { requireAuth: false, filter: { secret: 1 } } } } }, 400, 'APP_INVALID_DEFINITION', 'methods.list.rule.filter.secret: "secret" is not a field of this collection'],
    ['deny naming no field', 'POST', base, { name: 'things', methods: { list: { enabled: true, rule: { requireAuth: false, deny: ['x'] } } } }, 400, 'APP_INVALID_DEFINITION', 'methods.list.rule.deny[0]: "x" is not a field of this collection'],
    ['an unknown method', 'POST', base, { name: 'things', methods: { purge: { enabled: true, rule: null } } }, 400, 'APP_VALIDATION_FAILED', /^body\.methods\.purge is not an allowed field/],
    ['an unknown field type', 'POST', base, { name: 'things', fields: [{ name: 'a', type: 'blob' }] }, 400, 'APP_VALIDATION_FAILED', /^body\.fields\.0\.type /],
    ['too many fields', 'POST', base, { name: 'things', fields: Array.from({ length: 101 }, (_, i) => ({ name: `f${i}`, type: 'text' })) }, 400, 'APP_VALIDATION_FAILED', /^body\.fields /],
    ['too many indexes', 'POST', base, { name: 'things', indexes: Array.from({ length: 21 }, () => ({ fields: ['createdAt'] })) }, 400, 'APP_VALIDATION_FAILED', /^body\.indexes /],
    ['an empty change', 'PUT', `${base}/posts`, {}, 400, 'APP_VALIDATION_FAILED', /^body /],
    ['a rename', 'PUT', `${base}/posts`, { name: 'articles' }, 400, 'APP_VALIDATION_FAILED', 'body.name is not an allowed field'],
    ['an invalid change', 'PUT', `${base}/posts`, { fields: [{ name: 'title', type: 'number', min: 3, max: 1 }] }, 400, 'APP_INVALID_DEFINITION', 'fields[0].min: must not exceed max (1)'],
    ['changing a missing collection', 'PUT', `${base}/ghosts`, { fields: [] }, 404, 'APP_COLLECTION_NOT_FOUND', 'Collection "ghosts" not found'],
    ['reading a missing collection', 'GET', `${base}/ghosts`, undefined, 404, 'APP_COLLECTION_NOT_FOUND', 'Collection "ghosts" not found'],
    ['dropping a missing collection', 'DELETE', `${base}/ghosts`, undefined, 404, 'APP_COLLECTION_NOT_FOUND', 'Collection "ghosts" not found'],
    ['a malformed name', 'GET', `${base}/Not-A-Name`, undefined, 400, 'APP_VALIDATION_FAILED', /^params\.name /]
  ]
  for (const [name, method, url, payload, status, code, message] of cases) {
    const res = await call(app, method, url, owner.auth, payload)
    t.same([res.status, res.body.code], [status, code], name)
    if (typeof message === 'string') t.equal(res.body.message, message, name)
    else t.match(res.body.message, message, name)
  }
  t.same((await call(app, 'GET', base, owner.auth)).body.data.map((c: { name: string }) => c.name), ['posts'], 'nothing else was created')
})

t.test('changes existing records would break are refused with 409 and change nothing', async (t) => {
  const { app, owner, projectId, base, indexes } = await setup(t)
  await call(app, 'POST', base, owner.auth, { name: 'items', fields: [{ name: 'title', type: 'text' }, { name: 'code', type: 'text' }] })
  const records = app.store.collection(`p_${projectId}_items`)
  await records.insertMany([{ title: 'a', code: 'x' }, { title: 'b', code: 'x' }, { title: 'c', code: 'x' }, { code: 'y' }])
  const before = (await call(app, 'GET', `${base}/items`, owner.auth)).body.data
  const beforeIndexes = await indexes('items')

  const changes: Array<[string, unknown, string]> = [
    ['a unique field over duplicates', { fields: [{ name: 'title', type: 'text' }, { name: 'code', type: 'text', unique: true }] }, 'unique index on "code": 3 records share the value "x"'],
    ['a unique index over duplicates', { indexes: [{ fields: ['title'] }, { fields: ['code'], unique: true }] }, 'unique index on "code": 3 records share the value "x"'],
    ['a newly required field', { fields: [{ name: 'title', type: 'text', required: true }, { name: 'code', type: 'text' }] }, 'field "title" is now required but 1 record lacks it'],
    ['a new required field', { fields: [{ name: 'title', type: 'text' }, { name: 'code', type: 'text' }, { name: 'price', type: 'number', required: true }] }, 'field "price" is now required but 4 records lack it']
  ]
  for (const [name, payload, message] of changes) {
    const res = await call(app, 'PUT', `${base}/items`, owner.auth, payload)
    t.same([res.status, res.body.code, res.body.message], [409, 'APP_DEFINITION_CONFLICT', message], name)
    t.same((await call(app, 'GET', `${base}/items`, owner.auth)).body.data, before, `${name}: the definition is unchanged`)
    t.same(await indexes('items'), beforeIndexes, `${name}: the indexes are unchanged`)
  }

  await records.updateMany({ title: { $in: ['b', 'c'] } }, { $set: { code: 'z' } })
  await records.updateMany({ code: 'z' }, { $set: { code: null } })
  await records.updateOne({ title: 'c' }, { $set: { code: 'w' } })
  const ok = await call(app, 'PUT', `${base}/items`, owner.auth, changes[0][1])
  t.equal(ok.status, 200, 'once the duplicates are gone the change goes through')
  t.same(await indexes('items'), ['_id_', 'def_i_-createdAt,_id', 'def_i_-updatedAt,_id', 'def_u_code'])
})

t.test('a field may change type or rules only if every stored value still fits', async (t) => {
  const { app, owner, projectId, base } = await setup(t)
  const fields = [{ name: 'title', type: 'text' }, { name: 'views', type: 'text' }, { name: 'state', type: 'select', values: ['draft', 'live', 'gone'] }, { name: 'at', type: 'date' }]
  t.equal((await call(app, 'POST', base, owner.auth, { name: 'items', fields, methods: { create: { enabled: true, rule: null } } })).status, 201)
  for (const body of [{ title: 'a', views: '12', state: 'draft', at: '2026-01-01T00:00:00Z' }, { title: 'b', views: 'many', state: 'gone' }, { title: 'c' }]) {
    t.equal((await call(app, 'POST', `/api/p/${projectId}/items`, owner.auth, body)).status, 201)
  }
  const before = (await call(app, 'GET', `${base}/items`, owner.auth)).body.data
  const retype = (changes: Record<string, unknown>) => fields.map((field) => field.name in changes ? { ...field, ...changes[field.name] as object } : field)
  const refused: Array<[string, unknown, string]> = [
    ['text to number (stored strings are not numbers, however they read)', retype({ views: { type: 'number' } }), 'field "views": 2 records hold values the new definition refuses'],
    ['a select value in use removed', retype({ state: { values: ['draft', 'live'] } }), 'field "state": 1 record holds a value the new definition refuses'],
    ['a shorter maximum', retype({ title: { max: 0 } }), 'field "title": 3 records hold values the new definition refuses'],
    ['date to boolean', retype({ at: { type: 'boolean' } }), 'field "at": 1 record holds a value the new definition refuses'],
    ['text to file', retype({ title: { type: 'file' } }), 'field "title": 3 records hold values the new definition refuses'],
    ['date to text (a stored date is not a string)', retype({ at: { type: 'text' } }), 'field "at": 1 record holds a value the new definition refuses'],
    ['text to relation (the ids were never checked)', retype({ title: { type: 'relation', collection: 'items' } }), 'field "title": 3 records hold values the new definition refuses']
  ]
  for (const [name, payload, message] of refused) {
    const res = await call(app, 'PUT', `${base}/items`, owner.auth, { fields: payload })
    t.same([res.status, res.body.code, res.body.message], [409, 'APP_DEFINITION_CONFLICT', message], name)
  }
  t.same((await call(app, 'GET', `${base}/items`, owner.auth)).body.data, before, 'nothing changed')

  const accepted: Array<[string, unknown]> = [
    ['a select value nobody uses removed', retype({ state: { values: ['draft', 'gone'] } })],
    ['text to url-free text with a longer maximum', retype({ views: { max: 100 } })],
    ['a pattern every title matches', retype({ title: { pattern: '^[a-c]$' } })]
  ]
  for (const [name, payload] of accepted) {
    const res = await call(app, 'PUT', `${base}/items`, owner.auth, { fields: payload })
    t.equal(res.status, 200, name)
  }
})

t.test('a collection that relations point at cannot be dropped until they are gone', async (t) => {
  const { app, owner, base } = await setup(t)
  await call(app, 'POST', base, owner.auth, { name: 'authors', fields: [{ name: 'name', type: 'text' }] })
  await call(app, 'POST', base, owner.auth, { name: 'books', fields: [{ name: 'title', type: 'text' }, { name: 'author', type: 'relation', collection: 'authors' }] })
  await call(app, 'POST', base, owner.auth, { name: 'notes', fields: [{ name: 'about', type: 'relation', collection: 'authors', multiple: true }, { name: 'parent', type: 'relation', collection: 'notes' }] })
  const refused = await call(app, 'DELETE', `${base}/authors`, owner.auth)
  t.same([refused.status, refused.body.code, refused.body.details.fields.map((issue: { path: string }) => issue.path)], [409, 'APP_COLLECTION_REFERENCED', ['books.author', 'notes.about']])
  t.equal((await call(app, 'GET', `${base}/authors`, owner.auth)).status, 200, 'the collection is still there')
  t.equal((await call(app, 'DELETE', `${base}/notes`, owner.auth)).status, 200, 'a collection relating only to itself drops')
  t.equal((await call(app, 'DELETE', `${base}/books`, owner.auth)).status, 200)
  t.equal((await call(app, 'DELETE', `${base}/authors`, owner.auth)).status, 200, 'once nothing points at it, it drops')
})

t.test('switching project auth on defines _users, which admins may then extend but not break', async (t) => {
  const { app, owner, projectId, base } = await setup(t)
  t.equal((await call(app, 'GET', `${base}/_users`, owner.auth)).status, 404, 'no _users before auth is on')
  await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, owner.auth, { enabled: true })
  const users = await call(app, 'GET', `${base}/_users`, owner.auth)
  t.equal(users.status, 200)
  t.same(users.body.data.fields, [{ name: 'email', type: 'email', required: true, unique: true }, { name: 'emailVerified', type: 'boolean' }])
  t.same(Object.values(users.body.data.methods), Array(8).fill({ enabled: false, rule: null }))

  const fields = [...users.body.data.fields, { name: 'nickname', type: 'text' }]
  t.equal((await call(app, 'PUT', `${base}/_users`, owner.auth, { fields })).status, 200)
  const refusals: Array<[string, 'POST' | 'PUT' | 'DELETE', string, unknown, number, string]> = [
    ['create _users', 'POST', base, { name: '_users' }, 400, 'APP_RESERVED_COLLECTION'],
    ['remove email', 'PUT', `${base}/_users`, { fields: fields.slice(1) }, 400, 'APP_RESERVED_FIELD'],
    ['retype emailVerified', 'PUT', `${base}/_users`, { fields: [fields[0], { name: 'emailVerified', type: 'text' }] }, 400, 'APP_RESERVED_FIELD'],
    ['add passwordHash', 'PUT', `${base}/_users`, { fields: [...fields, { name: 'passwordHash', type: 'text' }] }, 400, 'APP_RESERVED_FIELD'],
    ['drop _users', 'DELETE', `${base}/_users`, undefined, 400, 'APP_RESERVED_COLLECTION']
  ]
  for (const [name, method, url, payload, status, code] of refusals) {
    const res = await call(app, method, url, owner.auth, payload)
    t.same([res.status, res.body.code], [status, code], name)
  }

  await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, owner.auth, { enabled: false })
  await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, owner.auth, { enabled: true })
  const again = await call(app, 'GET', `${base}/_users`, owner.auth)
  t.same(again.body.data.fields.map((f: { name: string }) => f.name), ['email', 'emailVerified', 'nickname'], 'switching on again clobbers nothing')
  const registered = await app.inject({ method: 'POST', url: `/api/p/${projectId}/auth/register`, payload: { email: 'end@example.com', password: 'long enough 1' } })
  t.equal(registered.statusCode, 201, 'end users still register')
  const twice = await app.inject({ method: 'POST', url: `/api/p/${projectId}/auth/register`, payload: { email: 'end@example.com', password: 'long enough 1' } })
  t.equal(twice.json().code, 'APP_EMAIL_TAKEN', 'on one unique email index')
  const emailIndexes = (await app.store.collection(`p_${projectId}__users`).listIndexes()).filter((index) => index.key.email !== undefined)
  t.equal(emailIndexes.length, 1)
})

t.test('dropping a collection removes its records; deleting the project removes every definition', async (t) => {
  const { app, owner, projectId, base } = await setup(t)
  await call(app, 'POST', base, owner.auth, posts)
  await call(app, 'POST', base, owner.auth, { name: 'tags' })
  await app.store.collection(`p_${projectId}_posts`).insertOne({ title: 'a record' })
  await app.store.collection(`p_${projectId}_tags`).insertOne({ name: 'a tag' })

  const dropped = await call(app, 'DELETE', `${base}/posts`, owner.auth)
  t.same([dropped.status, dropped.body], [200, { success: true, data: { id: 'posts', deleted: true } }])
  t.notOk((await app.store.listCollections()).includes(`p_${projectId}_posts`), 'the records collection is gone')
  t.equal((await call(app, 'GET', `${base}/posts`, owner.auth)).status, 404)
  t.same((await call(app, 'GET', base, owner.auth)).body.data.map((c: { name: string }) => c.name), ['tags'])
  const recreated = await call(app, 'POST', base, owner.auth, posts)
  t.equal(recreated.status, 201, 'the name can be used again')

  await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, owner.auth, { enabled: true })
  t.equal((await call(app, 'DELETE', `/api/projects/${projectId}`, owner.auth)).status, 200)
  t.equal(await app.store.collection('collection_definitions').countDocuments({ projectId }), 0, 'the project\'s definitions are gone')
  t.same((await app.store.listCollections()).filter((name) => name.startsWith(`p_${projectId}_`)), [])
  t.equal((await call(app, 'GET', base, owner.auth)).status, 404)
})
