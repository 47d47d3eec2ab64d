import t, { type Test } from 'tap'
import { buildTestApp, call, orgWithRoles } from '../../helper.js'

type Headers = Record<string, string>

async function setup (t: Test) {
  const app = await buildTestApp(t)
  const { owner, member, viewer, outsider, orgId } = await orgWithRoles(app)
  return { app, owner, member, viewer, outsider, orgId }
}

t.test('projects: who may create, see, change and delete', async (t) => {
  const { app, owner, member, viewer, outsider, orgId } = await setup(t)
  const created = await call(app, 'POST', '/api/projects', member.auth, { orgId, name: 'Web Shop' })
  t.equal(created.status, 201)
  t.match(created.body.data, { orgId, name: 'Web Shop', slug: 'web-shop', authEnabled: false, createdBy: member.id })
  const id = created.body.data.id as string

  const refusals: Array<[string, Headers, unknown, number, string]> = [
    ['viewer', viewer.auth, { orgId, name: 'Nope' }, 403, 'APP_FORBIDDEN'],
    ['outsider', outsider.auth, { orgId, name: 'Nope' }, 404, 'APP_ORGANIZATION_NOT_FOUND'],
    ['duplicate chosen slug', owner.auth, { orgId, name: 'Another', slug: 'web-shop' }, 409, 'APP_SLUG_TAKEN'],
    ['missing org', owner.auth, { name: 'No org' }, 400, 'APP_VALIDATION_FAILED'],
    ['unknown field', owner.auth, { orgId, name: 'X', color: 'red' }, 400, 'APP_VALIDATION_FAILED']
  ]
  for (const [name, headers, payload, status, code] of refusals) {
    const res = await call(app, 'POST', '/api/projects', headers, payload)
    t.same([res.status, res.body.code], [status, code], name)
  }

  const sameName = await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Web shop!' })
  t.match(sameName.body.data.slug, /^web-shop-[0-9a-f]{6}$/, 'a derived slug that is taken gets a suffix')
  await call(app, 'DELETE', `/api/projects/${sameName.body.data.id as string}`, owner.auth)
  const otherOrg = (await call(app, 'POST', '/api/organizations', outsider.auth, { name: 'Elsewhere' })).body.data.id as string
  const foreign = (await call(app, 'POST', '/api/projects', outsider.auth, { orgId: otherOrg, name: 'Theirs' })).body.data.id as string
  const listed = await call(app, 'GET', '/api/projects', viewer.auth)
  t.same(listed.body.data.map((p: { id: string }) => p.id), [id], 'only projects of the caller\'s organizations')
  t.same((await call(app, 'GET', `/api/projects?orgId=${otherOrg}`, viewer.auth)).body.data, [], 'filtering by a foreign organization shows nothing')
  t.equal((await call(app, 'GET', `/api/projects?orgId=${orgId}`, owner.auth)).body.data.length, 1)

  t.equal((await call(app, 'GET', `/api/projects/${id}`, viewer.auth)).status, 200)
  const hidden = await call(app, 'GET', `/api/projects/${foreign}`, viewer.auth)
  t.same([hidden.status, hidden.body.code], [404, 'APP_PROJECT_NOT_FOUND'], 'a foreign project is invisible')
  const viewerPut = await call(app, 'PUT', `/api/projects/${id}`, viewer.auth, { name: 'Mine now' })
  t.same([viewerPut.status, viewerPut.body.details], [403, { permission: 'project.update' }])
  const renamed = await call(app, 'PUT', `/api/projects/${id}`, member.auth, { name: 'Shop', description: 'Sells things' })
  t.match(renamed.body.data, { name: 'Shop', slug: 'web-shop', description: 'Sells things' })
  const memberDelete = await call(app, 'DELETE', `/api/projects/${id}`, member.auth)
  t.same([memberDelete.status, memberDelete.body.details], [403, { permission: 'project.delete' }], 'members do not delete projects')
  t.equal((await call(app, 'DELETE', `/api/projects/${foreign}`, owner.auth)).status, 404, 'nor can anyone delete a foreign one')
  t.equal((await call(app, 'GET', '/api/projects/not a valid id', owner.auth)).status, 400)
})

t.test('a project-scoped grant lets a viewer delete that project only', async (t) => {
  const { app, owner, viewer, orgId } = await setup(t)
  const one = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'One' })).body.data.id as string
  const two = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Two' })).body.data.id as string
  await call(app, 'PUT', `/api/organizations/${orgId}/members/${viewer.id}/permissions`, owner.auth, { permissions: [{ permission: 'project.delete', projectId: one }] })
  t.equal((await call(app, 'DELETE', `/api/projects/${two}`, viewer.auth)).status, 403)
  t.equal((await call(app, 'DELETE', `/api/projects/${one}`, viewer.auth)).status, 200)
  t.equal((await call(app, 'GET', `/api/projects/${one}`, owner.auth)).status, 404)
})

t.test('auth toggle, service tokens, and deletion of everything a project owns', async (t) => {
  const { app, owner, viewer, orgId } = await setup(t)
  const id = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Shop' })).body.data.id as string
  const toggle = `/api/projects/${id}/auth/toggle`
  t.equal((await call(app, 'POST', toggle, viewer.auth, {})).status, 403)
  const on = await call(app, 'POST', toggle, owner.auth, { enabled: true })
  t.equal(on.body.data.authEnabled, true)
  t.ok((await app.store.listCollections()).includes(`p_${id}__users`), 'switching on creates the _users collection')
  t.equal((await call(app, 'POST', toggle, owner.auth, { enabled: true })).body.data.authEnabled, true, 'idempotent')
  const registered = await app.inject({ method: 'POST', url: `/api/p/${id}/auth/register`, payload: { email: 'end@example.com', password: 'long enough 1' } })
  t.equal(registered.statusCode, 201)
  t.equal((await call(app, 'POST', toggle, owner.auth, {})).body.data.authEnabled, false, 'without a body it flips')
  t.equal(await app.store.collection(`p_${id}__users`).countDocuments({}), 1, 'switching off keeps the users')

  const tokens = `/api/projects/${id}/service-tokens`
  t.equal((await call(app, 'POST', tokens, viewer.auth, { name: 'ci' })).status, 403)
  const issued = await call(app, 'POST', tokens, owner.auth, { name: 'backend' })
  t.equal(issued.status, 201)
  t.match(issued.body.data.token, /^plinthsvc_[0-9A-Za-z]{36}$/)
  const listed = await call(app, 'GET', tokens, owner.auth)
  t.same(listed.body.data.map((k: { name: string }) => k.name), ['backend'])
  t.notOk('token' in listed.body.data[0], 'a listing never shows the token')
  t.notMatch(JSON.stringify(await app.store.collection('project_service_tokens').find({}).toArray()), issued.body.data.token, 'only a hash is stored')
  const past = await call(app, 'POST', tokens, owner.auth, { name: 'old', expiresAt: '2001-01-01T00:00:00Z' })
  t.same([past.status, past.body.code], [400, 'APP_INVALID_EXPIRY'])
  t.equal((await call(app, 'DELETE', `${tokens}/${issued.body.data.id as string}`, owner.auth)).status, 200)
  const again = await call(app, 'DELETE', `${tokens}/${issued.body.data.id as string}`, owner.auth)
  t.same([again.status, again.body.code], [404, 'APP_SERVICE_TOKEN_NOT_FOUND'])
  await call(app, 'POST', tokens, owner.auth, { name: 'kept until deletion' })

  await app.store.collection(`p_${id}_posts`).insertOne({ title: 'a record' })
  t.equal((await call(app, 'DELETE', `/api/projects/${id}`, owner.auth)).status, 200)
  t.same((await app.store.listCollections()).filter((name) => name.startsWith(`p_${id}_`)), [], 'every collection of the project is dropped')
  t.equal(await app.store.collection('project_service_tokens').countDocuments({}), 0, 'its service tokens are gone')
  t.equal((await call(app, 'GET', `/api/projects/${id}`, owner.auth)).status, 404)
  const login = await app.inject({ method: 'POST', url: `/api/p/${id}/auth/login`, payload: { email: 'end@example.com', password: 'long enough 1' } })
  t.equal(login.statusCode, 404, 'its end users cannot log in any more')
})
