import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  AddMemberBody, ChangeRoleBody, CreateOrganizationBody, GrantsBody, MemberParams, OrgParams, ProjectScopeQuery, Responses, UpdateOrganizationBody
} from '../../schemas/organizations.js'
import { platformCaller } from '../../plugins/auth.js'
import { orgAccess } from '../../plugins/permissions.js'
import { memberSetRoutes } from './member-sets.js'
import { createdAt } from '../location.js'

const organizationRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { organizations, resolver, teams, groups } = app.orgs

  app.get('', {
    config: { auth: 'platform' },
    schema: { operationId: 'listOrganizations', tags: ['organizations'], summary: 'Organizations the caller belongs to, with the caller\'s role', description: 'Every organization the caller is a member of.', response: Responses.orgList }
  }, async (request) => ({ success: true as const, data: await organizations.listForUser(platformCaller(request).userId) }))

  app.post('', {
    config: { auth: 'platform' },
    schema: { operationId: 'createOrganization', tags: ['organizations'], summary: 'Create an organization; the caller becomes its owner', description: 'Any platform user may create one and becomes its owner. Location names the new organization.', body: CreateOrganizationBody, response: Responses.orgCreated }
  }, async (request, reply) => {
    const organization = await organizations.create(platformCaller(request), request.body)
    return reply.code(201).header('location', createdAt(request, organization.id)).send({ success: true as const, data: organization })
  })

  app.get('/:orgId', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.read'),
    schema: { operationId: 'getOrganization', tags: ['organizations'], summary: 'An organization the caller belongs to', description: 'Needs membership (`org.read`). Outsiders get 404 whether or not it exists.', params: OrgParams, response: Responses.org }
  }, async (request) => ({ success: true as const, data: await organizations.get(request.params.orgId) }))

  app.put('/:orgId', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.update'),
    schema: { operationId: 'updateOrganization', tags: ['organizations'], summary: 'Rename an organization or change its slug or description', description: 'Needs `org.update`.', params: OrgParams, body: UpdateOrganizationBody, response: Responses.orgUpdated }
  }, async (request) => ({ success: true as const, data: await organizations.update(request.params.orgId, request.body) }))

  app.delete('/:orgId', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.delete'),
    schema: { operationId: 'deleteOrganization', tags: ['organizations'], summary: 'Delete an organization with its projects, teams and groups (owners only)', description: 'Needs `org.delete` (owners). Its projects, teams and groups go with it.', params: OrgParams, response: Responses.deleted }
  }, async (request) => {
    await organizations.delete(request.params.orgId)
    return { success: true as const, data: { id: request.params.orgId, deleted: true as const } }
  })

  app.get('/:orgId/members', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.read'),
    schema: { operationId: 'listMembers', tags: ['organizations'], summary: 'Members with their roles and direct grants', description: 'Needs `org.read`.', params: OrgParams, response: Responses.memberList }
  }, async (request) => ({ success: true as const, data: await organizations.listMembers(request.params.orgId) }))

  app.post('/:orgId/members', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.members.manage'),
    schema: { operationId: 'addMember', tags: ['organizations'], summary: 'Add an existing platform user with a role', description: 'Needs `org.members.manage`. Nobody hands out a role holding permissions they lack themselves (403 `APP_ROLE_CEILING`).', params: OrgParams, body: AddMemberBody, response: Responses.memberAdded }
  }, async (request, reply) => {
    const member = await organizations.addMember(orgAccess(request), request.body)
    return reply.code(201).header('location', createdAt(request, member.id)).send({ success: true as const, data: member })
  })

  app.put('/:orgId/members/:memberId', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.members.manage'),
    schema: { operationId: 'changeMemberRole', tags: ['organizations'], summary: 'Change a member\'s role; the last owner cannot be demoted', description: 'Needs `org.members.manage`, within the caller\'s own ceiling.', params: MemberParams, body: ChangeRoleBody, response: Responses.memberChanged }
  }, async (request) => ({ success: true as const, data: await organizations.changeRole(orgAccess(request), request.params.memberId, request.body.role) }))

  app.delete('/:orgId/members/:memberId', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.members.manage', { self: 'memberId' }),
    schema: { operationId: 'removeMember', tags: ['organizations'], summary: 'Remove a member (or leave); the last owner cannot be removed', description: 'Needs `org.members.manage`, except for members removing themselves.', params: MemberParams, response: Responses.deleted }
  }, async (request) => {
    await organizations.removeMember(orgAccess(request), request.params.memberId)
    return { success: true as const, data: { id: request.params.memberId, deleted: true as const } }
  })

  app.get('/:orgId/members/:memberId/permissions', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.read'),
    schema: { operationId: 'getMemberGrants', tags: ['organizations'], summary: 'A member\'s direct permission grants', description: 'Needs `org.read`.', params: MemberParams, response: Responses.grants }
  }, async (request) => ({ success: true as const, data: await organizations.getGrants(request.params.orgId, request.params.memberId) }))

  app.put('/:orgId/members/:memberId/permissions', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.members.manage'),
    schema: { operationId: 'setMemberGrants', tags: ['organizations'], summary: 'Replace a member\'s direct grants (only permissions the caller holds)', description: 'Needs `org.members.manage`; a caller grants only permissions they hold (403 `APP_CANNOT_GRANT`).', params: MemberParams, body: GrantsBody, response: Responses.grantsSet }
  }, async (request) => ({ success: true as const, data: await organizations.setGrants(orgAccess(request), request.params.memberId, request.body.permissions) }))

  app.get('/:orgId/members/:memberId/effective-permissions', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.members.manage', { self: 'memberId' }),
    schema: { operationId: 'getEffectivePermissions', tags: ['organizations'], summary: 'A member\'s permissions: role, grants, teams and groups, optionally for one project', description: 'Needs `org.members.manage`, except for members asking about themselves. Each permission comes with where it comes from: role, grant, team or group.', params: MemberParams, querystring: ProjectScopeQuery, response: Responses.effective }
  }, async (request) => {
    const { orgId, memberId } = request.params
    return { success: true as const, data: await resolver.explain(orgId, { userId: memberId }, request.query.projectId ?? null) }
  })

  app.get('/:orgId/me/permissions', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission(null),
    schema: { operationId: 'getMyPermissions', tags: ['organizations'], summary: 'The caller\'s permissions (narrowed by a PAT\'s scopes), optionally for one project', description: 'Any member. With a scoped personal access token, only what its scopes allow.', params: OrgParams, querystring: ProjectScopeQuery, response: Responses.effective }
  }, async (request) => ({ success: true as const, data: await resolver.explain(request.params.orgId, platformCaller(request), request.query.projectId ?? null) }))

  await app.register(memberSetRoutes, { prefix: '/:orgId/teams', sets: teams, noun: 'Team', permission: 'org.teams.manage' })
  await app.register(memberSetRoutes, { prefix: '/:orgId/permission-groups', sets: groups, noun: 'PermissionGroup', permission: 'org.groups.manage' })
}

export default organizationRoutes
