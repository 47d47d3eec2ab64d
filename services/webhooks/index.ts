import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { SecretBox } from '../platform/crypto.js'
import type { IdGenerator } from '../platform/ids.js'
import { AddressGuard, type ResolveAll } from '../outbound/internal-addresses.js'
import { OutboundPool } from '../outbound/pool.js'
import { isoString } from '../platform/iso-dates.js'
import type { Store } from '../store/types.js'
import {
  WEBHOOK_ALL_EVENTS, WEBHOOK_SYSTEM_EVENTS, type CreateWebhookBodyT, type ReplayResultT, type UpdateWebhookBodyT,
  type WebhookAttemptT, type WebhookDeliveryT, type WebhookNoticeT, type WebhookT, type WebhookWithSecretT
} from '../../schemas/webhooks.js'
import type { WebhooksConfig } from './config.js'
import { WebhookDeliverer } from './deliverer.js'
import { toAttemptView } from './attempt-outcome.js'
import { webhookErrors } from './errors.js'
import { WebhookHealth } from './health.js'
import { keysetPage, NEWEST_FIRST, type Page, type PageRequest } from './paging.js'
import { WebhookPublisher, type DeliveryQueue } from './publisher.js'
import type { DeliveryRecord, NoticeRecord, SubscriptionRecord, WebhookOwner } from './records.js'
import type { WebhookEventInput, WebhookSource } from './source.js'
import { WebhookSubscriptions } from './subscriptions.js'
import { WebhookUpkeep } from './sweeps.js'

export { WEBHOOK_DELIVER_JOB } from './publisher.js'
export { WEBHOOK_PRUNE_EVERY_MS, WEBHOOK_PRUNE_JOB, WEBHOOK_SWEEP_EVERY_MS, WEBHOOK_SWEEP_JOB } from './sweeps.js'
export type { WebhookOwner, SubscriptionRecord } from './records.js'
export type { WebhookEventInput, WebhookSource, WebhookSubscription } from './source.js'
export type { Page, PageRequest } from './paging.js'

/** The ports the engine is built from; the plugin passes the app's. */
export interface WebhookPorts {
  store: Store
  clock: Clock
  newId: IdGenerator
  /** Seals signing secrets at rest (the master key's box). */
  secrets: SecretBox
  /** Sealed keyset cursors, under a key of the engine's own. */
  cursors: Cursors
  /** The durable job queue: each delivery is a keyed job of type WEBHOOK_DELIVER_JOB. */
  jobs: DeliveryQueue
  config: WebhooksConfig
  /** How host names resolve for the address guard; the system resolver by default. */
  resolveAll?: ResolveAll
  /** Source of the retries' jitter; tests pass a fixed one. */
  random?: () => number
  onDisabled?: (notice: NoticeRecord) => void
}

function toDeliveryView (record: DeliveryRecord): WebhookDeliveryT {
  const iso = (date: Date | null): string | null => date === null ? null : isoString(date)
  return {
    id: record._id,
    webhookId: record.subscriptionId,
    type: record.type,
    occurredAt: isoString(record.occurredAt),
    status: record.status,
    trigger: record.trigger,
    attempts: record.attempts,
    nextAttemptAt: iso(record.nextAttemptAt),
    lastAttemptAt: iso(record.lastAttemptAt),
    lastResponseStatus: record.lastResponseStatus,
    lastError: record.lastError,
    createdAt: isoString(record.createdAt),
    finishedAt: iso(record.finishedAt)
  }
}

/**
 * The one outbound webhook engine, shared by every family that has events
 * (docs/webhooks.md). A family registers itself as a source, publishes its
 * events from its outbox, and its routes manage their owner's webhooks
 * through the methods below, taking the loaded subscription (`find`) where
 * one is named.
 */
export class Webhooks {
  readonly subscriptions: WebhookSubscriptions
  readonly publisher: WebhookPublisher
  readonly health: WebhookHealth
  readonly deliverer: WebhookDeliverer
  readonly upkeep: WebhookUpkeep
  private readonly sources = new Map<string, WebhookSource>()
  /** Kept-alive connections to the receivers, shared by every webhook's deliveries. */
  private readonly connections: OutboundPool

  constructor (private readonly ports: WebhookPorts) {
    const { store, clock, newId, cursors, config } = ports
    const source = (name: string): WebhookSource => this.source(name)
    const guard = new AddressGuard({ allowedHosts: config.allowedHosts, ...(ports.resolveAll === undefined ? {} : { resolveAll: ports.resolveAll }) })
    this.connections = new OutboundPool()
    this.subscriptions = new WebhookSubscriptions(store, { clock, newId, secrets: ports.secrets, guard, cursors, source })
    this.publisher = new WebhookPublisher(store, { clock, newId, jobs: ports.jobs, subscriptions: this.subscriptions.records, lists: this.subscriptions.lists, source, retentionMs: config.retentionMs })
    this.health = new WebhookHealth(store, {
      clock, newId, cursors, source, subscriptions: this.subscriptions.records, lists: this.subscriptions.lists, publisher: this.publisher, disableAfterFailures: config.disableAfterFailures, disableAfterMs: config.disableAfterMs, ...(ports.onDisabled === undefined ? {} : { onDisabled: ports.onDisabled })
    })
    this.deliverer = new WebhookDeliverer(store, {
      clock, newId, guard, connections: this.connections, source, subscriptions: this.subscriptions, publisher: this.publisher, health: this.health, timeoutMs: config.timeoutMs, maxAttempts: config.maxAttempts, maxAgeMs: config.maxAgeMs, ...(ports.random === undefined ? {} : { random: ports.random })
    })
    this.upkeep = new WebhookUpkeep(store, { clock, retentionMs: config.retentionMs })
  }

  async init (): Promise<void> {
    for (const part of [this.subscriptions, this.publisher, this.health, this.deliverer]) await part.init()
  }

  /** Closes the connections kept to receivers (the app is closing; the job worker has stopped). */
  close (): void {
    this.connections.close()
  }

  /** A family's events, once per name, before the app is ready. */
  registerSource (source: WebhookSource): void {
    if (!/^[a-z][a-z0-9-]{0,39}$/.test(source.name)) throw new Error(`webhook source name "${source.name}" must be lower-case letters, digits and -`)
    if (this.sources.has(source.name)) throw new Error(`webhook source "${source.name}" is registered twice`)
    this.sources.set(source.name, source)
  }

  source (name: string): WebhookSource {
    const source = this.sources.get(name)
    if (source === undefined) throw new Error(`no webhook source "${name}" is registered`)
    return source
  }

  // Subscriptions
  async find (owner: WebhookOwner, id: string): Promise<SubscriptionRecord | null> { return await this.subscriptions.find(owner, id) }
  async list (owner: WebhookOwner, page?: PageRequest): Promise<Page<WebhookT>> { return await this.subscriptions.list(owner, page) }
  async create (owner: WebhookOwner, input: CreateWebhookBodyT, createdBy: string | null): Promise<WebhookWithSecretT> {
    await this.source(owner.source).beforeSubscribe?.(owner.projectId)
    return await this.subscriptions.create(owner, input, createdBy)
  }

  async update (subscription: SubscriptionRecord, patch: UpdateWebhookBodyT): Promise<WebhookT> { return await this.subscriptions.update(subscription, patch) }
  async rotateSecret (subscription: SubscriptionRecord, options?: { previousExpiresInSeconds?: number }): Promise<WebhookWithSecretT> { return await this.subscriptions.rotateSecret(subscription, options) }

  /** The webhook, its deliveries and its log; jobs still queued for it find nothing and end. */
  async delete (subscription: SubscriptionRecord): Promise<void> {
    await this.subscriptions.records.deleteOne({ _id: subscription._id })
    await this.subscriptions.lists.changed(subscription)
    this.subscriptions.forget(subscription._id)
    await this.upkeep.purgeSubscription(subscription._id)
  }

  /** Whether the owner has a webhook, active or not: what a source's outbox asks before keeping an event nobody can be sent. */
  async subscribed (owner: WebhookOwner): Promise<boolean> {
    return (await this.subscriptions.lists.of(owner)).length > 0
  }

  /** See WebhookPublisher.publish and docs/webhooks.md, "Sources". */
  async publish (source: string, projectId: string, events: readonly WebhookEventInput[]): Promise<void> {
    await this.publisher.publish(source, projectId, events)
  }

  // The delivery log
  async deliveries (subscription: SubscriptionRecord, page?: PageRequest): Promise<Page<WebhookDeliveryT>> {
    const { docs, nextCursor } = await keysetPage(this.publisher.deliveries, { subscriptionId: subscription._id }, NEWEST_FIRST, page ?? {}, this.ports.cursors, 'deliveries')
    return { items: docs.map(toDeliveryView), nextCursor }
  }

  async delivery (subscription: SubscriptionRecord, deliveryId: string): Promise<WebhookDeliveryT> {
    return toDeliveryView(await this.deliveryRecord(subscription, deliveryId))
  }

  /** Every attempt of the webhook, newest first, or of one delivery. */
  async attempts (subscription: SubscriptionRecord, page?: PageRequest, options: { deliveryId?: string } = {}): Promise<Page<WebhookAttemptT>> {
    const filter = options.deliveryId === undefined ? { subscriptionId: subscription._id } : { subscriptionId: subscription._id, deliveryId: options.deliveryId }
    const { docs, nextCursor } = await keysetPage(this.deliverer.attempts, filter, NEWEST_FIRST, page ?? {}, this.ports.cursors, 'attempts')
    return { items: docs.map(toAttemptView), nextCursor }
  }

  /** The delivery again, now, as a new round of attempts, whatever became of it; the same event id. */
  async redeliver (subscription: SubscriptionRecord, deliveryId: string): Promise<WebhookDeliveryT> {
    const delivery = await this.deliveryRecord(subscription, deliveryId)
    if (delivery.trigger === 'test' || delivery.eventId?.startsWith('test:') === true) throw webhookErrors.deliveryTestOnly()
    if (!subscription.active) throw webhookErrors.webhookInactive()
    return toDeliveryView(await this.publisher.newRound(delivery, 'redeliver'))
  }

  async replay (subscription: SubscriptionRecord, range: { from: Date, to: Date, onlyFailed?: boolean }): Promise<ReplayResultT> {
    return await this.publisher.replay(subscription, range)
  }

  /** Sends a sample event of `type` (by default the webhook's first type) once, now, and answers the attempt. */
  async test (subscription: SubscriptionRecord, type?: string): Promise<WebhookAttemptT> {
    const source = this.source(subscription.source)
    const known = [...source.eventTypes, ...WEBHOOK_SYSTEM_EVENTS]
    const chosen = type ?? subscription.events.find((name) => name !== WEBHOOK_ALL_EVENTS) ?? source.eventTypes[0]
    if (!known.includes(chosen)) throw webhookErrors.unknownEvent({ type: chosen, known, path: 'body.type' })
    const sample = await source.sample(subscription.projectId, chosen)
    const now = this.ports.clock.now()
    return await this.deliverer.test(subscription, chosen, {
      _id: this.ports.newId(),
      projectId: subscription.projectId,
      source: subscription.source,
      key: 'test',
      type: chosen,
      occurredAt: sample.occurredAt,
      actor: sample.actor,
      data: sample.data,
      changes: sample.changes ?? null,
      matchOn: null,
      fannedOut: true,
      createdAt: now
    })
  }

  async notices (owner: WebhookOwner, page?: PageRequest): Promise<Page<WebhookNoticeT>> { return await this.health.list(owner, page) }

  // Jobs and upkeep
  /**
   * The `webhooks.deliver` job's handler: a webhook's owed attempts, or one
   * delivery's for a job queued by an earlier release; `leaseMs`, the lease
   * its claim took (see WebhookPublisher.holding).
   */
  async deliver (payload: { subscriptionId?: unknown, deliveryId?: unknown }, leaseMs = 0): Promise<{ outcome: string }> {
    const { subscriptionId } = payload
    if (typeof subscriptionId !== 'string') return await this.deliverer.run(String(payload.deliveryId))
    return await this.publisher.holding(subscriptionId, leaseMs, async () => await this.deliverer.runWebhook(subscriptionId))
  }

  async sweep (): Promise<{ swept: string[] }> { return await this.upkeep.sweep([...this.sources.values()]) }
  async prune (): Promise<{ deleted: number }> { return await this.upkeep.prune() }
  async purgeProject (projectId: string): Promise<void> {
    await this.upkeep.purgeProject(projectId)
    await this.subscriptions.lists.projectChanged(projectId)
  }

  private async deliveryRecord (subscription: SubscriptionRecord, deliveryId: string): Promise<DeliveryRecord> {
    const delivery = await this.publisher.deliveries.findOne({ _id: deliveryId })
    if (delivery === null || delivery.subscriptionId !== subscription._id) throw webhookErrors.deliveryNotFound()
    return delivery
  }
}

/** Builds the engine on its ports and creates its indexes; sources register on it afterwards. */
export async function buildWebhooks (ports: WebhookPorts): Promise<Webhooks> {
  const webhooks = new Webhooks(ports)
  await webhooks.init()
  return webhooks
}
