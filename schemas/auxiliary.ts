import { Type } from '@sinclair/typebox'
import { CreateWebhookBody, UpdateWebhookBody } from './webhooks.js'

/**
 * The auxiliary area (`/api/projects/:projectId/auxiliary`): the project's
 * automation and configuration — record webhooks, variables, schedules.
 * docs/auxiliary.md describes it. Record webhooks answer with the webhook
 * routes' shared schemas (schemas/webhook-routes.ts); what is theirs is the
 * filter, typed in their bodies.
 */

export const RecordWebhookFilterBody = Type.Object({
  collections: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: 50, description: 'The collections whose record events it receives' }),
  where: Type.Optional(Type.Unknown({ description: 'A Store filter (the data API\'s `filter` syntax) each record must match; denied fields are refused' })),
  fields: Type.Optional(Type.Union([Type.Array(Type.String({ minLength: 1, maxLength: 64 })), Type.Null()], { description: 'The fields sent besides id and the system fields; omitted for every field the read rules allow' }))
}, { additionalProperties: false, description: 'Which record events a webhook receives and what it sees of them' })

export const CreateRecordWebhookBody = Type.Composite([Type.Omit(CreateWebhookBody, ['filter']), Type.Object({ filter: RecordWebhookFilterBody })], { additionalProperties: false })
export const UpdateRecordWebhookBody = Type.Object({
  ...Type.Omit(UpdateWebhookBody, ['filter']).properties,
  filter: Type.Optional(RecordWebhookFilterBody)
}, { additionalProperties: false, minProperties: 1 })
