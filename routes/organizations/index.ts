import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  CreateOrganizationBody, OrganizationResponses, OrgParams, ProjectScopeQuery, UpdateOrganizationBody
} from '../../schemas/organizations.js'
import { commonErrors } from '../../services/platform/errors.js'
import { orgErrors } from '../../services/orgs/errors.js'
import { created, deleted, ok } from '../replies.js'
import memberRoutes from './members.js'
import auditLogRoutes from './audit-log.js'
import { memberSetRoutes } from './member-sets.js'

const tags = ['organizations']
/** What naming an organization may meet. */
const NAMING = [commonErrors.invalidName, commonErrors.invalidSlug, commonErrors.slugTaken]

/** `/api/organizations/:orgId/…`: one organization, as one of its members sees it. */
const organizationRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { organizations, resolver, teams, groups } = app.orgs
  app.routeDefaults({ parent: 'organization' })

  app.get('', {
    config: { permission: 'org.read' },
    schema: {
      operationId: 'getOrganization',
      tags,
      summary: 'An organization the caller belongs to',
      params: OrgParams,
      response: OrganizationResponses.org
    }
  }, async (request) => ok(await organizations.get(request.scope.organization.orgId)))

  app.put('', {
    config: { permission: 'org.update', errors: NAMING },
    schema: {
      operationId: 'updateOrganization',
      tags,
      summary: 'Rename an organization or change its slug or description',
      params: OrgParams,
      body: UpdateOrganizationBody,
      response: OrganizationResponses.org
    }
  }, async (request) => ok(await organizations.update(request.scope.organization.orgId, request.body)))

  app.delete('', {
    config: { permission: 'org.delete' },
    schema: {
      operationId: 'deleteOrganization',
      tags,
      summary: 'Delete an organization with its projects, teams and groups (owners only)',
      description: 'Its projects, with all their data, teams, groups and memberships go with it. ' +
        'It vanishes at once; a purge job finishes the work if the server stops half-way.',
      params: OrgParams,
      response: OrganizationResponses.deleted
    }
  }, async (request) => {
    await organizations.delete(request.scope.organization.orgId)
    return deleted(request.scope.organization.orgId)
  })

  app.get('/me/permissions', {
    schema: {
      operationId: 'getMyPermissions',
      tags,
      summary: 'The caller\'s permissions (narrowed by a PAT\'s scopes), optionally for one project',
      description: 'Any member. With a scoped personal access token, only what its scopes allow; ' +
        'each permission comes with where it comes from: role, grant, team or group.',
      params: OrgParams,
      querystring: ProjectScopeQuery,
      response: OrganizationResponses.effective
    }
  }, async (request) => ok(await resolver.explain(request.scope.organization.orgId, request.caller.user, request.query.projectId ?? null)))

  await app.register(memberRoutes, { prefix: '/members' })
  await app.register(auditLogRoutes, { prefix: '/audit-log' })
  await app.register(memberSetRoutes, { prefix: '/teams', sets: teams, parent: 'team', noun: 'Team', permission: 'org.teams.manage' })
  await app.register(memberSetRoutes, {
    prefix: '/permission-groups', sets: groups, parent: 'permissionGroup', noun: 'PermissionGroup', permission: 'org.groups.manage'
  })
}

/** `/api/organizations`: the organizations the caller belongs to, and new ones. */
const organizationsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { organizations } = app.orgs
  app.routeDefaults({ auth: 'platform' })

  app.get('', {
    schema: {
      operationId: 'listOrganizations',
      tags,
      summary: 'Organizations the caller belongs to, with the caller\'s role',
      description: 'Every organization the caller is a member of.',
      response: OrganizationResponses.orgList
    }
  }, async (request) => ok(await organizations.listForUser(request.caller.user.userId)))

  app.post('', {
    config: { errors: [...NAMING, orgErrors.scopedToken] },
    schema: {
      operationId: 'createOrganization',
      tags,
      summary: 'Create an organization; the caller becomes its owner',
      description: 'Any platform user may create one and becomes its owner, holding every permission: ' +
        'so a personal access token with scopes may not. Location names the new organization.',
      body: CreateOrganizationBody,
      response: OrganizationResponses.orgCreated
    }
  }, async (request, reply) => created(reply, await organizations.create(request.caller.user, request.body)))

  await app.register(organizationRoutes, { prefix: '/:orgId' })
}

export default organizationsRoutes
