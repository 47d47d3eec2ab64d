import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { commonErrors, type DeclaredError } from '../services/platform/errors.js'
import type { Permission } from '../services/orgs/catalogue.js'
import { permissionMissing, type OrgAccess } from '../services/orgs/resolver.js'
import { orgErrors } from '../services/orgs/errors.js'
import type { Project } from '../services/projects/projects.js'
import type { MemberSet, MemberSets } from '../services/orgs/member-sets.js'
import type { PlatformAuth, RequestCaller } from '../http/caller.js'

/**
 * The parents a route may sit under, by name, and what each loads into
 * `request.scope`. A family adds its own by augmenting this interface in its
 * plugin (`declare module './permissions.js' { interface ParentKinds { zone: StoredZone } }`)
 * and registering the kind with `app.registerParent`.
 */
export interface ParentKinds {
  /**
   * `params.orgId` as the caller sees it: their role and permissions there.
   * A route that creates in an organization without naming it in its path
   * (`POST /api/projects`) names it in the body's `orgId`.
   */
  organization: OrgAccess
  /** `params.projectId` (or `params.id`). */
  project: Project
  /** The organization's team `params.setId`. */
  team: MemberSet
  /** The organization's permission group `params.setId`. */
  permissionGroup: MemberSet
}

export type ParentName = keyof ParentKinds

/** What a kind loads: the parent, and for a kind that decides access, what the caller may do there. */
export interface Loaded<T> {
  value: T
  permissions?: ReadonlySet<Permission>
  /** A scoped PAT's scopes, so a refusal can say the token, not the member, lacks the permission. */
  scopes?: readonly string[]
}

/** How one kind of parent is found for a request. */
export interface ParentKind<N extends ParentName> {
  /** The parent it lies in, loaded first (a zone lies in a project): `scope` holds it when `load` runs. */
  within?: ParentName
  /** What `load` may throw (its 404s), listed on every route under the kind. */
  errors: readonly DeclaredError[]
  /**
   * A kind that decides access (an organization, a project, a repository with
   * its members' roles) returns the caller's permissions there; the route's
   * permission is checked against the innermost such kind, right after it loads.
   */
  decidesAccess?: boolean
  /** Loads the parent the request names; throws the kind's 404 when it is missing or hidden from the caller. */
  load: (request: FastifyRequest, context: { caller: RequestCaller, scope: RequestScope }) => Promise<Loaded<ParentKinds[N]>>
  /** The contract's sentence for a permission on routes under this kind, when "Needs `x`." does not say it. */
  needs?: (permission: Permission) => string
}

const NOTHING: ReadonlySet<Permission> = new Set()

/**
 * The parents a route declared, loaded once before its handler. Each parent
 * is a typed property (`request.scope.project`, `request.scope.zone`);
 * reading one the route did not declare is a bug, answered as one.
 */
export class Scope {
  /** What the caller may do where the route acts, as the innermost parent that decides access says; empty under none. */
  permissions: ReadonlySet<Permission> = NOTHING
  private readonly loaded = new Map<ParentName, unknown>()

  has (name: ParentName): boolean {
    return this.loaded.has(name)
  }

  set<N extends ParentName> (name: N, value: ParentKinds[N]): void {
    this.loaded.set(name, value)
  }

  get<N extends ParentName> (name: N): ParentKinds[N] {
    if (!this.loaded.has(name)) throw new Error(`the route reads request.scope.${name} but declares no such parent (config.parent)`)
    return this.loaded.get(name) as ParentKinds[N]
  }
}

export type RequestScope = Scope & Readonly<ParentKinds>

/** How a route narrows who needs its permission. */
export interface CheckOptions {
  /**
   * A path parameter naming a platform user: a caller naming themselves there
   * needs no permission (leaving an organization, reading one's own
   * permissions). A PAT with scopes holds only its scopes, even over itself.
   */
  self?: string
}

/** What a route's declaration of its parent and permission becomes: the check, and what the contract says of it. */
export interface ParentCheck {
  /** Loads the chain of parents into a scope, checking the permission where access is decided. */
  resolve: (request: FastifyRequest, caller: RequestCaller) => Promise<RequestScope>
  /** Codes the check may answer: each parent's 404s, and the 403 `commonErrors.forbidden` when a permission is asked. */
  errors: readonly DeclaredError[]
  /** The sentence the contract's description starts with; empty without a permission. */
  needs: string
}

declare module 'fastify' {
  interface FastifyInstance {
    /** Adds a kind of parent routes may declare in `config.parent` (see ParentKinds). */
    registerParent: <N extends ParentName>(name: N, kind: ParentKind<N>) => void
    /** The check for a route under `parent` needing `permission`; route-auth attaches it from `config`. */
    parentCheck: (parent: ParentName, permission?: Permission, options?: CheckOptions) => ParentCheck
  }
}

/** The organization a request names: in its path, or for a route that creates in one, in its body. */
function orgIdIn (request: FastifyRequest): string {
  const orgId = (request.params as { orgId?: unknown }).orgId ?? (request.body as { orgId?: unknown } | undefined)?.orgId
  if (typeof orgId !== 'string') throw new Error('a route under an organization names no orgId')
  return orgId
}

/** Whether the caller names themselves in the route's `self` parameter, with a credential holding all their rights. */
function actsOnSelf (request: FastifyRequest, caller: RequestCaller, self: string | undefined, scopes: readonly string[] | undefined): boolean {
  if (self === undefined || (scopes !== undefined && scopes.length > 0)) return false
  return (request.params as Record<string, unknown>)[self] === caller.user.userId
}

const RESERVED = new Set(['permissions', 'loaded', 'has', 'get', 'set'])

/**
 * Permission checks and the parents routes sit under, answered by the one
 * resolver: an outsider gets the same 404 whether or not the organization or
 * project exists, a member without the permission 403 naming it.
 */
async function permissionsPlugin (app: FastifyInstance): Promise<void> {
  const { projects } = app
  const { resolver } = app.orgs

  const organizationOf = async (orgId: string, caller: PlatformAuth): Promise<OrgAccess> => {
    const access = await resolver.access(orgId, caller)
    if (access === null) throw commonErrors.organizationNotFound()
    return access
  }
  const projectOf = async (request: FastifyRequest, caller: PlatformAuth): Promise<{ project: Project, access: OrgAccess }> => {
    const params = request.params as { projectId?: string, id?: string }
    const project = await projects.findById(params.projectId ?? params.id ?? '')
    const access = project === null ? null : await resolver.access(project.orgId, caller, project.id)
    if (project === null || access === null) throw commonErrors.projectNotFound()
    return { project, access }
  }

  const kinds = new Map<ParentName, ParentKind<any>>()
  app.decorate('registerParent', <N extends ParentName>(name: N, kind: ParentKind<N>) => {
    if (kinds.has(name) || RESERVED.has(name)) throw new Error(`parent kind '${name}' is registered already`)
    if (kind.within !== undefined && !kinds.has(kind.within)) throw new Error(`parent kind '${name}' lies within '${kind.within}', which is not registered (yet)`)
    kinds.set(name, kind)
    if (!Object.hasOwn(Scope.prototype, name)) {
      Object.defineProperty(Scope.prototype, name, { configurable: true, get (this: Scope) { return this.get(name) } })
    }
  })

  app.decorate('parentCheck', (parent: ParentName, permission?: Permission, { self }: CheckOptions = {}): ParentCheck => {
    const chain: Array<[ParentName, ParentKind<any>]> = []
    for (let name: ParentName | undefined = parent; name !== undefined;) {
      const kind = kinds.get(name)
      if (kind === undefined) throw new Error(`unknown parent '${name}' (registered: ${[...kinds.keys()].join(', ')})`)
      chain.unshift([name, kind])
      name = kind.within
    }
    const decider = chain.findLastIndex(([, kind]) => kind.decidesAccess === true)
    if (permission !== undefined && decider === -1) throw new Error(`a permission needs a parent that decides access; '${parent}' and the parents it lies in do not`)
    if (self !== undefined && permission === undefined) throw new Error('`self` exempts a caller from a permission, and the route names none')
    const errors = chain.flatMap(([, kind]) => kind.errors)
    if (permission !== undefined) errors.push(commonErrors.forbidden)
    const needs = permission === undefined ? '' : chain[decider][1].needs?.(permission) ?? `Needs \`${permission}\`.`
    return {
      errors,
      needs: self === undefined ? needs : `${needs.replace(/\.$/, '')}, unless \`${self}\` is the caller's own id.`,
      resolve: async (request, caller) => {
        const scope = new Scope() as RequestScope
        let scopes: readonly string[] | undefined
        for (const [index, [name, kind]] of chain.entries()) {
          const loaded = await kind.load(request, { caller, scope })
          const { value, permissions } = loaded
          scope.set(name, value)
          if (kind.decidesAccess === true) {
            if (permissions === undefined) throw new Error(`parent kind '${name}' decides access but gave no permissions`)
            scope.permissions = permissions
            scopes = loaded.scopes
          }
          if (index === decider && permission !== undefined && !scope.permissions.has(permission) && !actsOnSelf(request, caller, self, scopes)) {
            throw permissionMissing(permission, scopes)
          }
        }
        return scope
      }
    }
  })

  app.registerParent('organization', {
    errors: [commonErrors.organizationNotFound],
    decidesAccess: true,
    load: async (request, { caller }) => {
      const access = await organizationOf(orgIdIn(request), caller.user)
      return { value: access, permissions: access.permissions, scopes: caller.user.scopes }
    }
  })
  const memberSet = (sets: MemberSets) => async (request: FastifyRequest, { scope }: { scope: RequestScope }): Promise<Loaded<MemberSet>> =>
    ({ value: await sets.get(scope.organization.orgId, (request.params as { setId: string }).setId) })
  app.registerParent('team', { within: 'organization', errors: [orgErrors.teamNotFound], load: memberSet(app.orgs.teams) })
  app.registerParent('permissionGroup', { within: 'organization', errors: [orgErrors.permissionGroupNotFound], load: memberSet(app.orgs.groups) })
  app.registerParent('project', {
    errors: [commonErrors.projectNotFound],
    decidesAccess: true,
    load: async (request, { caller }) => {
      const { project, access } = await projectOf(request, caller.user)
      return { value: project, permissions: access.permissions, scopes: caller.user.scopes }
    }
  })
}

export default fp(permissionsPlugin, { name: 'plinth-permissions', fastify: '5.x', dependencies: ['plinth-auth', 'plinth-projects', 'plinth-orgs'] })
