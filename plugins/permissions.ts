import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { notFound } from '../services/errors.js'
import type { Permission } from '../services/orgs/catalogue.js'
import { permissionMissing, type OrgAccess } from '../services/orgs/resolver.js'
import type { Project } from '../services/projects/projects.js'
import { platformCaller } from './auth.js'

type PreHandler = (request: FastifyRequest) => Promise<void>
interface OrgCheckOptions { self?: string, orgIdIn?: 'params' | 'body' }

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * preHandler: the caller is a member of `params.orgId` holding `permission`
     * (any member when null). With `self`, a member acting on themselves (the
     * path parameter of that name is their own id) needs no permission.
     * With `orgIdIn: 'body'` the organization is named by the body's `orgId`.
     */
    requireOrgPermission: (permission: Permission | null, options?: OrgCheckOptions) => PreHandler
    /** preHandler: `params.projectId` (or `params.id`) exists and the caller holds `permission` for it. */
    requireProjectPermission: (permission: Permission) => PreHandler
  }
  interface FastifyRequest {
    orgAccess: OrgAccess | null
    project: Project | null
  }
}

/** The caller's access as resolved for this request; only valid behind requireOrg/ProjectPermission. */
export function orgAccess (request: FastifyRequest): OrgAccess {
  if (request.orgAccess === null) throw new Error('route is missing its permission hook')
  return request.orgAccess
}

export function requestProject (request: FastifyRequest): Project {
  if (request.project === null) throw new Error('route is missing its project permission hook')
  return request.project
}

/**
 * Permission checks: routes declare what they need with requireOrgPermission
 * / requireProjectPermission, answered by the one resolver; an outsider gets
 * the same 404 whether or not the organization or project exists.
 */
async function permissionsPlugin (app: FastifyInstance): Promise<void> {
  const { projects } = app
  const { resolver } = app.orgs
  app.decorateRequest('orgAccess', null)
  app.decorateRequest('project', null)

  app.decorate('requireOrgPermission', (permission: Permission | null, options: OrgCheckOptions = {}): PreHandler => async (request) => {
    const params = request.params as Record<string, string>
    const orgId = options.orgIdIn === 'body' ? (request.body as { orgId: string }).orgId : params.orgId
    const caller = platformCaller(request)
    const access = await resolver.access(orgId, caller)
    if (access === null) throw notFound('APP_ORGANIZATION_NOT_FOUND', 'Organization not found')
    // A scoped PAT holds only its scopes, even over its own membership.
    const actingOnSelf = options.self !== undefined && params[options.self] === access.userId && !access.scoped
    if (permission !== null && !actingOnSelf && !access.permissions.has(permission)) throw permissionMissing(permission, caller.scopes)
    request.orgAccess = access
  })

  app.decorate('requireProjectPermission', (permission: Permission): PreHandler => async (request) => {
    const params = request.params as { projectId?: string, id?: string }
    const project = await projects.findById(params.projectId ?? params.id ?? '')
    const caller = platformCaller(request)
    const access = project === null ? null : await resolver.access(project.orgId, caller, project.id)
    if (project === null || access === null) throw notFound('APP_PROJECT_NOT_FOUND', 'Project not found')
    if (!access.permissions.has(permission)) throw permissionMissing(permission, caller.scopes)
    request.project = project
    request.orgAccess = access
  })
}

export default fp(permissionsPlugin, { name: 'plinth-permissions', fastify: '5.x', dependencies: ['plinth-auth', 'plinth-projects', 'plinth-orgs'] })
