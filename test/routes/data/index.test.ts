import t, { type Test } from 'tap'
import { buildTestApp, signUp, call, type HttpMethod, registerEndUser } from '../../helper.js'

type Method = HttpMethod

const ownerRule = { requireAuth: true, owner: 'author' }

/** A blog: project auth on, `posts` with an owner rule on every method, and two end users. */
async function blog (t: Test, methods: Record<string, unknown> = {}) {
  const app = await buildTestApp(t)
  const admin = await signUp(app, 'admin@example.com')
  const viewer = await signUp(app, 'viewer@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
  await call(app, 'POST', `/api/organizations/${orgId}/members`, admin.auth, { userId: viewer.id, role: 'viewer' })
  const projectId = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name: 'Blog' })).body.data.id as string
  await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, admin.auth, { enabled: true })
  const defined = await call(app, 'POST', `/api/projects/${projectId}/collections`, admin.auth, {
    name: 'posts',
    fields: [
      { name: 'title', type: 'text', required: true, max: 200 },
      { name: 'status', type: 'select', values: ['draft', 'published'], default: 'draft' },
      { name: 'views', type: 'number', min: 0, default: 0 },
      { name: 'author', type: 'text' },
      { name: 'publishedAt', type: 'date' },
      { name: 'meta', type: 'json' }
    ],
    indexes: [{ fields: ['status'] }, { fields: ['author', '-createdAt'] }],
    methods: {
      list: { enabled: true, rule: ownerRule },
      get: { enabled: true, rule: ownerRule },
      create: { enabled: true, rule: { ...ownerRule, readonly: ['views'] } },
      update: { enabled: true, rule: { ...ownerRule, check: { status: { $in: ['draft', 'published'] } } } },
      delete: { enabled: true, rule: ownerRule },
      ...methods
    }
  })
  if (defined.status !== 201) throw new Error(`setup: ${JSON.stringify(defined.body)}`)
  const endUser = async (email: string) => await registerEndUser(app, projectId, email)
  const ann = await endUser('ann@example.com')
  const bob = await endUser('bob@example.com')
  return { app, admin, viewer, projectId, posts: `/api/p/${projectId}/posts`, ann, bob }
}

t.test('owner rules: two end users never see or touch each other\'s records', async (t) => {
  const { app, posts, ann, bob } = await blog(t)
  const created = await call(app, 'POST', posts, ann.auth, { title: 'Ann 1', publishedAt: '2026-05-01T10:00:00Z', meta: { tags: ['x'] } })
  t.equal(created.status, 201)
  t.match(created.body.data, { title: 'Ann 1', author: ann.id, status: 'draft', views: 0, version: 1, publishedAt: '2026-05-01T10:00:00.000Z', meta: { tags: ['x'] } })
  t.equal(created.headers.etag, '"1"')
  const annPost = created.body.data.id as string
  await call(app, 'POST', posts, bob.auth, { title: 'Bob 1' })

  const forged = await call(app, 'POST', posts, bob.auth, { title: 'As Ann', author: ann.id })
  t.same([forged.status, forged.body.code, forged.body.details], [403, 'APP_RULE_CHECK_FAILED', { fields: [{ path: 'author', message: 'must hold your own user id' }] }], 'nobody writes someone else\'s id into the owner field')

  const annList = await call(app, 'GET', posts, ann.auth)
  t.same(annList.body.data.items.map((p: { title: string }) => p.title), ['Ann 1'], 'lists skip records outside the rule')
  for (const [method, payload] of [['GET'], ['PUT', { title: 'Hijacked' }], ['DELETE']] as Array<[Method, unknown?]>) {
    const res = await call(app, method, `${posts}/${annPost}`, bob.auth, payload)
    t.same([res.status, res.body.code], [404, 'APP_RECORD_NOT_FOUND'], `${method} of another user's record is a 404`)
  }
  t.equal((await call(app, 'GET', `${posts}/${annPost}`, ann.auth)).body.data.title, 'Ann 1', 'and nothing changed')

  for (const [method, url, payload] of [['GET', posts], ['POST', posts, { title: 'anon' }], ['GET', `${posts}/${annPost}`], ['PATCH', posts, { filter: { title: 'Ann 1' }, set: { title: 'x' } }]] as Array<[Method, string, unknown?]>) {
    const res = await call(app, method, url, {}, payload)
    t.same([res.status, res.body.code], [401, 'APP_UNAUTHORIZED'], `anonymous ${method} ${url} is refused`)
  }
  const readonly = await call(app, 'POST', posts, ann.auth, { title: 'Cheat', views: 1000 })
  t.same([readonly.status, readonly.body.code], [403, 'APP_READONLY_FIELD'])
})

t.test('list pages: each caller\'s mask over the same stored records, the JSON a get answers, changes seen at once', async (t) => {
  const { app, admin, posts, ann } = await blog(t, {
    list: { enabled: true, rule: { requireAuth: false, filter: { status: 'published' }, deny: ['meta'] } },
    update: { enabled: true, rule: ownerRule }
  })
  for (const title of ['One', 'Two', 'Three']) {
    const created = await call(app, 'POST', posts, ann.auth, { title, meta: { secret: title } })
    await call(app, 'PUT', `${posts}/${created.body.data.id as string}`, ann.auth, { status: 'published', publishedAt: '2026-05-01T10:00:00Z' })
  }
  const publicPage = async () => await call(app, 'GET', `${posts}?limit=2`, {})
  const adminPage = async () => await call(app, 'GET', `${posts}?limit=2`, admin.auth)
  const first = await publicPage()
  t.equal(first.status, 200)
  t.match(first.headers['content-type'], /^application\/json; charset=utf-8/)
  t.same(first.body.data.items.map((post: { title: string }) => post.title), ['One', 'Two'])
  t.ok(first.body.data.items.every((post: Record<string, unknown>) => !('meta' in post) && !('_id' in post)), 'the public rule denies meta; _id never shows')
  t.type(first.body.data.nextCursor, 'string')
  const full = await adminPage()
  t.same(full.body.data.items.map((post: { meta: unknown }) => post.meta), [{ secret: 'One' }, { secret: 'Two' }], 'an admin sees meta on the very records the public page just showed')
  for (const item of full.body.data.items as Array<{ id: string }>) {
    t.same(item, (await call(app, 'GET', `${posts}/${item.id}`, ann.auth)).body.data, 'a listed record is what get answers')
  }
  t.same((await publicPage()).body, first.body, 'the same page again')
  t.notOk('meta' in (await publicPage()).body.data.items[0], 'and the mask still holds after an unmasked read')
  const selected = await call(app, 'GET', `${posts}?limit=2&fields=title,meta`, admin.auth)
  t.same(selected.body.data.items.map((post: Record<string, unknown>) => Object.keys(post).sort()), [['id', 'meta', 'title'], ['id', 'meta', 'title']])
  const counted = await call(app, 'GET', `${posts}?limit=2&count=true`, {})
  t.equal(counted.body.data.total, 3)
  await call(app, 'PUT', `${posts}/${first.body.data.items[0].id as string}`, ann.auth, { title: 'Zero' })
  t.same((await publicPage()).body.data.items.map((post: { title: string }) => post.title), ['Zero', 'Two'], 'a change shows on the next page')
  const last = await call(app, 'GET', `${posts}?limit=2&cursor=${encodeURIComponent((await publicPage()).body.data.nextCursor as string)}`, {})
  t.same([last.body.data.items.map((post: { title: string }) => post.title), last.body.data.nextCursor], [['Three'], null])
})

t.test('validation of record bodies', async (t) => {
  const { app, posts, ann } = await blog(t)
  const cases: Array<[string, unknown, number, string]> = [
    ['missing required', { status: 'draft' }, 400, 'APP_FIELD_REQUIRED'],
    ['wrong type', { title: 42 }, 400, 'APP_INVALID_FIELD'],
    ['too long', { title: 'x'.repeat(201) }, 400, 'APP_INVALID_FIELD'],
    ['not in select', { title: 'a', status: 'archived' }, 400, 'APP_INVALID_FIELD'],
    ['below min', { title: 'a', views: -1 }, 400, 'APP_READONLY_FIELD'],
    ['bad date', { title: 'a', publishedAt: 'yesterday' }, 400, 'APP_INVALID_FIELD'],
    ['unknown field', { title: 'a', colour: 'red' }, 400, 'APP_UNKNOWN_FIELD'],
    ['system field', { title: 'a', id: 'mine' }, 403, 'APP_READONLY_FIELD'],
    ['operator-looking json key', { title: 'a', meta: { $where: 'x' } }, 400, 'APP_INVALID_DOCUMENT'],
    ['dotted json key', { title: 'a', meta: { list: [{ 'a.b': 1 }] } }, 400, 'APP_INVALID_DOCUMENT'],
    ['a lone surrogate', { title: 'a', meta: { note: '\ud800' } }, 400, 'APP_INVALID_DOCUMENT']
  ]
  for (const [name, payload, status, code] of cases) {
    const res = await call(app, 'POST', posts, ann.auth, payload)
    t.equal(res.body.code, code, name)
    t.equal(res.status, code === 'APP_READONLY_FIELD' ? 403 : status, `${name} status`)
  }
  t.equal((await call(app, 'GET', posts, ann.auth)).body.data.items.length, 0, 'nothing was stored')
})

t.test('disabled methods answer 405 even with a valid token; no rule means admins only', async (t) => {
  const { app, admin, viewer, posts, ann } = await blog(t, { delete: { enabled: false, rule: ownerRule }, get: { enabled: true, rule: null } })
  const id = (await call(app, 'POST', posts, ann.auth, { title: 'Mine' })).body.data.id as string
  const disabled = await call(app, 'DELETE', `${posts}/${id}`, ann.auth)
  t.same([disabled.status, disabled.body.code], [405, 'APP_METHOD_DISABLED'])
  t.equal((await call(app, 'DELETE', `${posts}/${id}`, admin.auth)).status, 405, 'even for an admin')
  const bulk = await call(app, 'DELETE', posts, ann.auth, { filter: { title: 'Mine' } })
  t.equal(bulk.status, 405, 'bulk delete needs delete enabled')

  const userGet = await call(app, 'GET', `${posts}/${id}`, ann.auth)
  t.same([userGet.status, userGet.body.code], [403, 'APP_FORBIDDEN'], 'an enabled method without a rule is not for end users')
  t.equal((await call(app, 'GET', `${posts}/${id}`, {})).status, 401)
  const adminGet = await call(app, 'GET', `${posts}/${id}`, admin.auth)
  t.equal(adminGet.body.data.title, 'Mine', 'a platform admin reads through it')
  t.equal((await call(app, 'GET', `${posts}/${id}`, viewer.auth)).status, 200, 'records.read is enough to read')
  const viewerWrite = await call(app, 'POST', posts, viewer.auth, { title: 'By viewer' })
  t.same([viewerWrite.status, viewerWrite.body.code], [403, 'APP_FORBIDDEN'], 'but writing needs records.write')
})

t.test('queries: filters, sort, keyset cursors, offset, fields, count', async (t) => {
  const { app, posts, ann } = await blog(t)
  for (let i = 0; i < 25; i++) {
    await call(app, 'POST', posts, ann.auth, { title: `Post ${String(i).padStart(2, '0')}`, status: i % 2 === 0 ? 'published' : 'draft', publishedAt: `2026-01-${String(i + 1).padStart(2, '0')}T00:00:00Z` })
  }
  const published = await call(app, 'GET', `${posts}?filter=${encodeURIComponent(JSON.stringify({ status: 'published' }))}&sort=-title&limit=5&count=true`, ann.auth)
  t.equal(published.body.data.total, 13)
  t.same(published.body.data.items.map((p: { title: string }) => p.title), ['Post 24', 'Post 22', 'Post 20', 'Post 18', 'Post 16'])

  const seen: string[] = []
  let cursor: string | null = null
  do {
    const page: { body: { data: { items: Array<{ title: string }>, nextCursor: string | null } } } = await call(app, 'GET', `${posts}?sort=publishedAt&limit=7${cursor === null ? '' : `&cursor=${cursor}`}`, ann.auth)
    seen.push(...page.body.data.items.map((p) => p.title))
    cursor = page.body.data.nextCursor
  } while (cursor !== null)
  t.same(seen, Array.from({ length: 25 }, (_, i) => `Post ${String(i).padStart(2, '0')}`), 'cursor pages cover everything once, in order')

  const dated = await call(app, 'POST', `${posts}/query`, ann.auth, { filter: { publishedAt: { $gte: '2026-01-20T00:00:00Z' }, title: { $regex: '^Post 2' } }, fields: 'title' })
  t.same(dated.body.data.items, [{ id: dated.body.data.items[0].id, title: 'Post 20' }, { id: dated.body.data.items[1].id, title: 'Post 21' }, { id: dated.body.data.items[2].id, title: 'Post 22' }, { id: dated.body.data.items[3].id, title: 'Post 23' }, { id: dated.body.data.items[4].id, title: 'Post 24' }].slice(0, dated.body.data.items.length))
  t.equal(dated.body.data.items.length, 5)
  const offset = await call(app, 'GET', `${posts}?sort=title&offset=23`, ann.auth)
  t.same(offset.body.data.items.map((p: { title: string }) => p.title), ['Post 23', 'Post 24'])

  const refusals: Array<[string, string, string]> = [
    ['$where', JSON.stringify({ $where: 'sleep(1)' }), 'filter.$where'],
    ['$expr', JSON.stringify({ $expr: { $gt: ['$views', 1] } }), 'filter.$expr'],
    ['unknown operator', JSON.stringify({ views: { $foo: 1 } }), 'filter.views.$foo'],
    ['internal field', JSON.stringify({ passwordHash: 'x' }), 'filter.passwordHash'],
    ['unknown field', JSON.stringify({ colour: 'red' }), 'filter.colour'],
    ['too many $in', JSON.stringify({ title: { $in: Array.from({ length: 101 }, (_, i) => String(i)) } }), 'filter.title.$in'],
    ['regex too long', JSON.stringify({ title: { $regex: 'a'.repeat(300) } }), 'filter.title.$regex'],
    ['not JSON', '{status:', 'filter'],
    ['nested in $or', JSON.stringify({ $or: [{ status: 'draft' }, { views: { $where: 1 } }] }), 'filter.$or[1].views.$where']
  ]
  for (const [name, filter, path] of refusals) {
    const res = await call(app, 'GET', `${posts}?filter=${encodeURIComponent(filter)}`, ann.auth)
    t.same([res.status, res.body.code, res.body.details?.fields?.[0]?.path], [400, 'APP_INVALID_FILTER', path], name)
  }
  t.equal((await call(app, 'GET', `${posts}?sort=meta`, ann.auth)).body.code, 'APP_INVALID_SORT')
  t.equal((await call(app, 'GET', `${posts}?cursor=forged.abc`, ann.auth)).body.code, 'APP_INVALID_CURSOR')
  t.equal((await call(app, 'GET', `${posts}?limit=500`, ann.auth)).status, 400)
  t.equal((await call(app, 'GET', `${posts}?fields=secret`, ann.auth)).body.code, 'APP_INVALID_FIELDS')
})

t.test('If-Match guards concurrent editors; updates change only the fields given', async (t) => {
  const { app, posts, ann } = await blog(t)
  const id = (await call(app, 'POST', posts, ann.auth, { title: 'Draft', meta: { a: 1 } })).body.data.id as string
  const first = await call(app, 'PUT', `${posts}/${id}`, { ...ann.auth, 'if-match': '"1"' }, { status: 'published' })
  t.match(first.body.data, { title: 'Draft', status: 'published', version: 2, meta: { a: 1 } })
  t.equal(first.headers.etag, '"2"')
  const stale = await call(app, 'PUT', `${posts}/${id}`, { ...ann.auth, 'if-match': '"1"' }, { title: 'Overwrite' })
  t.same([stale.status, stale.body.code], [412, 'APP_VERSION_MISMATCH'], 'a stale editor is stopped')
  t.equal((await call(app, 'GET', `${posts}/${id}`, ann.auth)).body.data.title, 'Draft')
  t.equal((await call(app, 'PUT', `${posts}/${id}`, { ...ann.auth, 'if-match': 'soon' }, { title: 'x' })).body.code, 'APP_INVALID_IF_MATCH')
  const anyVersion = await call(app, 'PUT', `${posts}/${id}`, { ...ann.auth, 'if-match': '*' }, { meta: { a: 2 } })
  t.same([anyVersion.status, anyVersion.body.data.version], [200, 3], '`*` matches whatever version is current, as in the tracker')
  const staleDelete = await call(app, 'DELETE', `${posts}/${id}`, { ...ann.auth, 'if-match': '1' })
  t.equal(staleDelete.status, 412)
  t.equal((await call(app, 'DELETE', `${posts}/${id}`, { ...ann.auth, 'if-match': '3' })).status, 200)
})

t.test('bulk update and delete: filter required, rules applied, dryRun and maxAffected', async (t) => {
  const { app, posts, ann, bob } = await blog(t)
  for (const title of ['a1', 'a2', 'a3']) await call(app, 'POST', posts, ann.auth, { title })
  await call(app, 'POST', posts, bob.auth, { title: 'b1' })

  const noFilter = await call(app, 'PATCH', posts, ann.auth, { filter: {}, set: { status: 'published' } })
  t.same([noFilter.status, noFilter.body.code], [400, 'APP_FILTER_REQUIRED'])
  t.equal((await call(app, 'DELETE', posts, ann.auth, { filter: {} })).body.code, 'APP_FILTER_REQUIRED')
  const dry = await call(app, 'PATCH', posts, ann.auth, { filter: { status: 'draft' }, set: { status: 'published' }, dryRun: true })
  t.same(dry.body.data, { matched: 3, modified: 0, dryRun: true }, 'the rule keeps Bob\'s draft out of Ann\'s bulk update')
  const guarded = await call(app, 'PATCH', posts, ann.auth, { filter: { status: 'draft' }, set: { status: 'published' }, maxAffected: 2 })
  t.same([guarded.status, guarded.body.code], [409, 'APP_TOO_MANY_AFFECTED'])
  const done = await call(app, 'PATCH', posts, ann.auth, { filter: { status: 'draft' }, set: { status: 'published' } })
  t.same(done.body.data, { matched: 3, modified: 3, dryRun: false })
  const bobs = (await call(app, 'GET', posts, bob.auth)).body.data.items
  t.same(bobs.map((p: { status: string, version: number }) => [p.status, p.version]), [['draft', 1]], 'Bob\'s record is untouched')

  const deleted = await call(app, 'DELETE', `${posts}?filter=${encodeURIComponent(JSON.stringify({ title: { $in: ['a1', 'a2', 'b1'] } }))}`, ann.auth)
  t.same(deleted.body.data, { matched: 2, deleted: 2, dryRun: false })
  t.equal((await call(app, 'GET', posts, bob.auth)).body.data.items.length, 1, 'Bob\'s record survived Ann\'s bulk delete')
})

t.test('a collection cannot be named after the auth routes', async (t) => {
  const { app, admin, projectId } = await blog(t)
  const res = await call(app, 'POST', `/api/projects/${projectId}/collections`, admin.auth, { name: 'auth' })
  t.same([res.status, res.body.code], [400, 'APP_RESERVED_COLLECTION'])
})

t.test('pages, records and profiles are sent as bytes: text beyond ASCII survives and Content-Length counts bytes', async (t) => {
  const { app, posts, projectId, ann } = await blog(t)
  const titles = ['Grüße aus Köln', '東京の朝', 'emoji 😀 and "quotes" \\ and \u2028 separators']
  for (const title of titles) t.equal((await call(app, 'POST', posts, ann.auth, { title })).status, 201)
  for (let round = 0; round < 2; round++) {
    // The second round is served from the shared records' cached bytes.
    const res = await app.inject({ method: 'GET', url: `${posts}?sort=createdAt`, headers: ann.auth })
    t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
    t.equal(Number(res.headers['content-length']), res.rawPayload.length, `round ${round}: Content-Length is the byte count`)
    t.same(res.json().data.items.map((item: { title: string }) => item.title), titles, `round ${round}: titles intact`)
  }
  const me = await app.inject({ method: 'GET', url: `/api/p/${projectId}/auth/me`, headers: ann.auth })
  t.equal(Number(me.headers['content-length']), me.rawPayload.length)
  t.match(me.json(), { success: true, data: { id: ann.id, email: 'ann@example.com' } })
})

t.test('a rule filter on @now shows only what is due, to anonymous callers too', async (t) => {
  const { app, admin, projectId } = await blog(t)
  const defined = await call(app, 'POST', `/api/projects/${projectId}/collections`, admin.auth, {
    name: 'events',
    fields: [{ name: 'title', type: 'text' }, { name: 'publishAt', type: 'date' }],
    methods: { list: { enabled: true, rule: { requireAuth: false, filter: { publishAt: { $lte: '@now' } } } }, create: { enabled: true, rule: null } }
  })
  t.equal(defined.status, 201)
  const events = `/api/p/${projectId}/events`
  for (const [title, publishAt] of [['past', '2020-01-01T00:00:00Z'], ['future', '2999-01-01T00:00:00Z']]) {
    t.equal((await call(app, 'POST', events, admin.auth, { title, publishAt })).status, 201)
  }
  const listed = await call(app, 'GET', events, {})
  t.equal(listed.status, 200)
  t.same(listed.body.data.items.map((item: { title: string }) => item.title), ['past'], 'the future event stays hidden')
  t.same((await call(app, 'GET', `${events}?filter=${encodeURIComponent(JSON.stringify({ title: 'future' }))}`, {})).body.data.items, [], 'even when asked for by name')
})
