import { Type, type Static } from '@sinclair/typebox'
import { DateTime, Id } from './common.js'
import { Envelope } from './envelope.js'
import { WEBHOOK_LIMITS } from './webhooks.js'

export const AuditLogParams = Type.Object({ orgId: Id })

export const AuditLogQuery = Type.Object({
  actor: Type.Optional(Id),
  action: Type.Optional(Type.String({ minLength: 1, maxLength: 200, pattern: '^[0-9A-Za-z_ /:.-]+$', description: 'An operation id (`addMember`), or a method and route template for routes without one' })),
  target: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: 'The id (or path name) of the thing changed' })),
  since: Type.Optional(DateTime),
  until: Type.Optional(DateTime),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: WEBHOOK_LIMITS.pageMax, default: WEBHOOK_LIMITS.pageDefault })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'The `nextCursor` of the previous page of the same list and filters' }))
}, { additionalProperties: false })
export type AuditLogQueryT = Static<typeof AuditLogQuery>

export const AuditEntryView = Type.Object({
  id: Type.String(),
  at: DateTime,
  orgId: Type.Union([Type.String(), Type.Null()], { description: 'Null for a change to the actor\'s own account (a sign-in, a PAT, an SSH key)' }),
  projectId: Type.Union([Type.String(), Type.Null()]),
  actor: Type.Object({
    userId: Type.String(),
    credential: Type.Union([Type.Literal('session'), Type.Literal('pat'), Type.Literal('password'), Type.Literal('sso')])
  }),
  address: Type.String(),
  action: Type.String(),
  method: Type.String(),
  route: Type.String({ description: 'The route\'s template' }),
  target: Type.Object({
    id: Type.Union([Type.String(), Type.Null()]),
    params: Type.Record(Type.String(), Type.String())
  }),
  summary: Type.Object({
    status: Type.Integer(),
    fields: Type.Array(Type.String(), { description: 'The names of the fields the request set; their values are never kept' })
  })
}, { additionalProperties: false })

export const AuditResponses = {
  list: { 200: Envelope(Type.Object({ items: Type.Array(AuditEntryView), nextCursor: Type.Union([Type.String(), Type.Null()]) })) }
}
