import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CreateSetBody, OrgParams, Responses, SetMemberParams, SetParams, UpdateSetBody } from '../../schemas/organizations.js'
import { orgAccess } from '../../plugins/permissions.js'
import type { Permission } from '../../services/orgs/catalogue.js'
import type { MemberSets } from '../../services/orgs/member-sets.js'
import { createdAt } from '../location.js'

interface MemberSetRouteOptions {
  sets: MemberSets
  /** PascalCase noun for operation ids: Team, PermissionGroup. */
  noun: string
  permission: Permission
}

/**
 * Teams and permission groups have the same routes: list, create, get,
 * update, delete, and add or remove one member — what GitHub and GitLab
 * users expect of teams. Any member may look; changing needs `permission`.
 */
export const memberSetRoutes: FastifyPluginAsyncTypebox<MemberSetRouteOptions> = async (app, { sets, noun, permission }) => {
  const tags = ['organizations']
  const label = noun === 'Team' ? 'team' : 'permission group'
  const plural = `${noun}s`

  app.get('', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.read'),
    schema: { operationId: `list${plural}`, tags, summary: `List the organization's ${label}s`, description: 'Needs `org.read`.', params: OrgParams, response: Responses.setList }
  }, async (request) => ({ success: true as const, data: await sets.list(request.params.orgId) }))

  app.post('', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission(permission),
    schema: { operationId: `create${noun}`, tags, summary: `Create a ${label} with members and grants`, description: `Needs \`${permission}\`. Location names the new ${label}.`, params: OrgParams, body: CreateSetBody, response: Responses.setCreated }
  }, async (request, reply) => {
    const set = await sets.create(orgAccess(request), request.body)
    return reply.code(201).header('location', createdAt(request, set.id)).send({ success: true as const, data: set })
  })

  app.get('/:setId', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('org.read'),
    schema: { operationId: `get${noun}`, tags, summary: `One ${label}`, description: 'Needs `org.read`.', params: SetParams, response: Responses.set }
  }, async (request) => ({ success: true as const, data: await sets.get(request.params.orgId, request.params.setId) }))

  app.put('/:setId', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission(permission),
    schema: { operationId: `update${noun}`, tags, summary: `Change a ${label}'s name, description, grants or members`, description: `Needs \`${permission}\`; members must belong to the organization.`, params: SetParams, body: UpdateSetBody, response: Responses.setChanged }
  }, async (request) => ({ success: true as const, data: await sets.update(orgAccess(request), request.params.setId, request.body) }))

  app.delete('/:setId', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission(permission),
    schema: { operationId: `delete${noun}`, tags, summary: `Delete a ${label}; its members keep their own roles and grants`, description: `Needs \`${permission}\`.`, params: SetParams, response: Responses.deleted }
  }, async (request) => {
    await sets.delete(request.params.orgId, request.params.setId)
    return { success: true as const, data: { id: request.params.setId, deleted: true as const } }
  })

  app.put('/:setId/members/:memberId', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission(permission),
    schema: { operationId: `add${noun}Member`, tags, summary: `Put an organization member in the ${label}`, description: `Needs \`${permission}\`; the user must be a member of the organization.`, params: SetMemberParams, response: Responses.setChanged }
  }, async (request) => ({ success: true as const, data: await sets.addMember(orgAccess(request), request.params.setId, request.params.memberId) }))

  app.delete('/:setId/members/:memberId', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission(permission),
    schema: { operationId: `remove${noun}Member`, tags, summary: `Take a member out of the ${label}`, description: `Needs \`${permission}\`.`, params: SetMemberParams, response: Responses.setChanged }
  }, async (request) => ({ success: true as const, data: await sets.removeMember(request.params.orgId, request.params.setId, request.params.memberId) }))
}
