import t from 'tap'
import { buildTestApp, call, orgWithRoles, registerEndUser } from '../../helper.js'

/**
 * "Who can see this?" (`POST …/collections/:name/access-check`): a method's
 * rule tried as an end user or nobody, by the data API's own rule code, under
 * the stored or draft settings; each answer checked against what the data API
 * itself answers that caller.
 */
t.test('who can see this: stored and draft rules tried as end users and nobody, matching the data API', async (t) => {
  const app = await buildTestApp(t)
  const { owner, outsider, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Notes' })).body.data.id as string
  await call(app, 'POST', `/api/projects/${projectId}/auth/toggle`, owner.auth, { enabled: true })
  const ann = await registerEndUser(app, projectId, 'ann@example.com')
  const bob = await registerEndUser(app, projectId, 'bob@example.com')
  const base = `/api/projects/${projectId}/collections`
  const readRule = { requireAuth: true, filter: { $or: [{ public: true }, { author: '@request.auth.id' }] }, deny: ['secret'] }
  const defined = await call(app, 'POST', base, owner.auth, {
    name: 'notes',
    fields: [{ name: 'title', type: 'text' }, { name: 'author', type: 'text' }, { name: 'public', type: 'boolean' }, { name: 'secret', type: 'text' }],
    methods: { list: { enabled: true, rule: readRule }, get: { enabled: true, rule: readRule }, create: { enabled: true, rule: { requireAuth: true, owner: 'author' } } }
  })
  t.equal(defined.status, 201, JSON.stringify(defined.body))
  const data = `/api/p/${projectId}/notes`
  const note = async (who: { auth: Record<string, string> }, title: string, isPublic: boolean) =>
    (await call(app, 'POST', data, who.auth, { title, public: isPublic, secret: 'x' })).body.data.id as string
  const annPrivate = await note(ann, 'ann private', false)
  await note(ann, 'ann public', true)
  const bobPrivate = await note(bob, 'bob private', false)
  await note(bob, 'bob public', true)
  const check = async (body: unknown, auth = owner.auth) => await call(app, 'POST', `${base}/notes/access-check`, auth, body)

  const asAnn = await check({ method: 'list', as: { kind: 'user', userId: ann.id } })
  t.equal(asAnn.status, 200, JSON.stringify(asAnn.body))
  t.match(asAnn.body.data, {
    allowed: true,
    refusal: null,
    rule: { filter: { $or: [{ public: true }, { author: ann.id }] }, deniedFields: ['secret'], owner: null },
    visible: { count: 3, capped: false }
  }, 'the filter with her id filled in, and three notes: hers and the public one of Bob')
  t.equal((await call(app, 'GET', data, ann.auth)).body.data.items.length, 3, 'as many as the data API lists her')

  const reach = async (recordId: string) => (await check({ method: 'get', as: { kind: 'user', userId: ann.id }, recordId })).body.data.record
  t.same(await reach(annPrivate), { id: annPrivate, reached: true })
  t.same(await reach(bobPrivate), { id: bobPrivate, reached: false }, 'Bob\'s private note is out of her reach')
  t.equal((await call(app, 'GET', `${data}/${bobPrivate}`, ann.auth)).status, 404, 'as the data API says')

  const nobody = await check({ method: 'list', as: { kind: 'anonymous' } })
  t.match(nobody.body.data, { allowed: false, refusal: { status: 401, code: 'APP_UNAUTHORIZED' }, rule: null, visible: null })
  t.equal((await call(app, 'GET', data, {})).status, 401, 'as the data API answers nobody')
  t.match((await check({ method: 'delete', as: { kind: 'user', userId: ann.id } })).body.data.refusal, { status: 405, code: 'APP_METHOD_DISABLED' })
  t.match((await check({ method: 'create', as: { kind: 'user', userId: bob.id } })).body.data, { allowed: true, rule: { owner: 'author' }, visible: null })

  // A draft is tried, never saved: an open list for everyone.
  const draft = await check({ method: 'list', as: { kind: 'anonymous' }, methods: { list: { enabled: true, rule: { requireAuth: false, deny: ['secret'] } } } })
  t.match(draft.body.data, { allowed: true, rule: { filter: null, deniedFields: ['secret'] }, visible: { count: 4 } })
  t.same((await call(app, 'GET', `${base}/notes`, owner.auth)).body.data.methods.list, { enabled: true, rule: readRule }, 'the stored rule is unchanged')
  const badDraft = await check({ method: 'list', as: { kind: 'anonymous' }, methods: { list: { enabled: true, rule: { requireAuth: false, filter: { $where: 'x' } } } } })
  t.equal(badDraft.status, 400)
  t.equal(badDraft.body.code, 'APP_INVALID_DEFINITION', 'a draft is validated as a save would be')

  // A disabled end user is refused as their token would be.
  const users = (await call(app, 'GET', `${base}/_users`, owner.auth)).body.data
  await call(app, 'PUT', `${base}/_users`, owner.auth, { fields: [...users.fields, { name: 'disabled', type: 'boolean' }], methods: { update: { enabled: true, rule: null } } })
  t.equal((await call(app, 'PUT', `/api/p/${projectId}/_users/${bob.id}`, owner.auth, { disabled: true })).status, 200)
  t.match((await check({ method: 'list', as: { kind: 'user', userId: bob.id } })).body.data.refusal, { status: 401, code: 'APP_INVALID_TOKEN' })

  const refusals: Array<[string, unknown, Record<string, string>, number, string, string?]> = [
    ['unknown end user', { method: 'list', as: { kind: 'user', userId: 'nobody' } }, owner.auth, 404, 'APP_USER_NOT_FOUND'],
    ['unknown record', { method: 'get', as: { kind: 'anonymous' }, recordId: 'nothere' }, owner.auth, 404, 'APP_RECORD_NOT_FOUND'],
    ['unknown method', { method: 'read', as: { kind: 'anonymous' } }, owner.auth, 400, 'APP_VALIDATION_FAILED', 'body/method'],
    ['user without id', { method: 'list', as: { kind: 'user' } }, owner.auth, 400, 'APP_VALIDATION_FAILED', 'body/as'],
    ['outsider', { method: 'list', as: { kind: 'anonymous' } }, outsider.auth, 404, 'APP_PROJECT_NOT_FOUND']
  ]
  for (const [name, body, auth, status, code, path] of refusals) {
    const res = await check(body, auth)
    t.same([res.status, res.body.code], [status, code], name)
    if (path !== undefined) t.match(JSON.stringify(res.body.details), path.split('/')[1], `${name}: names the field`)
  }
  t.equal((await call(app, 'POST', `${base}/nothere/access-check`, owner.auth, { method: 'list', as: { kind: 'anonymous' } })).body.code, 'APP_COLLECTION_NOT_FOUND')
  const pat = (await call(app, 'POST', '/api/auth/api-keys', owner.auth, { name: 'defs', scopes: ['collections.read'] })).body.data.token as string
  const scoped = await check({ method: 'list', as: { kind: 'anonymous' } }, { authorization: `Bearer ${pat}` })
  t.same([scoped.status, scoped.body.details], [403, { permission: 'records.read' }], 'the answer tells which records exist: records.read')
})
