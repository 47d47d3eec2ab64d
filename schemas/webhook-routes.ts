import { Type, type TSchema } from '@sinclair/typebox'
import { Deleted, Id } from './common.js'
import { Created, Envelope } from './envelope.js'
import { ReplayResult, WEBHOOK_LIMITS, Webhook, WebhookAttempt, WebhookDelivery, WebhookNotice, WebhookWithSecret } from './webhooks.js'

/**
 * What the webhook routes add around the engine's views (schemas/webhooks.ts):
 * path parameters, list queries and each route's success answer. Every family
 * mounting webhook routes (routes/webhooks-shared.ts) answers with these.
 */

const InProject = { projectId: Id }
export const WebhookOwnerParams = Type.Object(InProject)
export const WebhookParams = Type.Object({ ...InProject, webhookId: Id })
export const WebhookDeliveryParams = Type.Object({
  ...InProject,
  webhookId: Id,
  deliveryId: Type.String({ minLength: 1, maxLength: 64, pattern: '^[0-9A-Za-z_:-]+$', description: 'A delivery\'s id, the event id its receiver got' })
})

export const WebhookListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: WEBHOOK_LIMITS.pageMax, default: WEBHOOK_LIMITS.pageDefault })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'The `nextCursor` of the previous page of the same list' }))
}, { additionalProperties: false })

const WebhookPage = <T extends TSchema>(item: T) => Type.Object({
  items: Type.Array(item),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last page' })
})

export const WebhookResponses = {
  webhook: { 200: Envelope(Type.Ref(Webhook)) },
  webhookList: { 200: Envelope(WebhookPage(Type.Ref(Webhook))) },
  created: { 201: Created(WebhookWithSecret) },
  rotated: { 200: Envelope(WebhookWithSecret) },
  deleted: { 200: Envelope(Deleted) },
  delivery: { 200: Envelope(Type.Ref(WebhookDelivery)) },
  deliveryList: { 200: Envelope(WebhookPage(Type.Ref(WebhookDelivery))) },
  attempt: { 200: Envelope(Type.Ref(WebhookAttempt)) },
  attemptList: { 200: Envelope(WebhookPage(Type.Ref(WebhookAttempt))) },
  noticeList: { 200: Envelope(WebhookPage(Type.Ref(WebhookNotice))) },
  replay: { 200: Envelope(ReplayResult) }
}
