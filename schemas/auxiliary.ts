import { Type } from '@sinclair/typebox'
import { Created, Envelope } from './envelope.js'
import { Deleted, Id } from './common.js'
import {
  CreateWebhookBody, ReplayBody, ReplayResult, RotateSecretBody, TestWebhookBody, UpdateWebhookBody, WEBHOOK_LIMITS,
  Webhook, WebhookAttempt, WebhookDelivery, WebhookNotice, WebhookWithSecret
} from './webhooks.js'

/**
 * The auxiliary area (`/api/projects/:projectId/auxiliary`): the project's
 * automation and configuration — record webhooks, variables, schedules.
 * docs/auxiliary.md describes it.
 */

export const AuxiliaryParams = Type.Object({ projectId: Id })
export const RecordWebhookParams = Type.Object({ projectId: Id, webhookId: Id })
export const RecordDeliveryParams = Type.Object({ projectId: Id, webhookId: Id, deliveryId: Type.String({ minLength: 1, maxLength: 64, pattern: '^[0-9A-Za-z_-]+$' }) })

export const AuxiliaryPageQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: WEBHOOK_LIMITS.pageMax, default: WEBHOOK_LIMITS.pageDefault })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'The `nextCursor` of the previous page' }))
}, { additionalProperties: false })

export const AttemptsQuery = Type.Composite([AuxiliaryPageQuery, Type.Object({
  deliveryId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Only the attempts of this delivery (event id)' }))
})], { additionalProperties: false })

const NextCursor = Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last page' })
const PageOf = <T extends ReturnType<typeof Type.Ref>>(item: T) => Type.Object({ items: Type.Array(item), nextCursor: NextCursor })

export const RecordWebhookFilterBody = Type.Object({
  collections: Type.Array(Type.String({ minLength: 1, maxLength: 64 }), { minItems: 1, maxItems: 50, description: 'The collections whose record events it receives' }),
  where: Type.Optional(Type.Unknown({ description: 'A Store filter (the data API\'s `filter` syntax) each record must match; denied fields are refused' })),
  fields: Type.Optional(Type.Union([Type.Array(Type.String({ minLength: 1, maxLength: 64 })), Type.Null()], { description: 'The fields sent besides id and the system fields; omitted for every field the read rules allow' }))
}, { additionalProperties: false, description: 'Which record events a webhook receives and what it sees of them' })

export const CreateRecordWebhookBody = Type.Composite([Type.Omit(CreateWebhookBody, ['filter']), Type.Object({ filter: RecordWebhookFilterBody })], { additionalProperties: false })
// Written out rather than derived from CreateWebhookBody: its `active` carries a default, which the validator would fill
// in on a patch that leaves `active` out, activating a disabled webhook (and making an empty patch non-empty).
export const UpdateRecordWebhookBody = Type.Object({
  ...Type.Omit(UpdateWebhookBody, ['filter', 'active']).properties,
  active: Type.Optional(Type.Boolean({ description: 'false pauses it; true activates it again, clearing a disable and its failure streak' })),
  filter: Type.Optional(RecordWebhookFilterBody)
}, { additionalProperties: false, minProperties: 1 })
export { ReplayBody, RotateSecretBody, TestWebhookBody }

export const AuxiliaryResponses = {
  webhookList: { 200: Envelope(PageOf(Type.Ref(Webhook))) },
  webhookCreated: { 201: Created(WebhookWithSecret) },
  webhook: { 200: Envelope(Type.Ref(Webhook)) },
  webhookWithSecret: { 200: Envelope(WebhookWithSecret) },
  deliveryList: { 200: Envelope(PageOf(Type.Ref(WebhookDelivery))) },
  delivery: { 200: Envelope(Type.Ref(WebhookDelivery)) },
  attemptList: { 200: Envelope(PageOf(Type.Ref(WebhookAttempt))) },
  attempt: { 200: Envelope(Type.Ref(WebhookAttempt)) },
  replay: { 200: Envelope(ReplayResult) },
  noticeList: { 200: Envelope(PageOf(Type.Ref(WebhookNotice))) },
  deleted: { 200: Envelope(Deleted) }
}
