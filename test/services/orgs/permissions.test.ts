import t, { type Test } from 'tap'
import { ManualClock } from '../../../services/clock.js'
import { PERMISSION_NAMES, ROLES } from '../../../services/orgs/catalogue.js'
import { MemberSets, PERMISSION_GROUPS, TEAMS } from '../../../services/orgs/member-sets.js'
import { membershipId, type MembershipRecord } from '../../../services/orgs/memberships.js'
import { Organizations } from '../../../services/orgs/organizations.js'
import { PermissionResolver, checkGrants, checkRoleCeiling, type OrgAccess } from '../../../services/orgs/permissions.js'
import { PlatformUsers } from '../../../services/identity/users.js'
import { openStore } from '../../../services/store/index.js'
import { AppError } from '../../../services/errors.js'
import { tempDir } from '../../helper.js'

async function setup (t: Test) {
  const store = await openStore({ dataDir: tempDir(t, 'plinth-orgs-'), mongodbUrl: null, mongodbDb: 'plinth' })
  t.teardown(async () => { await store.close() })
  const clock = new ManualClock()
  const unknownProjects = async (_orgId: string, ids: string[]) => ids.filter((id) => !id.startsWith('proj'))
  const teams = new MemberSets(store, { clock, kind: TEAMS, unknownProjects })
  const groups = new MemberSets(store, { clock, kind: PERMISSION_GROUPS, unknownProjects })
  const users = new PlatformUsers(store, clock)
  await users.init()
  const organizations = new Organizations(store, {
    clock, users, teams, groups, contents: { deleteAllInOrganization: async () => {}, unknownIn: unknownProjects }, schedulePurge: async () => {}
  })
  await Promise.all([teams.init(), groups.init(), organizations.init()])
  const resolver = new PermissionResolver(store, { teams, groups })
  const memberships = store.collection<MembershipRecord>('organization_members')
  const join = async (orgId: string, userId: string, role: MembershipRecord['role'], grants: MembershipRecord['grants'] = []) => {
    await memberships.insertOne({ _id: membershipId(orgId, userId), orgId, userId, role, grants, createdAt: clock.now(), updatedAt: clock.now() })
  }
  return { store, clock, teams, groups, users, organizations, resolver, join }
}

function refused (fn: () => unknown): AppError {
  try { fn() } catch (error) { if (error instanceof AppError) return error; throw error }
  throw new Error('expected a refusal')
}

const actor = (permissions: string[], role: OrgAccess['role'] = 'member'): OrgAccess =>
  ({ orgId: 'o1', userId: 'u-actor', role, projectId: null, permissions: new Set(permissions) as OrgAccess['permissions'], scoped: false })

t.test('the resolver unions role, grants, teams and groups, scoped per project and by PAT scopes', async (t) => {
  const { resolver, join, teams, groups } = await setup(t)
  await join('o1', 'v', 'viewer', [{ permission: 'git.write', projectId: null }, { permission: 'project.delete', projectId: 'proj1' }])
  await join('o1', 'admin', 'admin')
  const owner = actor([...PERMISSION_NAMES], 'owner')
  await teams.create(owner, { name: 'Ops', members: ['v'], permissions: [{ permission: 'dns.manage' }] })
  await groups.create(owner, { name: 'Trackers', members: ['v'], permissions: [{ permission: 'tracker.admin', projectId: 'proj2' }] })

  const orgWide = await resolver.access('o1', { userId: 'v' })
  t.same([...(orgWide?.permissions ?? [])].sort(), [...ROLES.viewer.permissions, 'git.write', 'dns.manage'].sort())
  const inProj1 = await resolver.access('o1', { userId: 'v' }, 'proj1')
  t.ok(inProj1?.permissions.has('project.delete'))
  t.notOk(inProj1?.permissions.has('tracker.admin'), 'a grant for proj2 does not apply to proj1')
  t.ok((await resolver.access('o1', { userId: 'v' }, 'proj2'))?.permissions.has('tracker.admin'))
  t.equal(await resolver.access('o1', { userId: 'stranger' }), null, 'an outsider gets nothing at all')
  t.equal(await resolver.access('o2', { userId: 'v' }), null, 'membership is per organization')

  const scoped = await resolver.access('o1', { userId: 'admin', scopes: ['git.read', 'org.delete'] })
  t.same([...(scoped?.permissions ?? [])], ['git.read'], 'scopes narrow and never add')
  t.equal(scoped?.scoped, true)
  const explained = await resolver.explain('o1', { userId: 'v' }, null)
  t.ok(explained.sources.some((s) => s.permission === 'dns.manage' && s.via === 'team' && s.setName === 'Ops'))
  t.ok(explained.sources.some((s) => s.permission === 'git.write' && s.via === 'grant'))
  const missing = await resolver.explain('o1', { userId: 'stranger' }, null).catch((error: AppError) => error)
  t.equal((missing as AppError).code, 'APP_MEMBER_NOT_FOUND')
})

t.test('grants and role changes never exceed what the actor holds', async (t) => {
  const member = actor(ROLES.member.permissions as unknown as string[])
  t.same(checkGrants(member, [{ permission: 'git.write' }, { permission: 'git.write', projectId: null }]), [{ permission: 'git.write', projectId: null }], 'deduplicated')
  t.equal(refused(() => checkGrants(member, [{ permission: 'org.delete' }])).code, 'APP_CANNOT_GRANT')
  t.equal(refused(() => checkGrants(member, [{ permission: 'org.fly' }])).code, 'APP_UNKNOWN_PERMISSION')
  t.equal(refused(() => checkRoleCeiling(member, 'admin', 'grant')).code, 'APP_ROLE_CEILING')
  t.equal(refused(() => checkRoleCeiling(actor(ROLES.admin.permissions as unknown as string[], 'admin'), 'owner', 'grant')).code, 'APP_OWNER_ONLY')
  checkRoleCeiling(member, 'viewer', 'grant')
  checkRoleCeiling(actor([...PERMISSION_NAMES], 'owner'), 'owner', 'grant')
  t.pass('holding a role\'s permissions is enough to hand it out')
})

t.test('two owners demoting each other at once leave exactly one owner', async (t) => {
  const { organizations, users, resolver } = await setup(t)
  const a = await users.register({ email: 'a@example.com', password: 'correct horse battery', name: 'A' })
  const b = await users.register({ email: 'b@example.com', password: 'correct horse battery', name: 'B' })
  const org = await organizations.create({ userId: a.id }, { name: 'Race' })
  const asA = await resolver.access(org.id, { userId: a.id }) as OrgAccess
  await organizations.addMember(asA, { userId: b.id, role: 'owner' })
  const asB = await resolver.access(org.id, { userId: b.id }) as OrgAccess
  const outcomes = await Promise.allSettled([
    organizations.changeRole(asA, b.id, 'admin'),
    organizations.changeRole(asB, a.id, 'admin')
  ])
  const owners = (await organizations.listMembers(org.id)).filter((m) => m.role === 'owner')
  t.equal(owners.length, 1, 'one owner remains')
  t.equal(outcomes.filter((o) => o.status === 'fulfilled').length, 1, 'one demotion landed')
  const failure = outcomes.find((o) => o.status === 'rejected') as PromiseRejectedResult
  t.equal((failure.reason as AppError).code, 'APP_LAST_OWNER')
  const record = await organizations.records.findOne({ _id: org.id })
  t.equal(record?.ownerCount, 1, 'the owner count matches the members')
})
