import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CreateSetBody, OrganizationResponses, OrgParams, SetMemberParams, SetParams, UpdateSetBody } from '../../schemas/organizations.js'
import { commonErrors } from '../../services/platform/errors.js'
import type { Permission } from '../../services/orgs/catalogue.js'
import { orgErrors } from '../../services/orgs/errors.js'
import type { MemberSets } from '../../services/orgs/member-sets.js'
import { created, deleted, ok } from '../replies.js'
import { GRANTING } from './members.js'

interface MemberSetRouteOptions {
  sets: MemberSets
  /** The parent kind one set of this sort is (plugins/permissions.ts). */
  parent: 'team' | 'permissionGroup'
  /** PascalCase noun for operation ids: Team, PermissionGroup. */
  noun: string
  permission: Permission
}

/**
 * Teams and permission groups have the same routes: list, create, get,
 * update, delete, and add or remove one member — what GitHub and GitLab
 * users expect of teams. Any member may look; changing needs `permission`.
 */
export const memberSetRoutes: FastifyPluginAsyncTypebox<MemberSetRouteOptions> = async (app, { sets, parent, noun, permission }) => {
  const tags = ['organizations']
  const label = noun === 'Team' ? 'team' : 'permission group'
  const plural = `${noun}s`
  const nameTaken = parent === 'team' ? orgErrors.teamNameTaken : orgErrors.permissionGroupNameTaken
  // Members must belong to the organization, and a set holds what its creator could grant.
  const WRITES = [commonErrors.invalidName, nameTaken, orgErrors.notAMember, orgErrors.tooManyMembers, ...GRANTING]

  app.get('', {
    config: { permission: 'org.read' },
    schema: {
      operationId: `list${plural}`,
      tags,
      summary: `List the organization's ${label}s`,
      params: OrgParams,
      response: OrganizationResponses.setList
    }
  }, async (request) => ok(await sets.list(request.scope.organization.orgId)))

  app.post('', {
    config: { permission, errors: WRITES },
    schema: {
      operationId: `create${noun}`,
      tags,
      summary: `Create a ${label} with members and grants`,
      description: `Location names the new ${label}.`,
      params: OrgParams,
      body: CreateSetBody,
      response: OrganizationResponses.setCreated
    }
  }, async (request, reply) => created(reply, await sets.create(request.scope.organization, request.body)))

  app.get('/:setId', {
    config: { permission: 'org.read', parent },
    schema: {
      operationId: `get${noun}`,
      tags,
      summary: `One ${label}`,
      params: SetParams,
      response: OrganizationResponses.set
    }
  }, async (request) => ok(request.scope.get(parent)))

  app.put('/:setId', {
    config: { permission, parent, errors: WRITES },
    schema: {
      operationId: `update${noun}`,
      tags,
      summary: `Change a ${label}'s name, description, grants or members`,
      params: SetParams,
      body: UpdateSetBody,
      response: OrganizationResponses.set
    }
  }, async (request) => ok(await sets.update(request.scope.organization, request.scope.get(parent), request.body)))

  app.delete('/:setId', {
    config: { permission, parent },
    schema: {
      operationId: `delete${noun}`,
      tags,
      summary: `Delete a ${label}; its members keep their own roles and grants`,
      params: SetParams,
      response: OrganizationResponses.deleted
    }
  }, async (request) => {
    await sets.delete(request.scope.organization.orgId, request.scope.get(parent))
    return deleted(request.params.setId)
  })

  app.put('/:setId/members/:memberId', {
    config: { permission, parent, errors: [orgErrors.notAMember, orgErrors.tooManyMembers, orgErrors.cannotGrant] },
    schema: {
      operationId: `add${noun}Member`,
      tags,
      summary: `Put an organization member in the ${label}`,
      description: `Joining hands out the ${label}'s grants, so only a caller holding them all adds members.`,
      params: SetMemberParams,
      response: OrganizationResponses.set
    }
  }, async (request) => ok(await sets.addMember(request.scope.organization, request.scope.get(parent), request.params.memberId)))

  app.delete('/:setId/members/:memberId', {
    config: { permission, parent, errors: [orgErrors.memberNotFound] },
    schema: {
      operationId: `remove${noun}Member`,
      tags,
      summary: `Take a member out of the ${label}`,
      params: SetMemberParams,
      response: OrganizationResponses.set
    }
  }, async (request) => ok(await sets.removeMember(request.scope.organization.orgId, request.scope.get(parent), request.params.memberId)))
}
