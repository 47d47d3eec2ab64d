import type { Document, WithId } from '../store/types.js'
import type { DeliveryStatus, DeliveryTrigger } from '../../schemas/webhooks.js'

/** The engine's collections and what they hold; docs/webhooks.md describes the model. */
export const WEBHOOK_COLLECTIONS = {
  subscriptions: 'webhook_subscriptions',
  events: 'webhook_events',
  deliveries: 'webhook_deliveries',
  attempts: 'webhook_attempts',
  notices: 'webhook_notices',
  sweeps: 'webhook_sweeps',
  /** A stamp per owner, new at every change of its webhooks (SubscriptionLists). */
  owners: 'webhook_owners'
} as const

/** Whose webhooks: a platform project and the family (source) whose events they take. */
export interface WebhookOwner { projectId: string, source: string }

export type WebhookActor = { type: string, id: string | null }
export type FieldChanges = Record<string, { from: unknown, to: unknown }>

export interface SealedSecret {
  id: string
  /** SecretBox-sealed, bound to the subscription and this id. */
  sealed: string
  createdAt: Date
  /** When a rotated-out secret stops signing; null for the current one. */
  expiresAt: Date | null
}

export type SubscriptionRecord = WithId<{
  projectId: string
  source: string
  url: string
  events: string[]
  /** The source's filter as JSON text (a Store filter's `$` operators are no field names a document may hold); null for none. */
  filterJson: string | null
  active: boolean
  description: string
  /** The current secret first, then at most one rotated-out one. */
  secrets: SealedSecret[]
  disabled: { at: Date, reason: string } | null
  failures: { count: number, since: Date | null }
  createdBy: string | null
  createdAt: Date
  updatedAt: Date
}>

/** One logical change of a source, once per project and key: what every delivery of it is rendered from. */
export type EventRecord = WithId<{
  projectId: string
  source: string
  key: string
  type: string
  occurredAt: Date
  actor: WebhookActor | null
  data: Document
  changes: FieldChanges | null
  /** What the source's filter is matched against, when that is not `data`; never sent. */
  matchOn: Document | null
  /** False until a webhook's job made its deliveries (`WebhookPublisher.fanOut`); true from the start when no active webhook took it. */
  fannedOut: boolean
  /**
   * The webhooks that took it when it was kept (active, its type, its filter): the fan-out makes their deliveries and
   * nobody else's, so a webhook paused, resumed or changed between the publish and its job gets what it took then.
   * Absent on events kept before it existed and on the engine's own events, judged at the fan-out instead.
   */
  takers?: string[]
  /** An id made when it was kept: the order webhooks' jobs fan events out in (absent on rows kept before it existed). */
  seq?: string
  /** Its owner and `seq` while it waits for its fan-out, absent once fanned out: the fan-out's one index key (fan-out-queue.ts). */
  pending?: string
  createdAt: Date
}>

/** One event for one subscription; its id is the event id the receiver sees. */
export type DeliveryRecord = WithId<{
  subscriptionId: string
  projectId: string
  source: string
  /** The EventRecord's id, or null for a test delivery (whose event lives only in `test`). */
  eventId: string | null
  type: string
  occurredAt: Date
  status: DeliveryStatus
  trigger: DeliveryTrigger
  /** Counts the rounds (each redelivery or replay starts one): every change of a round is conditional on it. */
  round: number
  attempts: number
  roundStartedAt: Date
  nextAttemptAt: Date | null
  lastAttemptAt: Date | null
  lastResponseStatus: number | null
  lastError: string | null
  createdAt: Date
  finishedAt: Date | null
}>

export type AttemptRecord = WithId<{
  deliveryId: string
  subscriptionId: string
  projectId: string
  source: string
  type: string
  attempt: number
  round: number
  trigger: DeliveryTrigger
  url: string
  startedAt: Date
  durationMs: number
  outcome: 'delivered' | 'retry' | 'failed'
  responseStatus: number | null
  error: string | null
  responseExcerpt: string | null
  responseTruncated: boolean
  retryAt: Date | null
}>

export type NoticeRecord = WithId<{
  projectId: string
  source: string
  subscriptionId: string
  type: 'webhook.disabled'
  reason: string
  at: Date
  consecutiveFailures: number
  failingSince: Date | null
  lastError: string | null
}>

/** How far each source's outboxes were swept for publishes a crash cut short. */
export type SweepRecord = WithId<{ sweptFrom: Date, updatedAt: Date }>
