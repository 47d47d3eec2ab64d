import t, { type Test } from 'tap'
import { ManualClock } from '../../../services/platform/clock.js'
import { PERMISSION_NAMES, ROLES } from '../../../services/orgs/catalogue.js'
import type { OrgAccess } from '../../../services/orgs/resolver.js'
import type { AppError } from '../../../services/platform/errors.js'
import { orgsOn, tempStore } from '../../helper.js'

async function setup (t: Test) {
  const store = await tempStore(t, 'plinth-orgs-')
  const clock = new ManualClock()
  return { store, clock, ...await orgsOn(store, clock) }
}

t.test('the resolver unions role, grants, teams and groups, scoped per project and by PAT scopes', async (t) => {
  const { resolver, join, teams, groups } = await setup(t)
  await join('o1', 'v', 'viewer', [{ permission: 'git.write', projectId: null }, { permission: 'project.delete', projectId: 'proj1' }])
  await join('o1', 'admin', 'admin')
  const owner: OrgAccess = { orgId: 'o1', userId: 'u-owner', role: 'owner', projectId: null, permissions: new Set(PERMISSION_NAMES), scoped: false }
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

t.test('members of one role with nothing added share its permissions, which no caller can change; a grant, a team or a scope gets its own', async (t) => {
  const { resolver, join, teams } = await setup(t)
  await join('o1', 'a', 'member')
  await join('o1', 'b', 'member')
  await join('o1', 'c', 'member', [{ permission: 'dns.manage', projectId: null }])
  await join('o1', 'd', 'member')
  const owner: OrgAccess = { orgId: 'o1', userId: 'u-owner', role: 'owner', projectId: null, permissions: new Set(PERMISSION_NAMES), scoped: false }
  await teams.create(owner, { name: 'Ops', members: ['d'], permissions: [{ permission: 'dns.manage' }] })
  const a = await resolver.access('o1', { userId: 'a' })
  const b = await resolver.access('o1', { userId: 'b' })
  t.same([...(a?.permissions ?? [])].sort(), [...ROLES.member.permissions].sort())
  t.throws(() => { (a?.permissions as Set<string>).add('org.delete') }, TypeError, 'adding to the shared set is refused')
  t.throws(() => { (a?.permissions as Set<string>).delete('project.read') }, TypeError)
  t.throws(() => { (a?.permissions as Set<string>).clear() }, TypeError)
  t.notOk(b?.permissions.has('org.delete'), 'another member of the role is unchanged')
  t.ok((await resolver.access('o1', { userId: 'c' }))?.permissions.has('dns.manage'), 'a direct grant adds to the role')
  t.ok((await resolver.access('o1', { userId: 'd' }))?.permissions.has('dns.manage'), 'a team adds to the role')
  t.notOk((await resolver.access('o1', { userId: 'a' }))?.permissions.has('dns.manage'), 'and neither reaches a member without it')
  const scoped = await resolver.access('o1', { userId: 'b', scopes: ['project.read'] })
  t.same([...(scoped?.permissions ?? [])], ['project.read'], 'a PAT\'s scopes still narrow')
})
