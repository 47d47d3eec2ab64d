import type { Document } from '../store/types.js'
import type { EventRecord, FieldChanges, NoticeRecord, SubscriptionRecord, WebhookActor } from './records.js'

/**
 * What a family (a "source") gives the engine, and what it hands over for
 * each logical change. docs/webhooks.md, "Sources", says how the tracker and
 * the record webhooks fit it.
 */

/** One logical change, as a source publishes it. */
export interface WebhookEventInput {
  /**
   * Unique per logical change within the project and source, and the same
   * every time the change is published again (after a crash, by a sweep):
   * publishing a key twice delivers it once. The tracker's is
   * `<itemId>:<changeId>`.
   */
  key: string
  type: string
  occurredAt: Date
  actor: WebhookActor | null
  /** What the receiver gets as `data` (the source's public view of the thing changed). */
  data: Document
  /** `{ field: { from, to } }` for the fields the change touched, when the source knows them. */
  changes?: FieldChanges | null
  /** What the subscription's filter is matched against, when not `data` (the stored record, say); never sent. */
  matchOn?: Document | null
}

/** A subscription as a source's hooks see it, its filter as `checkFilter` answered it. */
export type WebhookSubscription = Pick<SubscriptionRecord, '_id' | 'projectId' | 'source' | 'events' | 'createdBy'> & { filter: unknown }

export function forSource (record: SubscriptionRecord): WebhookSubscription {
  return { _id: record._id, projectId: record.projectId, source: record.source, events: record.events, createdBy: record.createdBy, filter: record.filterJson === null ? null : JSON.parse(record.filterJson) }
}

export interface WebhookSource {
  /** Lower case, as subscriptions name it: `tracker`, `records`. */
  readonly name: string
  /** The types its events have; subscriptions name these (or `*`, and the system types). */
  readonly eventTypes: readonly string[]
  /**
   * Checks a filter when a subscription is saved and answers what to store
   * (null for none). Throws the source's own 400 naming `path`. Without this
   * hook a subscription takes no filter.
   */
  checkFilter?: (projectId: string, filter: unknown, path: string) => unknown | Promise<unknown>
  /** Whether an event concerns the subscription, by its stored filter (only called when the filter is not null). */
  matches?: (subscription: WebhookSubscription, event: EventRecord) => boolean | Promise<boolean>
  /** What this subscription may see of an event (a field mask); `data` and `changes` as published by default. */
  render?: (subscription: WebhookSubscription, event: EventRecord) => { data: Document, changes: FieldChanges | null } | Promise<{ data: Document, changes: FieldChanges | null }>
  /** A sample event of `type` for the test action; its key is ignored. */
  sample: (projectId: string, type: string) => WebhookEventInput | Promise<WebhookEventInput>
  /**
   * Publishes again what the source's outboxes hold for changes made at or
   * after `since` (publishing is idempotent per key) in the projects
   * `owners` names: those with a subscription to this source (a publish
   * where there is none delivers nothing, so the sweep reads nothing
   * there). The engine's sweep calls it about every minute, so an event
   * whose publish a crash cut short still goes out. A source whose every
   * publish is made by a durable job of its own may leave it out.
   */
  republish?: (since: Date, owners: readonly string[]) => Promise<void>
  /**
   * Called before a subscription of this source is saved, and the save waits
   * for it: a source whose outbox is written only where a subscription exists
   * starts writing it here, so no write acknowledged after the answer is missed.
   */
  beforeSubscribe?: (projectId: string) => Promise<void>
  /** Told when a subscription was disabled after sustained failure (to notify its owner in the family's own terms). */
  onDisabled?: (notice: NoticeRecord) => Promise<void>
}
