import { badRequest, fieldIssue, forbidden } from '../errors.js'
import { ROLES, isPermission, type Grant, type Role } from './catalogue.js'
import type { OrgAccess } from './resolver.js'

/**
 * Checks on grants someone hands out (to a member, a team or a permission
 * group) and on role changes: nobody can give away more than they hold.
 */

/** A grant as a client sends it, before checkGrants validates it. */
export interface GrantInput { permission: string, projectId?: string | null }

const MAX_GRANTS = 200

/**
 * Validates grants someone wants to hand out: known names only, no duplicates,
 * and nothing the granting member does not hold across the organization, so
 * nobody can mint rights above their own through a grant, team or group.
 */
export function checkGrants (actor: OrgAccess, grants: GrantInput[]): Grant[] {
  if (grants.length > MAX_GRANTS) throw badRequest('APP_TOO_MANY_GRANTS', `At most ${MAX_GRANTS} grants`)
  const seen = new Map<string, Grant>()
  for (const [index, grant] of grants.entries()) {
    if (!isPermission(grant.permission)) throw badRequest('APP_UNKNOWN_PERMISSION', `permissions[${index}].permission: unknown permission "${grant.permission}"`, { permission: grant.permission })
    if (!actor.permissions.has(grant.permission)) throw forbidden('APP_CANNOT_GRANT', `You cannot grant "${grant.permission}": you do not hold it yourself`, { permission: grant.permission })
    const projectId = grant.projectId ?? null
    seen.set(`${grant.permission}\n${projectId ?? ''}`, { permission: grant.permission, projectId })
  }
  return [...seen.values()]
}

/**
 * Whether the actor holds every permission of a role. Role changes are
 * judged by this, not by the actor's role name, so a scoped PAT or a member
 * with a single grant can never hand out, take away or touch a role above
 * what it holds itself.
 */
export function checkRoleCeiling (actor: OrgAccess, role: Role, verb: string): void {
  const missing = ROLES[role].permissions.filter((permission) => !actor.permissions.has(permission))
  if (missing.length > 0) {
    throw forbidden(role === 'owner' ? 'APP_OWNER_ONLY' : 'APP_ROLE_CEILING', `You cannot ${verb} the ${role} role: it holds permissions you do not (${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ', …' : ''})`, fieldIssue('role', `holds permissions you do not: ${missing.join(', ')}`))
  }
}

/** Looks up which of some project ids are not live projects of an organization. */
export type UnknownProjects = (orgId: string, projectIds: string[]) => Promise<string[]>

/** A grant scoped to a project must name a live project of the same organization. */
export async function checkGrantProjects (orgId: string, grants: Grant[], unknownIn: UnknownProjects): Promise<void> {
  const ids = [...new Set(grants.map((grant) => grant.projectId).filter((id): id is string => id !== null))]
  const unknown = await unknownIn(orgId, ids)
  if (unknown.length > 0) throw badRequest('APP_UNKNOWN_PROJECT', `Grants name projects that are not in this organization: ${unknown.join(', ')}`, { ids: unknown })
}
