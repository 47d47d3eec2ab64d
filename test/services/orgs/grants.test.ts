import t from 'tap'
import { PERMISSION_NAMES, ROLES } from '../../../services/orgs/catalogue.js'
import type { OrgAccess } from '../../../services/orgs/resolver.js'
import { checkGrants, checkRoleCeiling } from '../../../services/orgs/grants.js'
import { AppError } from '../../../services/platform/errors.js'

function refused (fn: () => unknown): AppError {
  try { fn() } catch (error) { if (error instanceof AppError) return error; throw error }
  throw new Error('expected a refusal')
}

const actor = (permissions: string[], role: OrgAccess['role'] = 'member'): OrgAccess =>
  ({ orgId: 'o1', userId: 'u-actor', role, projectId: null, permissions: new Set(permissions) as OrgAccess['permissions'], scoped: false })

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
