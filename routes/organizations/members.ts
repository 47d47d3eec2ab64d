import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  AddMemberBody, ChangeRoleBody, GrantsBody, MemberParams, OrganizationResponses, OrgParams, ProjectScopeQuery
} from '../../schemas/organizations.js'
import { commonErrors } from '../../services/platform/errors.js'
import { orgErrors } from '../../services/orgs/errors.js'
import { created, deleted, ok } from '../replies.js'

const tags = ['organizations']

/** What handing out grants may meet: nobody gives what they do not hold, and grants name what exists. */
export const GRANTING = [orgErrors.cannotGrant, orgErrors.unknownPermission, orgErrors.tooManyGrants, orgErrors.unknownProject]
/** Only those holding a role's permissions give, change or take it. */
const CEILING = [orgErrors.ownerOnly, orgErrors.roleCeiling]
/** What changing or ending a membership may meet: the member, the ceiling, the last owner, a change meanwhile. */
const MEMBERSHIP_CHANGES = [orgErrors.memberNotFound, ...CEILING, orgErrors.lastOwner, orgErrors.memberChanged]

/** `/api/organizations/:orgId/members/…`: members are platform users; `:memberId` is the user's id. */
const memberRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { organizations, resolver } = app.orgs

  app.get('', {
    config: { permission: 'org.read' },
    schema: {
      operationId: 'listMembers',
      tags,
      summary: 'Members with their roles and direct grants',
      params: OrgParams,
      response: OrganizationResponses.memberList
    }
  }, async (request) => ok(await organizations.listMembers(request.scope.organization.orgId)))

  app.post('', {
    config: {
      permission: 'org.members.manage',
      errors: [
        orgErrors.invalidMember, orgErrors.invalidRole, ...CEILING, ...GRANTING, commonErrors.userNotFound, orgErrors.alreadyMember
      ]
    },
    schema: {
      operationId: 'addMember',
      tags,
      summary: 'Add an existing platform user with a role',
      description: 'Nobody hands out a role, or a grant, holding permissions they lack themselves. Location names the new member.',
      params: OrgParams,
      body: AddMemberBody,
      response: OrganizationResponses.memberAdded
    }
  }, async (request, reply) => created(reply, await organizations.addMember(request.scope.organization, request.body)))

  app.put('/:memberId', {
    config: { permission: 'org.members.manage', errors: [orgErrors.invalidRole, ...MEMBERSHIP_CHANGES] },
    schema: {
      operationId: 'changeMemberRole',
      tags,
      summary: 'Change a member\'s role; the last owner cannot be demoted',
      description: 'Within the caller\'s own ceiling: only those holding both roles\' permissions change one into the other.',
      params: MemberParams,
      body: ChangeRoleBody,
      response: OrganizationResponses.member
    }
  }, async (request) => ok(await organizations.changeRole(request.scope.organization, request.params.memberId, request.body.role)))

  app.delete('/:memberId', {
    config: { permission: 'org.members.manage', self: 'memberId', errors: MEMBERSHIP_CHANGES },
    schema: {
      operationId: 'removeMember',
      tags,
      summary: 'Remove a member (or leave); the last owner cannot be removed',
      description: 'The member leaves the organization\'s teams and groups too.',
      params: MemberParams,
      response: OrganizationResponses.deleted
    }
  }, async (request) => {
    await organizations.removeMember(request.scope.organization, request.params.memberId)
    return deleted(request.params.memberId)
  })

  app.get('/:memberId/permissions', {
    config: { permission: 'org.read', errors: [orgErrors.memberNotFound] },
    schema: {
      operationId: 'getMemberGrants',
      tags,
      summary: 'A member\'s direct permission grants',
      params: MemberParams,
      response: OrganizationResponses.grants
    }
  }, async (request) => ok(await organizations.getGrants(request.scope.organization.orgId, request.params.memberId)))

  app.put('/:memberId/permissions', {
    config: { permission: 'org.members.manage', errors: [...GRANTING, orgErrors.memberNotFound, ...CEILING] },
    schema: {
      operationId: 'setMemberGrants',
      tags,
      summary: 'Replace a member\'s direct grants (only permissions the caller holds)',
      description: 'A caller grants only permissions they hold, and changes the grants only of a member whose role they could give.',
      params: MemberParams,
      body: GrantsBody,
      response: OrganizationResponses.grants
    }
  }, async (request) => ok(await organizations.setGrants(request.scope.organization, request.params.memberId, request.body.permissions)))

  app.get('/:memberId/effective-permissions', {
    config: { permission: 'org.members.manage', self: 'memberId', errors: [orgErrors.memberNotFound] },
    schema: {
      operationId: 'getEffectivePermissions',
      tags,
      summary: 'A member\'s permissions: role, grants, teams and groups, optionally for one project',
      description: 'Each permission comes with where it comes from: role, grant, team or group.',
      params: MemberParams,
      querystring: ProjectScopeQuery,
      response: OrganizationResponses.effective
    }
  }, async (request) => {
    const { orgId } = request.scope.organization
    return ok(await resolver.explain(orgId, { userId: request.params.memberId }, request.query.projectId ?? null))
  })
}

export default memberRoutes
