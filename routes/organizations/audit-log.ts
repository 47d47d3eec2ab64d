import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Static } from '@sinclair/typebox'
import { AuditEntryView, AuditLogParams, AuditLogQuery, AuditResponses } from '../../schemas/audit.js'
import { commonErrors } from '../../services/platform/errors.js'
import type { AuditEntry } from '../../services/audit/log.js'
import { ok } from '../replies.js'

function view (entry: AuditEntry): Static<typeof AuditEntryView> {
  return {
    id: entry._id,
    at: entry.at.toISOString(),
    orgId: entry.orgId,
    projectId: entry.projectId,
    actor: { userId: entry.actorId, credential: entry.credential },
    address: entry.address,
    action: entry.action,
    method: entry.method,
    route: entry.route,
    target: { id: entry.targetId, params: entry.params },
    summary: { status: entry.status, fields: entry.fields }
  }
}

/** `/api/organizations/:orgId/audit-log`: who changed what in the organization (docs/audit.md). */
const auditLogRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('', {
    config: { permission: 'audit.read', errors: [commonErrors.invalidCursor] },
    schema: {
      operationId: 'listAuditLog',
      tags: ['organizations'],
      summary: 'The organization\'s audit log, newest first',
      description: 'Changes made in the organization, and the account changes (sign-ins, PATs, SSH keys) of its current members. ' +
        'Filter by `actor`, `action`, `target` and a time range (`since` inclusive, `until` exclusive); page with `nextCursor`.',
      params: AuditLogParams,
      querystring: AuditLogQuery,
      response: AuditResponses.list
    }
  }, async (request) => {
    const orgId = request.scope.organization.orgId
    const members = (await app.orgs.organizations.listMembers(orgId)).map((member) => member.id)
    const { actor, action, target, since, until, limit, cursor } = request.query
    const page = await app.audit.list(orgId, members, {
      actorId: actor,
      action,
      targetId: target,
      since: since === undefined ? undefined : new Date(since),
      until: until === undefined ? undefined : new Date(until)
    }, { limit, cursor })
    return ok({ items: page.items.map(view), nextCursor: page.nextCursor })
  })
}

export default auditLogRoutes
