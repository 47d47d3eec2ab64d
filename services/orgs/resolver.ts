import { commonErrors } from '../platform/errors.js'
import { orgErrors } from './errors.js'
import type { SharedReads, Store, StoreCollection } from '../store/types.js'
import { PERMISSION_NAMES, ROLES, type Grant, type Permission, type Role } from './catalogue.js'
import { membershipId, type MembershipRecord } from './memberships.js'

/** What a caller may do in one organization, optionally narrowed to one project. */
export interface OrgAccess {
  orgId: string
  userId: string
  role: Role
  projectId: string | null
  permissions: ReadonlySet<Permission>
  /** The credential is a PAT narrowed by scopes: it holds less than its user. */
  scoped: boolean
}

export interface PermissionSource {
  permission: Permission
  via: 'role' | 'grant' | 'team' | 'group'
  /** The team or group it came through. */
  setId?: string
  setName?: string
  /** Null when held across the organization. */
  projectId: string | null
}

export interface EffectivePermissions {
  role: Role
  projectId: string | null
  permissions: Permission[]
  sources: PermissionSource[]
}

export interface Caller {
  userId: string
  /** A PAT's scopes; an empty or absent list means the token acts with all of its user's rights. */
  scopes?: string[]
}

/** A grant a member holds through a team or group, with where it came from. */
export interface SetGrant { grant: Grant, setId: string, setName: string }

/** Where grants held through sets come from (teams, permission groups). */
export interface SetGrants {
  grantsFor (orgId: string, userId: string): Promise<SetGrant[]>
}

/**
 * The 403 of a permission the caller lacks, naming it. When a PAT's scopes
 * leave it out, that is the reason given, with the scopes the token has, so
 * its holder knows to make a token with that scope rather than ask for a role.
 */
export function permissionMissing (permission: Permission, scopes?: readonly string[]): Error {
  return commonErrors.forbidden({ permission, scopes })
}

function narrow (permissions: Permission[], caller: Caller): Permission[] {
  if (caller.scopes === undefined || caller.scopes.length === 0) return permissions
  const scopes = new Set(caller.scopes)
  return permissions.filter((permission) => scopes.has(permission))
}

/** A set that refuses every change once made: one is shared by every member of a role, so a write would widen them all. */
class FixedSet<T> extends Set<T> {
  constructor (values: Iterable<T>) {
    super()
    for (const value of values) super.add(value)
    Object.freeze(this)
  }

  override add (): this { throw new TypeError('a role\'s permissions cannot be changed') }
  override delete (): boolean { throw new TypeError('a role\'s permissions cannot be changed') }
  override clear (): void { throw new TypeError('a role\'s permissions cannot be changed') }
}

/**
 * Each role's permissions in catalogue order, and as a set, made once: a member
 * holding no grant beyond the role (most callers, on every request) is answered
 * with these instead of a set and a list built anew.
 */
const ROLE_HOLDS = Object.fromEntries(Object.entries(ROLES).map(([role, { permissions }]) => {
  const held = new FixedSet<Permission>(permissions)
  const list = Object.freeze(PERMISSION_NAMES.filter((name) => held.has(name)))
  return [role, { list, set: held as ReadonlySet<Permission> }]
})) as Record<Role, { list: readonly Permission[], set: ReadonlySet<Permission> }>

function applies (grant: Grant, projectId: string | null): boolean {
  return grant.projectId === null || grant.projectId === projectId
}

/**
 * The one permission resolver: role, direct grants, teams and permission
 * groups, unioned, then narrowed by a PAT's scopes. Every route that needs a
 * permission and both permission-reporting routes ask it.
 */
export class PermissionResolver {
  private readonly memberships: StoreCollection<MembershipRecord>
  // Each request's membership read: a frozen document the Store's document cache may share between readers.
  private readonly sharedMemberships: SharedReads<MembershipRecord>

  constructor (store: Store, private readonly sets: { teams: SetGrants, groups: SetGrants }) {
    this.memberships = store.collection<MembershipRecord>('organization_members')
    this.sharedMemberships = store.extensions.shared<MembershipRecord>('organization_members')
  }

  /** Null when the caller is not a member: the caller then learns nothing about the organization. */
  async access (orgId: string, caller: Caller, projectId: string | null = null): Promise<OrgAccess | null> {
    const resolved = await this.resolve(orgId, caller.userId, projectId, false)
    if (resolved === null) return null
    const scoped = caller.scopes !== undefined && caller.scopes.length > 0
    const roleHolds = ROLE_HOLDS[resolved.role]
    const permissions = !scoped && resolved.permissions === roleHolds.list ? roleHolds.set : new Set(narrow(resolved.permissions, caller))
    return { orgId, userId: caller.userId, role: resolved.role, projectId, permissions, scoped }
  }

  /** The organizations in which the caller holds `permission` (across the organization). */
  async organizationsWhere (caller: Caller, permission: Permission): Promise<string[]> {
    const memberships = await this.memberships.find({ userId: caller.userId }, { projection: { orgId: 1 } }).toArray()
    const allowed: string[] = []
    for (const { orgId } of memberships) {
      if ((await this.access(orgId, caller))?.permissions.has(permission) === true) allowed.push(orgId)
    }
    return allowed
  }

  /** The permissions with where each came from, for the two reporting routes. */
  async explain (orgId: string, caller: Caller, projectId: string | null): Promise<EffectivePermissions> {
    const resolved = await this.resolve(orgId, caller.userId, projectId, true)
    if (resolved === null) throw orgErrors.memberNotFound()
    const permissions = new Set(narrow(resolved.permissions, caller))
    return { ...resolved, permissions: [...permissions], sources: resolved.sources.filter((source) => permissions.has(source.permission)) }
  }

  private async resolve (orgId: string, userId: string, projectId: string | null, withSources: boolean): Promise<EffectivePermissions | null> {
    const membership = await this.sharedMemberships.findOne({ _id: membershipId(orgId, userId) })
    if (membership === null) return null
    const roleHolds = ROLE_HOLDS[membership.role]
    // An owner's role holds everything, and no grant can add to it.
    if (!withSources && membership.grants.length === 0 && roleHolds.list.length === PERMISSION_NAMES.length) {
      return { role: membership.role, projectId, permissions: roleHolds.list as Permission[], sources: [] }
    }
    const sources: PermissionSource[] = []
    const held = new Set<Permission>(ROLES[membership.role].permissions)
    if (withSources) for (const permission of held) sources.push({ permission, via: 'role', projectId: null })
    // An owner already holds everything; skip the reads that could add nothing.
    const complete = (): boolean => !withSources && held.size === PERMISSION_NAMES.length
    const add = (grant: Grant, source: Omit<PermissionSource, 'permission' | 'projectId'>): void => {
      if (!applies(grant, projectId)) return
      held.add(grant.permission)
      if (withSources) sources.push({ permission: grant.permission, projectId: grant.projectId, ...source })
    }
    for (const grant of membership.grants) add(grant, { via: 'grant' })
    if (!complete()) {
      for (const { grant, setId, setName } of await this.sets.teams.grantsFor(orgId, userId)) add(grant, { via: 'team', setId, setName })
      for (const { grant, setId, setName } of await this.sets.groups.grantsFor(orgId, userId)) add(grant, { via: 'group', setId, setName })
    }
    // Grants only ever add to the role's set: the same size means nothing was added.
    const permissions = held.size === roleHolds.set.size ? roleHolds.list as Permission[] : PERMISSION_NAMES.filter((name) => held.has(name))
    return { role: membership.role, projectId, permissions, sources }
  }
}
