import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  AddMemberBody, ChangeRoleBody, CreateOrganizationBody, GrantsBody, MemberParams, OrgParams, ProjectScopeQuery, Responses, UpdateOrganizationBody
} from '../../schemas/organizations.js'
import { platformCaller } from '../../plugins/auth.js'
import { orgAccess } from '../../plugins/permissions.js'
import { memberSetRoutes } from './member-sets.js'

const organizationRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { organizations, resolver, teams, groups } = app.orgs

  app.get('', {
    config: { auth: 'platform' },
    schema: { operationId: 'listOrganizations', tags: ['organizations'], summary: 'Organizations the caller belongs to, with the caller\'s role', response: Responses.orgList }
  }, async (request) => ({ success: true as const, data: await organizations.listForUser(platformCaller(request).userId) }))

  app.post('', {
    config: { auth: 'platform' },
    schema: { operationId: 'createOrganization', tags: ['organizations'], summary: 'Create an organization; the caller becomes its owner', body: CreateOrganizationBody, response: Responses.orgCreated }
  }, async (request, reply) => reply.code(201).send({ success: true as const, data: await organizations.create(platformCaller(request), request.body) }))

  app.get('/:orgId', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.read'),
    schema: { operationId: 'getOrganization', tags: ['organizations'], summary: 'An organization the caller belongs to', params: OrgParams, response: Responses.org }
  }, async (request) => ({ success: true as const, data: await organizations.get(request.params.orgId) }))

  app.put('/:orgId', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.update'),
    schema: { operationId: 'updateOrganization', tags: ['organizations'], summary: 'Rename an organization or change its slug or description', params: OrgParams, body: UpdateOrganizationBody, response: Responses.orgUpdated }
  }, async (request) => ({ success: true as const, data: await organizations.update(request.params.orgId, request.body) }))

  app.delete('/:orgId', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.delete'),
    schema: { operationId: 'deleteOrganization', tags: ['organizations'], summary: 'Delete an organization with its projects, teams and groups (owners only)', params: OrgParams, response: Responses.deleted }
  }, async (request) => {
    await organizations.delete(request.params.orgId)
    return { success: true as const, data: { id: request.params.orgId, deleted: true as const } }
  })

  app.get('/:orgId/members', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.read'),
    schema: { operationId: 'listMembers', tags: ['organizations'], summary: 'Members with their roles and direct grants', params: OrgParams, response: Responses.memberList }
  }, async (request) => ({ success: true as const, data: await organizations.listMembers(request.params.orgId) }))

  app.post('/:orgId/members', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.members.manage'),
    schema: { operationId: 'addMember', tags: ['organizations'], summary: 'Add an existing platform user with a role', params: OrgParams, body: AddMemberBody, response: Responses.memberAdded }
  }, async (request, reply) => reply.code(201).send({ success: true as const, data: await organizations.addMember(orgAccess(request), request.body) }))

  app.put('/:orgId/members/:memberId', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.members.manage'),
    schema: { operationId: 'changeMemberRole', tags: ['organizations'], summary: 'Change a member\'s role; the last owner cannot be demoted', params: MemberParams, body: ChangeRoleBody, response: Responses.memberChanged }
  }, async (request) => ({ success: true as const, data: await organizations.changeRole(orgAccess(request), request.params.memberId, request.body.role) }))

  app.delete('/:orgId/members/:memberId', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.members.manage', { self: 'memberId' }),
    schema: { operationId: 'removeMember', tags: ['organizations'], summary: 'Remove a member (or leave); the last owner cannot be removed', params: MemberParams, response: Responses.deleted }
  }, async (request) => {
    await organizations.removeMember(orgAccess(request), request.params.memberId)
    return { success: true as const, data: { id: request.params.memberId, deleted: true as const } }
  })

  app.get('/:orgId/members/:memberId/permissions', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.read'),
    schema: { operationId: 'getMemberGrants', tags: ['organizations'], summary: 'A member\'s direct permission grants', params: MemberParams, response: Responses.grants }
  }, async (request) => ({ success: true as const, data: await organizations.getGrants(request.params.orgId, request.params.memberId) }))

  app.put('/:orgId/members/:memberId/permissions', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.members.manage'),
    schema: { operationId: 'setMemberGrants', tags: ['organizations'], summary: 'Replace a member\'s direct grants (only permissions the caller holds)', params: MemberParams, body: GrantsBody, response: Responses.grantsSet }
  }, async (request) => ({ success: true as const, data: await organizations.setGrants(orgAccess(request), request.params.memberId, request.body.permissions) }))

  app.get('/:orgId/members/:memberId/effective-permissions', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.members.manage', { self: 'memberId' }),
    schema: { operationId: 'getEffectivePermissions', tags: ['organizations'], summary: 'A member\'s permissions: role, grants, teams and groups, optionally for one project', params: MemberParams, querystring: ProjectScopeQuery, response: Responses.effective }
  }, async (request) => {
    const { orgId, memberId } = request.params
    return { success: true as const, data: await resolver.explain(orgId, { userId: memberId }, request.query.projectId ?? null) }
  })

  app.get('/:orgId/me/permissions', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission(null),
    schema: { operationId: 'getMyPermissions', tags: ['organizations'], summary: 'The caller\'s permissions (narrowed by a PAT\'s scopes), optionally for one project', params: OrgParams, querystring: ProjectScopeQuery, response: Responses.effective }
  }, async (request) => ({ success: true as const, data: await resolver.explain(request.params.orgId, platformCaller(request), request.query.projectId ?? null) }))

  await app.register(memberSetRoutes, { prefix: '/:orgId/teams', sets: teams, noun: 'Team', permission: 'org.teams.manage' })
  await app.register(memberSetRoutes, { prefix: '/:orgId/permission-groups', sets: groups, noun: 'PermissionGroup', permission: 'org.groups.manage' })
}

export default organizationRoutes
