import { Type, type Static } from '@sinclair/typebox'
import { DateTime, Id } from './common.js'

/**
 * Outbound webhooks, one engine for every family that has events (the
 * tracker's, the auxiliary area's record webhooks): the views its services
 * answer and the bodies its routes take. docs/webhooks.md describes them.
 */
export const WEBHOOK_LIMITS = {
  /** Webhooks of one family in one platform project. */
  perOwner: 25,
  urlLength: 2048,
  descriptionLength: 500,
  eventTypes: 50,
  pageDefault: 50,
  pageMax: 200,
  /** Bytes of a receiver's answer read back and kept in the delivery log. */
  responseExcerptBytes: 4096,
  /** Events one replay may queue; a longer range is replayed in parts. */
  replayMax: 5000,
  /** How long the previous secret keeps signing after a rotation, by default and at most. */
  previousSecretDefaultSeconds: 24 * 3600,
  previousSecretMaxSeconds: 7 * 24 * 3600
} as const

/** Types every family's webhooks may subscribe to beside the family's own. */
export const WEBHOOK_SYSTEM_EVENTS = ['webhook.disabled'] as const
/** Subscribes to every type the family has, and to the system events. */
export const WEBHOOK_ALL_EVENTS = '*'

const EventType = Type.String({ minLength: 1, maxLength: 100, description: 'An event type of the family (`work_item.updated`, `record.created`), `webhook.disabled`, or `*` for all', examples: ['work_item.updated'] })

export const WebhookSecretInfo = Type.Object({
  id: Type.String(),
  createdAt: DateTime,
  expiresAt: Type.Union([DateTime, Type.Null()], { description: 'When a rotated-out secret stops signing; null for the current one' })
}, { description: 'A signing secret, never its value: that is shown once, when it is made' })

export const Webhook = Type.Object({
  id: Id,
  source: Type.String({ description: 'The family whose events it receives: `tracker`, `records`' }),
  url: Type.String({ description: 'The receiver: events are POSTed here' }),
  events: Type.Array(EventType),
  filter: Type.Unknown({ description: 'The family\'s own filter, as it was saved; null for every event of the types' }),
  active: Type.Boolean({ description: 'False when paused by hand or disabled after sustained failure (`disabled` says which)' }),
  description: Type.String(),
  secrets: Type.Array(WebhookSecretInfo, { description: 'One, or two while a rotation\'s previous secret still signs: receivers get a `v1=` signature for each' }),
  disabled: Type.Union([Type.Object({ at: DateTime, reason: Type.String() }), Type.Null()], { description: 'Set when the engine disabled it after sustained failure; cleared when it is activated again' }),
  failures: Type.Object({
    count: Type.Integer({ description: 'Deliveries failed in a row (each after its retries)' }),
    since: Type.Union([DateTime, Type.Null()], { description: 'The first failed attempt since the last success' })
  }),
  createdBy: Type.Union([Type.String(), Type.Null()]),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'Webhook' })

export const WebhookWithSecret = Type.Object({
  webhook: Webhook,
  secret: Type.String({ description: 'The new signing secret (`whsec_…`), shown this once: it is stored sealed and never returned again' })
})

export const DELIVERY_STATUSES = ['pending', 'retrying', 'delivered', 'failed', 'skipped'] as const
export const DELIVERY_TRIGGERS = ['event', 'redeliver', 'replay', 'test'] as const

export const WebhookDelivery = Type.Object({
  id: Type.String({ description: 'The event id receivers get (`id` in the payload, `Plinth-Event-Id`): one per logical change and webhook, the same on every attempt, redelivery and replay' }),
  webhookId: Type.String(),
  type: Type.String(),
  occurredAt: DateTime,
  status: Type.Union(DELIVERY_STATUSES.map((status) => Type.Literal(status)), { description: '`skipped`: the webhook was disabled or paused before it went out' }),
  trigger: Type.Union(DELIVERY_TRIGGERS.map((trigger) => Type.Literal(trigger)), { description: 'What asked for the current round of attempts' }),
  attempts: Type.Integer({ description: 'Attempts in the current round' }),
  nextAttemptAt: Type.Union([DateTime, Type.Null()]),
  lastAttemptAt: Type.Union([DateTime, Type.Null()]),
  lastResponseStatus: Type.Union([Type.Integer(), Type.Null()]),
  lastError: Type.Union([Type.String(), Type.Null()]),
  createdAt: DateTime,
  finishedAt: Type.Union([DateTime, Type.Null()])
}, { $id: 'WebhookDelivery' })

export const WebhookAttempt = Type.Object({
  id: Type.String({ description: 'The request id, sent as `Plinth-Request-Id`' }),
  deliveryId: Type.String({ description: 'The event id' }),
  webhookId: Type.String(),
  type: Type.String(),
  attempt: Type.Integer({ description: 'The attempt\'s number in its round, sent as `Plinth-Delivery-Attempt`' }),
  trigger: Type.Union(DELIVERY_TRIGGERS.map((trigger) => Type.Literal(trigger))),
  url: Type.String(),
  startedAt: DateTime,
  durationMs: Type.Integer({ description: 'From the first byte sent to the last byte read' }),
  outcome: Type.Union([Type.Literal('delivered'), Type.Literal('retry'), Type.Literal('failed')]),
  responseStatus: Type.Union([Type.Integer(), Type.Null()], { description: 'Null when no answer came (network error, timeout, refused address)' }),
  error: Type.Union([Type.String(), Type.Null()]),
  responseExcerpt: Type.Union([Type.String(), Type.Null()], { description: `At most ${WEBHOOK_LIMITS.responseExcerptBytes} bytes of the answer, as UTF-8` }),
  responseTruncated: Type.Boolean(),
  retryAt: Type.Union([DateTime, Type.Null()], { description: 'When the next attempt is due, for an outcome of `retry`' })
}, { $id: 'WebhookAttempt' })

export const WebhookNotice = Type.Object({
  id: Type.String(),
  webhookId: Type.String(),
  type: Type.Literal('webhook.disabled'),
  reason: Type.String(),
  at: DateTime,
  consecutiveFailures: Type.Integer(),
  failingSince: Type.Union([DateTime, Type.Null()]),
  lastError: Type.Union([Type.String(), Type.Null()])
}, { $id: 'WebhookNotice' })

export const ReplayResult = Type.Object({
  matched: Type.Integer({ description: 'Events in the range this webhook takes' }),
  queued: Type.Integer({ description: 'Deliveries queued again (or for the first time)' }),
  truncated: Type.Boolean({ description: `True when the range held more than ${WEBHOOK_LIMITS.replayMax} such events: replay the rest from the last one's time` }),
  through: Type.Union([DateTime, Type.Null()], { description: 'The time of the last event replayed' })
})

const WebhookFields = {
  url: Type.String({ minLength: 1, maxLength: WEBHOOK_LIMITS.urlLength, format: 'uri', description: 'An `https://` (or `http://`) URL without credentials' }),
  events: Type.Array(EventType, { minItems: 1, maxItems: WEBHOOK_LIMITS.eventTypes }),
  filter: Type.Optional(Type.Unknown({ description: 'The family\'s filter (see its docs); omitted or null for every event of the types' })),
  description: Type.Optional(Type.String({ maxLength: WEBHOOK_LIMITS.descriptionLength }))
}

export const CreateWebhookBody = Type.Object({
  ...WebhookFields,
  active: Type.Optional(Type.Boolean({ default: true }))
}, { additionalProperties: false })

// `active` carries no default here: the validator would fill it in on a patch that leaves it out, activating a
// disabled webhook (and making an empty patch non-empty).
export const UpdateWebhookBody = Type.Partial(Type.Object({
  ...WebhookFields,
  active: Type.Boolean({ description: 'false pauses it; true activates it again, clearing a disable and its failure streak' })
}), { additionalProperties: false, minProperties: 1 })

export const RotateSecretBody = Type.Object({
  previousExpiresInSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: WEBHOOK_LIMITS.previousSecretMaxSeconds, description: `How long the current secret keeps signing beside the new one (default ${WEBHOOK_LIMITS.previousSecretDefaultSeconds}); 0 retires it at once` }))
}, { additionalProperties: false })

export const ReplayBody = Type.Object({
  from: DateTime,
  to: DateTime,
  onlyFailed: Type.Optional(Type.Boolean({ description: 'Leave events already delivered to this webhook alone' }))
}, { additionalProperties: false })

export const TestWebhookBody = Type.Object({
  type: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'The sample event\'s type; the webhook\'s first type by default' }))
}, { additionalProperties: false })

/** What a receiver gets: the body of every delivery (docs/webhooks.md). */
export const WebhookPayload = Type.Object({
  id: Type.String({ description: 'The event id: the same on every retry, redelivery and replay, so receivers deduplicate by it' }),
  type: Type.String(),
  occurredAt: DateTime,
  source: Type.String(),
  projectId: Type.String(),
  webhookId: Type.String(),
  actor: Type.Union([Type.Object({ type: Type.String(), id: Type.Union([Type.String(), Type.Null()]) }), Type.Null()]),
  data: Type.Record(Type.String(), Type.Unknown()),
  changes: Type.Optional(Type.Record(Type.String(), Type.Object({ from: Type.Unknown(), to: Type.Unknown() }))),
  test: Type.Optional(Type.Literal(true))
})

export const webhookSchemas = [Webhook, WebhookDelivery, WebhookAttempt, WebhookNotice]
export type WebhookT = Static<typeof Webhook>
export type WebhookWithSecretT = Static<typeof WebhookWithSecret>
export type WebhookDeliveryT = Static<typeof WebhookDelivery>
export type WebhookAttemptT = Static<typeof WebhookAttempt>
export type WebhookNoticeT = Static<typeof WebhookNotice>
export type ReplayResultT = Static<typeof ReplayResult>
export type CreateWebhookBodyT = Static<typeof CreateWebhookBody>
export type UpdateWebhookBodyT = Static<typeof UpdateWebhookBody>
export type WebhookPayloadT = Static<typeof WebhookPayload>
export type DeliveryStatus = typeof DELIVERY_STATUSES[number]
export type DeliveryTrigger = typeof DELIVERY_TRIGGERS[number]
