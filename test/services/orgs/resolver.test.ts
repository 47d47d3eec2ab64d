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
