import t, { type Test } from 'tap'
import { buildTestApp, signUp, call } from '../../helper.js'

type Headers = Record<string, string>

async function setup (t: Test) {
  const app = await buildTestApp(t)
  const owner = await signUp(app, 'owner@example.com')
  const admin = await signUp(app, 'admin@example.com')
  const member = await signUp(app, 'member@example.com')
  const viewer = await signUp(app, 'viewer@example.com')
  const outsider = await signUp(app, 'outsider@example.com')
  const created = await call(app, 'POST', '/api/organizations', owner.auth, { name: 'Acme Labs' })
  const orgId = created.body.data.id as string
  const org = `/api/organizations/${orgId}`
  for (const [who, role] of [[admin, 'admin'], [member, 'member'], [viewer, 'viewer']] as const) {
    // The admin is added by a differently written email: lookups normalize it.
    const added = await call(app, 'POST', `${org}/members`, owner.auth, { email: who === admin ? ' ADMIN@example.com ' : `${role}@example.com`, role })
    if (added.status !== 201) throw new Error(`setup: ${JSON.stringify(added.body)}`)
  }
  return { app, owner, admin, member, viewer, outsider, orgId, org, created }
}

t.test('organizations: create, list, get, update; outsiders learn nothing', async (t) => {
  const { app, owner, viewer, outsider, orgId, org, created } = await setup(t)
  t.equal(created.status, 201)
  t.match(created.body.data, { name: 'Acme Labs', slug: 'acme-labs', createdBy: owner.id })

  const listed = await call(app, 'GET', '/api/organizations', viewer.auth)
  t.same(listed.body.data.map((o: { id: string, role: string }) => [o.id, o.role]), [[orgId, 'viewer']], 'listed with the caller\'s role')
  t.same((await call(app, 'GET', '/api/organizations', outsider.auth)).body.data, [], 'an outsider lists nothing')

  const slugTaken = await call(app, 'POST', '/api/organizations', outsider.auth, { name: 'Other', slug: 'acme-labs' })
  t.equal(slugTaken.status, 409)
  t.equal(slugTaken.body.code, 'APP_SLUG_TAKEN')

  for (const [method, url, payload] of [
    ['GET', org], ['PUT', org, { name: 'x' }], ['DELETE', org], ['GET', `${org}/members`], ['GET', `${org}/teams`],
    ['GET', `${org}/me/permissions`], ['POST', `${org}/members`, { email: 'viewer@example.com', role: 'owner' }]
  ] as const) {
    const res = await call(app, method, url, outsider.auth, payload)
    t.equal(res.status, 404, `${method} ${url} as an outsider`)
    t.equal(res.body.code, 'APP_ORGANIZATION_NOT_FOUND')
  }
  const unknown = await call(app, 'GET', '/api/organizations/00000000000000000000', owner.auth)
  t.same([unknown.status, unknown.body.code], [404, 'APP_ORGANIZATION_NOT_FOUND'], 'a missing organization looks the same as a foreign one')

  t.equal((await call(app, 'GET', org, viewer.auth)).status, 200, 'a viewer reads')
  const viewerUpdate = await call(app, 'PUT', org, viewer.auth, { name: 'Hacked' })
  t.same([viewerUpdate.status, viewerUpdate.body.code, viewerUpdate.body.details], [403, 'APP_FORBIDDEN', { permission: 'org.update' }], 'a viewer cannot write')
  const updated = await call(app, 'PUT', org, owner.auth, { name: 'Acme', description: 'Rockets' })
  t.match(updated.body.data, { name: 'Acme', slug: 'acme-labs', description: 'Rockets' })
  t.equal((await call(app, 'PUT', org, owner.auth, {})).status, 400, 'an empty update is refused')
  t.equal((await call(app, 'PUT', org, owner.auth, { slug: 'Not A Slug' })).status, 400)

  const anonymous = await app.inject({ url: '/api/organizations' })
  t.equal(anonymous.statusCode, 401)
})

t.test('members: roles, owner rules and the last owner', async (t) => {
  const { app, owner, admin, member, viewer, outsider, org } = await setup(t)
  const members = (await call(app, 'GET', `${org}/members`, viewer.auth)).body.data as Array<{ id: string, email: string, role: string }>
  t.same(members.map((m) => [m.email, m.role]), [['owner@example.com', 'owner'], ['admin@example.com', 'admin'], ['member@example.com', 'member'], ['viewer@example.com', 'viewer']])

  const cases: Array<[string, Headers, unknown, number, string]> = [
    ['duplicate', owner.auth, { userId: viewer.id, role: 'member' }, 409, 'APP_ALREADY_MEMBER'],
    ['unknown user', owner.auth, { email: 'nobody@example.com', role: 'member' }, 404, 'APP_USER_NOT_FOUND'],
    ['both email and userId', owner.auth, { email: 'outsider@example.com', userId: outsider.id, role: 'member' }, 400, 'APP_INVALID_MEMBER'],
    ['neither', owner.auth, { role: 'member' }, 400, 'APP_INVALID_MEMBER'],
    ['bad role', owner.auth, { userId: outsider.id, role: 'superuser' }, 400, 'APP_VALIDATION_FAILED'],
    ['admin making an owner', admin.auth, { userId: outsider.id, role: 'owner' }, 403, 'APP_OWNER_ONLY'],
    ['member adding', member.auth, { userId: outsider.id, role: 'viewer' }, 403, 'APP_FORBIDDEN'],
    ['admin granting what it lacks', admin.auth, { userId: outsider.id, role: 'viewer', permissions: [{ permission: 'org.delete' }] }, 403, 'APP_CANNOT_GRANT'],
    ['unknown permission', owner.auth, { userId: outsider.id, role: 'viewer', permissions: [{ permission: 'org.fly' }] }, 400, 'APP_UNKNOWN_PERMISSION']
  ]
  for (const [name, headers, payload, status, code] of cases) {
    const res = await call(app, 'POST', `${org}/members`, headers, payload)
    t.same([res.status, res.body.code], [status, code], name)
  }
  t.equal((await call(app, 'GET', `${org}/members`, owner.auth)).body.data.length, 4, 'no refused add left a member behind')

  const lastDemote = await call(app, 'PUT', `${org}/members/${owner.id}`, owner.auth, { role: 'admin' })
  t.same([lastDemote.status, lastDemote.body.code], [409, 'APP_LAST_OWNER'], 'the last owner cannot be demoted')
  const lastRemove = await call(app, 'DELETE', `${org}/members/${owner.id}`, owner.auth)
  t.same([lastRemove.status, lastRemove.body.code], [409, 'APP_LAST_OWNER'], 'nor removed, nor leave')
  const adminOnOwner = await call(app, 'DELETE', `${org}/members/${owner.id}`, admin.auth)
  t.same([adminOnOwner.status, adminOnOwner.body.code], [403, 'APP_OWNER_ONLY'])

  const promoted = await call(app, 'PUT', `${org}/members/${admin.id}`, owner.auth, { role: 'owner' })
  t.equal(promoted.body.data.role, 'owner')
  const demoted = await call(app, 'PUT', `${org}/members/${owner.id}`, admin.auth, { role: 'member' })
  t.equal(demoted.body.data.role, 'member', 'with two owners, one may step down')
  const nowLast = await call(app, 'DELETE', `${org}/members/${admin.id}`, admin.auth)
  t.equal(nowLast.body.code, 'APP_LAST_OWNER', 'the new sole owner is the last owner')

  const leave = await call(app, 'DELETE', `${org}/members/${viewer.id}`, viewer.auth)
  t.equal(leave.status, 200, 'a member may leave without any permission')
  t.equal((await call(app, 'GET', org, viewer.auth)).status, 404, 'and then learns nothing')
  const memberRemoves = await call(app, 'DELETE', `${org}/members/${owner.id}`, member.auth)
  t.equal(memberRemoves.status, 403, 'but cannot remove others')
  const missing = await call(app, 'PUT', `${org}/members/${outsider.id}`, admin.auth, { role: 'viewer' })
  t.same([missing.status, missing.body.code], [404, 'APP_MEMBER_NOT_FOUND'])
})

t.test('grants, teams and groups add up in effective permissions, optionally per project', async (t) => {
  const { app, owner, admin, member, viewer, outsider, orgId, org } = await setup(t)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Scoped' })).body.data.id as string
  const foreign = await call(app, 'PUT', `${org}/members/${viewer.id}/permissions`, admin.auth, { permissions: [{ permission: 'git.write', projectId: '00000000000000000000' }] })
  t.same([foreign.status, foreign.body.code], [400, 'APP_UNKNOWN_PROJECT'], 'a grant names a project of this organization')

  const grants = await call(app, 'PUT', `${org}/members/${viewer.id}/permissions`, admin.auth, {
    permissions: [{ permission: 'project.delete', projectId }, { permission: 'git.write' }, { permission: 'git.write' }]
  })
  t.same(grants.body.data, [{ permission: 'project.delete', projectId }, { permission: 'git.write', projectId: null }], 'stored deduplicated')
  t.same((await call(app, 'GET', `${org}/members/${viewer.id}/permissions`, member.auth)).body.data, grants.body.data)
  t.equal((await call(app, 'PUT', `${org}/members/${viewer.id}/permissions`, member.auth, { permissions: [] })).status, 403)

  const team = await call(app, 'POST', `${org}/teams`, admin.auth, { name: 'Ops', members: [viewer.id], permissions: [{ permission: 'dns.manage' }] })
  t.equal(team.status, 201)
  t.match(team.body.data, { name: 'Ops', slug: 'ops', members: [viewer.id], permissions: [{ permission: 'dns.manage', projectId: null }] })
  const group = await call(app, 'POST', `${org}/permission-groups`, admin.auth, { name: 'Trackers', permissions: [{ permission: 'tracker.admin', projectId }] })
  t.equal(group.status, 201)
  const joined = await call(app, 'PUT', `${org}/permission-groups/${group.body.data.id}/members/${viewer.id}`, admin.auth)
  t.same(joined.body.data.members, [viewer.id])

  const orgWide = (await call(app, 'GET', `${org}/members/${viewer.id}/effective-permissions`, admin.auth)).body.data
  t.ok(orgWide.permissions.includes('git.write') && orgWide.permissions.includes('dns.manage'))
  t.notOk(orgWide.permissions.includes('project.delete'), 'a project grant does not apply across the organization')
  t.notOk(orgWide.permissions.includes('tracker.admin'))
  t.ok(orgWide.sources.some((s: { permission: string, via: string, setName?: string }) => s.permission === 'dns.manage' && s.via === 'team' && s.setName === 'Ops'))

  const forProject = (await call(app, 'GET', `${org}/me/permissions?projectId=${projectId}`, viewer.auth)).body.data
  t.ok(forProject.permissions.includes('project.delete') && forProject.permissions.includes('tracker.admin'), 'project-scoped grants apply to that project')
  t.ok(forProject.sources.some((s: { via: string, permission: string }) => s.via === 'group' && s.permission === 'tracker.admin'))

  const notSelf = await call(app, 'GET', `${org}/members/${admin.id}/effective-permissions`, viewer.auth)
  t.equal(notSelf.status, 403, 'a viewer sees only its own effective permissions')

  const stranger = await call(app, 'POST', `${org}/teams`, admin.auth, { name: 'Ghosts', members: [outsider.id] })
  t.same([stranger.status, stranger.body.code], [400, 'APP_NOT_A_MEMBER'], 'only members join teams')
  const taken = await call(app, 'POST', `${org}/teams`, admin.auth, { name: 'ops' })
  t.same([taken.status, taken.body.code], [409, 'APP_TEAM_NAME_TAKEN'])
  const overreach = await call(app, 'POST', `${org}/permission-groups`, admin.auth, { name: 'Doom', permissions: [{ permission: 'org.delete' }] })
  t.same([overreach.status, overreach.body.code], [403, 'APP_CANNOT_GRANT'], 'a group cannot carry rights its creator lacks')
  t.equal((await call(app, 'POST', `${org}/teams`, member.auth, { name: 'Mine' })).status, 403, 'members cannot create teams')

  const teamUrl = `${org}/teams/${team.body.data.id}`
  t.equal((await call(app, 'GET', teamUrl, viewer.auth)).body.data.name, 'Ops')
  const renamed = await call(app, 'PUT', teamUrl, admin.auth, { name: 'Platform Ops', members: [viewer.id, member.id] })
  t.match(renamed.body.data, { name: 'Platform Ops', slug: 'platform-ops', members: [viewer.id, member.id] })
  const out = await call(app, 'DELETE', `${teamUrl}/members/${viewer.id}`, admin.auth)
  t.same(out.body.data.members, [member.id])
  t.equal((await call(app, 'DELETE', `${teamUrl}/members/${viewer.id}`, admin.auth)).status, 404, 'removing twice')
  const afterTeam = (await call(app, 'GET', `${org}/me/permissions`, viewer.auth)).body.data
  t.notOk(afterTeam.permissions.includes('dns.manage'), 'leaving the team takes its grants away')
  t.equal((await call(app, 'DELETE', teamUrl, admin.auth)).status, 200)
  t.equal((await call(app, 'GET', teamUrl, admin.auth)).body.code, 'APP_TEAM_NOT_FOUND')

  const removed = await call(app, 'DELETE', `${org}/members/${viewer.id}`, owner.auth)
  t.equal(removed.status, 200)
  const groupAfter = await call(app, 'GET', `${org}/permission-groups/${group.body.data.id}`, owner.auth)
  t.same(groupAfter.body.data.members, [], 'a removed member leaves its groups too')

  t.equal((await call(app, 'DELETE', `/api/projects/${projectId}`, owner.auth)).status, 200)
  const groupGrants = (await call(app, 'GET', `${org}/permission-groups/${group.body.data.id}`, owner.auth)).body.data.permissions
  t.same(groupGrants, [], 'grants scoped to a deleted project go with it')
  t.equal(orgId.length > 0, true)
})

t.test('nobody gains rights through roles, teams, groups or scoped tokens', async (t) => {
  const { app, owner, admin, member, viewer, outsider, org } = await setup(t)
  const doom = (await call(app, 'POST', `${org}/teams`, owner.auth, { name: 'Owners', permissions: [{ permission: 'org.delete' }] })).body.data.id as string
  const join = await call(app, 'PUT', `${org}/teams/${doom}/members/${admin.id}`, admin.auth)
  t.same([join.status, join.body.code], [403, 'APP_CANNOT_GRANT'], 'an admin cannot join a team carrying rights it lacks')
  const sneak = await call(app, 'PUT', `${org}/teams/${doom}`, admin.auth, { members: [admin.id] })
  t.same([sneak.status, sneak.body.code], [403, 'APP_CANNOT_GRANT'], 'nor by rewriting its members')
  t.equal((await call(app, 'DELETE', org, admin.auth)).status, 403, 'so the organization stays')

  await call(app, 'PUT', `${org}/members/${viewer.id}/permissions`, owner.auth, { permissions: [{ permission: 'org.members.manage' }] })
  const selfPromote = await call(app, 'PUT', `${org}/members/${viewer.id}`, viewer.auth, { role: 'admin' })
  t.same([selfPromote.status, selfPromote.body.code], [403, 'APP_ROLE_CEILING'], 'a viewer with one grant cannot make itself admin')
  const demoteAdmin = await call(app, 'PUT', `${org}/members/${admin.id}`, viewer.auth, { role: 'viewer' })
  t.same([demoteAdmin.status, demoteAdmin.body.code], [403, 'APP_ROLE_CEILING'], 'nor demote an admin')
  t.equal((await call(app, 'DELETE', `${org}/members/${member.id}`, viewer.auth)).body.code, 'APP_ROLE_CEILING', 'nor remove a member above it')

  const scopedPat = (await call(app, 'POST', '/api/auth/api-keys', owner.auth, { name: 'members only', scopes: ['org.members.manage', 'org.read'] })).body.data.token as string
  const viaPat = await call(app, 'POST', `${org}/members`, { authorization: `Bearer ${scopedPat}` }, { userId: outsider.id, role: 'owner' })
  t.same([viaPat.status, viaPat.body.code], [403, 'APP_OWNER_ONLY'], 'an owner\'s scoped PAT cannot make owners')
  const gitPat = (await call(app, 'POST', '/api/auth/api-keys', owner.auth, { name: 'git', scopes: ['git.read'] })).body.data.token as string
  const selfRemove = await call(app, 'DELETE', `${org}/members/${owner.id}`, { authorization: `Bearer ${gitPat}` })
  t.equal(selfRemove.status, 403, 'a scoped PAT cannot act on its owner\'s membership beyond its scopes')
  const orgByPat = await call(app, 'POST', '/api/organizations', { authorization: `Bearer ${gitPat}` }, { name: 'Via PAT' })
  t.same([orgByPat.status, orgByPat.body.code], [403, 'APP_SCOPED_TOKEN'], 'a scoped PAT cannot create organizations')
  t.equal((await call(app, 'GET', `${org}/members`, owner.auth)).body.data.length, 4, 'membership unchanged')
})

t.test('slugs derived from names never collide by accident', async (t) => {
  const app = await buildTestApp(t)
  const user = await signUp(app, 'slugs@example.com')
  const first = await call(app, 'POST', '/api/organizations', user.auth, { name: '中文' })
  const second = await call(app, 'POST', '/api/organizations', user.auth, { name: '日本語' })
  const third = await call(app, 'POST', '/api/organizations', user.auth, { name: 'Acme' })
  const fourth = await call(app, 'POST', '/api/organizations', user.auth, { name: 'ACME!' })
  t.same([first.status, second.status, third.status, fourth.status], [201, 201, 201, 201])
  t.match(first.body.data.slug, /^org-[0-9a-f]{6}$/)
  t.not(first.body.data.slug, second.body.data.slug)
  t.equal(third.body.data.slug, 'acme')
  t.match(fourth.body.data.slug, /^acme-[0-9a-f]{6}$/)
  const chosen = await call(app, 'POST', '/api/organizations', user.auth, { name: 'Other', slug: 'acme' })
  t.same([chosen.status, chosen.body.code], [409, 'APP_SLUG_TAKEN'], 'a slug the caller chose is never changed silently')
})

t.test('PAT scopes narrow what a token may do; the catalogue is published', async (t) => {
  const { app, owner, org } = await setup(t)
  const pat = await call(app, 'POST', '/api/auth/api-keys', owner.auth, { name: 'ci', scopes: ['org.read', 'git.read'] })
  t.equal(pat.status, 201)
  const asPat = { authorization: `Bearer ${pat.body.data.token}` }
  const mine = (await call(app, 'GET', `${org}/me/permissions`, asPat)).body.data
  t.same(mine.permissions, ['org.read', 'git.read'])
  t.equal((await call(app, 'GET', org, asPat)).status, 200)
  const denied = await call(app, 'PUT', org, asPat, { name: 'Scoped' })
  t.same([denied.status, denied.body.code], [403, 'APP_FORBIDDEN'], 'an owner\'s PAT without org.update cannot rename')
  const badScope = await call(app, 'POST', '/api/auth/api-keys', owner.auth, { name: 'x', scopes: ['git.fly'] })
  t.same([badScope.status, badScope.body.code], [400, 'APP_UNKNOWN_PERMISSION'])

  const catalogue = (await call(app, 'GET', '/api/permissions', owner.auth)).body.data
  for (const name of ['tracker.read', 'tracker.write', 'tracker.admin', 'hosting.deploy', 'git.write', 'dns.manage', 'assistant.use', 'llm.manage']) {
    t.ok(catalogue.permissions.some((p: { name: string }) => p.name === name), `catalogue names ${name}`)
  }
  const viewerRole = catalogue.roles.find((r: { name: string }) => r.name === 'viewer')
  t.notOk(viewerRole.permissions.some((p: string) => /\.(update|delete|manage|write|deploy|admin|create)$/.test(p)), 'the viewer role only reads')
})

t.test('deleting an organization removes what it owns; only owners may', async (t) => {
  const { app, owner, admin, org, orgId } = await setup(t)
  await call(app, 'POST', `${org}/teams`, owner.auth, { name: 'Ops' })
  const project = await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Shop' })
  t.equal(project.status, 201)
  await call(app, 'POST', `/api/projects/${project.body.data.id as string}/auth/toggle`, owner.auth, { enabled: true })
  await call(app, 'POST', `/api/projects/${project.body.data.id as string}/service-tokens`, owner.auth, { name: 'server' })
  await call(app, 'POST', `${org}/permission-groups`, owner.auth, { name: 'Readers', permissions: [{ permission: 'git.read' }] })
  const adminDelete = await call(app, 'DELETE', org, admin.auth)
  t.same([adminDelete.status, adminDelete.body.details], [403, { permission: 'org.delete' }])

  t.equal((await call(app, 'DELETE', org, owner.auth)).status, 200)
  t.equal((await call(app, 'GET', org, owner.auth)).status, 404)
  t.same((await call(app, 'GET', '/api/organizations', owner.auth)).body.data, [])
  t.equal((await call(app, 'GET', `/api/projects/${project.body.data.id as string}`, owner.auth)).status, 404)
  for (const collection of ['organizations', 'organization_members', 'organization_teams', 'organization_permission_groups', 'projects', 'project_service_tokens']) {
    t.equal(await app.store.collection(collection).countDocuments({}), 0, `${collection} left empty`)
  }
  t.same((await app.store.listCollections()).filter((name) => name.startsWith('p_')), [], 'and every project collection')
  const purge = await app.store.collection('_jobs').find({ type: 'organization.purge' }).toArray()
  t.equal(purge.length, 1, 'a purge job stands by in case the deletion had been interrupted')
  t.equal((await call(app, 'DELETE', org, owner.auth)).status, 404, 'deleting twice')
})
