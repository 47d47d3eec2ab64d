import { orgErrors } from './errors.js'
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
  if (grants.length > MAX_GRANTS) throw orgErrors.tooManyGrants({ limit: MAX_GRANTS })
  const seen = new Map<string, Grant>()
  for (const [index, grant] of grants.entries()) {
    if (!isPermission(grant.permission)) throw orgErrors.unknownPermission({ names: [grant.permission], path: `body.permissions[${index}].permission` })
    if (!actor.permissions.has(grant.permission)) throw orgErrors.cannotGrant({ permission: grant.permission })
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
    throw (role === 'owner' ? orgErrors.ownerOnly : orgErrors.roleCeiling)({ verb, role, missing })
  }
}

/** Looks up which of some project ids are not live projects of an organization. */
export type UnknownProjects = (orgId: string, projectIds: string[]) => Promise<string[]>

/** A grant scoped to a project must name a live project of the same organization. */
export async function checkGrantProjects (orgId: string, grants: Grant[], unknownIn: UnknownProjects): Promise<void> {
  const ids = [...new Set(grants.map((grant) => grant.projectId).filter((id): id is string => id !== null))]
  const unknown = await unknownIn(orgId, ids)
  if (unknown.length > 0) throw orgErrors.unknownProject({ ids: unknown })
}
