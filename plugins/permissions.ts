import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { systemClock } from '../services/clock.js'
import { forbidden, notFound } from '../services/errors.js'
import type { Permission } from '../services/orgs/catalogue.js'
import { MemberSets, PERMISSION_GROUPS, TEAMS } from '../services/orgs/member-sets.js'
import { Organizations } from '../services/orgs/organizations.js'
import { PermissionResolver, type OrgAccess } from '../services/orgs/permissions.js'
import { Projects, type Project } from '../services/projects/projects.js'
import { platformCaller } from './auth.js'
import { organizationSchemas } from '../schemas/organizations.js'
import { projectSchemas } from '../schemas/projects.js'

export interface Orgs {
  organizations: Organizations
  teams: MemberSets
  groups: MemberSets
  resolver: PermissionResolver
}

type PreHandler = (request: FastifyRequest) => Promise<void>
interface OrgCheckOptions { self?: string, orgIdIn?: 'params' | 'body' }

declare module 'fastify' {
  interface FastifyInstance {
    orgs: Orgs
    projects: Projects
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

// After a crash the queued purge finishes the job; when the request completes it, the job finds nothing left.
const PURGE_SAFETY_DELAY_MS = 60_000

/** The caller's access as resolved for this request; only valid behind requireOrg/ProjectPermission. */
export function orgAccess (request: FastifyRequest): OrgAccess {
  if (request.orgAccess === null) throw new Error('route is missing its permission hook')
  return request.orgAccess
}

export function requestProject (request: FastifyRequest): Project {
  if (request.project === null) throw new Error('route is missing its project permission hook')
  return request.project
}

function missing (permission: Permission): Error {
  return forbidden('APP_FORBIDDEN', `This needs the "${permission}" permission`, { permission })
}

/**
 * Organizations, projects and the one permission resolver. Routes declare
 * what they need with requireOrgPermission / requireProjectPermission; an
 * outsider gets the same 404 whether or not the organization or project exists.
 */
async function permissionsPlugin (app: FastifyInstance): Promise<void> {
  const unknownProjects = async (orgId: string, ids: string[]): Promise<string[]> => await projects.unknownIn(orgId, ids)
  const teams = new MemberSets(app.store, { clock: systemClock, kind: TEAMS, unknownProjects })
  const groups = new MemberSets(app.store, { clock: systemClock, kind: PERMISSION_GROUPS, unknownProjects })
  const resolver = new PermissionResolver(app.store, { teams, groups })
  const projects = new Projects(app.store, {
    clock: systemClock,
    enableEndUsers: async (projectId) => {
      await app.projectAuth.users.enable(projectId)
      await app.collections.definitions.ensureUsersCollection(projectId)
    },
    schedulePurge: async (projectId) => { await app.jobs.enqueue('project.purge', { projectId }, { delayMs: PURGE_SAFETY_DELAY_MS }) }
  })
  const organizations = new Organizations(app.store, {
    clock: systemClock,
    users: app.identity.users,
    teams,
    groups,
    contents: projects,
    schedulePurge: async (orgId) => { await app.jobs.enqueue('organization.purge', { orgId }, { delayMs: PURGE_SAFETY_DELAY_MS }) }
  })
  for (const schema of [...organizationSchemas, ...projectSchemas]) app.addSchema(schema)
  await Promise.all([teams.init(), groups.init(), projects.init(), organizations.init()])
  projects.onDelete(async (projectId) => {
    await app.projectAuth.serviceTokens.deleteAllForProject(projectId)
    await app.projectAuth.sessions.forgetScope(projectId)
  })
  projects.onDelete(async (projectId) => {
    await organizations.forgetProject(projectId)
    await teams.forgetProject(projectId)
    await groups.forgetProject(projectId)
  })

  app.registerJobHandler('project.purge', async (payload) => { await projects.purge(String(payload.projectId)) })
  app.registerJobHandler('organization.purge', async (payload) => { await organizations.purge(String(payload.orgId)) })

  app.decorate('orgs', { organizations, teams, groups, resolver })
  app.decorate('projects', projects)
  app.decorateRequest('orgAccess', null)
  app.decorateRequest('project', null)

  app.decorate('requireOrgPermission', (permission: Permission | null, options: OrgCheckOptions = {}): PreHandler => async (request) => {
    const params = request.params as Record<string, string>
    const orgId = options.orgIdIn === 'body' ? (request.body as { orgId: string }).orgId : params.orgId
    const access = await resolver.access(orgId, platformCaller(request))
    if (access === null) throw notFound('APP_ORGANIZATION_NOT_FOUND', 'Organization not found')
    // A scoped PAT holds only its scopes, even over its own membership.
    const actingOnSelf = options.self !== undefined && params[options.self] === access.userId && !access.scoped
    if (permission !== null && !actingOnSelf && !access.permissions.has(permission)) throw missing(permission)
    request.orgAccess = access
  })

  app.decorate('requireProjectPermission', (permission: Permission): PreHandler => async (request) => {
    const params = request.params as { projectId?: string, id?: string }
    const project = await projects.findById(params.projectId ?? params.id ?? '')
    const access = project === null ? null : await resolver.access(project.orgId, platformCaller(request), project.id)
    if (project === null || access === null) throw notFound('APP_PROJECT_NOT_FOUND', 'Project not found')
    if (!access.permissions.has(permission)) throw missing(permission)
    request.project = project
    request.orgAccess = access
  })
}

export default fp(permissionsPlugin, { name: 'plinth-permissions', fastify: '5.x', dependencies: ['plinth-auth', 'plinth-jobs', 'plinth-project-auth'] })
