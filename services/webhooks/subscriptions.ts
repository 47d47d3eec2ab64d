import { BoundedMap } from '../cache/bounded-map.js'
import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { SecretBox } from '../platform/crypto.js'
import { commonErrors } from '../platform/errors.js'
import type { IdGenerator } from '../platform/ids.js'
import type { AddressGuard } from '../outbound/internal-addresses.js'
import { isoString } from '../platform/iso-dates.js'
import type { Store, StoreCollection } from '../store/types.js'
import {
  WEBHOOK_ALL_EVENTS, WEBHOOK_LIMITS, WEBHOOK_SYSTEM_EVENTS, type CreateWebhookBodyT, type UpdateWebhookBodyT, type WebhookT, type WebhookWithSecretT
} from '../../schemas/webhooks.js'
import { webhookErrors } from './errors.js'
import { keysetPage, OLDEST_FIRST, type Page, type PageRequest } from './paging.js'
import { SubscriptionLists } from './subscription-lists.js'
import { WEBHOOK_COLLECTIONS, type SealedSecret, type SubscriptionRecord, type WebhookOwner } from './records.js'
import { newWebhookSecret } from './signing.js'
import type { WebhookSource } from './source.js'
import type { SealedValues } from '../platform/reseal.js'

export interface SubscriptionDeps {
  clock: Clock
  newId: IdGenerator
  secrets: SecretBox
  guard: AddressGuard
  cursors: Cursors
  source: (name: string) => WebhookSource
}

/** Webhooks whose secrets are kept opened; one past it opens its secrets again, nothing worse. */
const OPENED_CAPACITY = 1024

const sealedFor = (subscriptionId: string, secretId: string): string => `webhook:${subscriptionId}:${secretId}`

/** Every signing secret of a subscription (the current one and those in their grace), for the re-seal job. */
export const sealedWebhookSecrets: SealedValues = {
  collection: WEBHOOK_COLLECTIONS.subscriptions,
  values: (doc) => (doc.secrets as SubscriptionRecord['secrets']).map((secret, index) => ({ path: `secrets.${index}.sealed`, sealed: secret.sealed, associatedData: sealedFor(doc._id as string, secret.id) }))
}

export function toWebhookView (record: SubscriptionRecord): WebhookT {
  return {
    id: record._id,
    source: record.source,
    url: record.url,
    events: record.events,
    filter: record.filterJson === null ? null : JSON.parse(record.filterJson),
    active: record.active,
    description: record.description,
    secrets: record.secrets.map((secret) => ({ id: secret.id, createdAt: isoString(secret.createdAt), expiresAt: secret.expiresAt === null ? null : isoString(secret.expiresAt) })),
    disabled: record.disabled === null ? null : { at: isoString(record.disabled.at), reason: record.disabled.reason },
    failures: { count: record.failures.count, since: record.failures.since === null ? null : isoString(record.failures.since) },
    createdBy: record.createdBy,
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt)
  }
}

/** Subscriptions (webhooks) of each owner: what they receive, where, and the secrets that sign it. */
export class WebhookSubscriptions {
  readonly records: StoreCollection<SubscriptionRecord>
  /** Each owner's list as publishes read it; told of every change here. */
  readonly lists: SubscriptionLists
  /** Signing secrets opened, by webhook (`signingSecrets`): opening one per delivery was a tenth of a delivery's cost. */
  private readonly opened = new BoundedMap<string, { stamp: string, secrets: readonly string[] }>(OPENED_CAPACITY)

  constructor (store: Store, private readonly deps: SubscriptionDeps) {
    this.records = store.collection<SubscriptionRecord>(WEBHOOK_COLLECTIONS.subscriptions)
    this.lists = new SubscriptionLists(store, this.records, deps.newId)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ projectId: 1, source: 1, _id: 1 })
    // The sweep's question: which projects have a subscription to a source (services/webhooks/sweeps.ts).
    await this.records.createIndex({ source: 1, projectId: 1 })
    await this.lists.init()
  }

  /** The owner's subscription, or null: the routes' parent loader. */
  async find (owner: WebhookOwner, id: string): Promise<SubscriptionRecord | null> {
    const record = await this.records.findOne({ _id: id })
    return record === null || record.projectId !== owner.projectId || record.source !== owner.source ? null : record
  }

  async get (owner: WebhookOwner, id: string): Promise<SubscriptionRecord> {
    const record = await this.find(owner, id)
    if (record === null) throw webhookErrors.webhookNotFound()
    return record
  }

  async list (owner: WebhookOwner, page: PageRequest = {}): Promise<Page<WebhookT>> {
    const { docs, nextCursor } = await keysetPage(this.records, { projectId: owner.projectId, source: owner.source }, OLDEST_FIRST, page, this.deps.cursors, 'subscriptions')
    return { items: docs.map(toWebhookView), nextCursor }
  }

  async create (owner: WebhookOwner, input: CreateWebhookBodyT, createdBy: string | null): Promise<WebhookWithSecretT> {
    const source = this.deps.source(owner.source)
    const url = await this.checkUrl(input.url, 'body.url')
    const events = this.checkEvents(source, input.events)
    const filterJson = await this.checkFilter(source, owner.projectId, input.filter)
    if (await this.records.countDocuments({ projectId: owner.projectId, source: owner.source }) >= WEBHOOK_LIMITS.perOwner) throw webhookErrors.limitReached({ limit: WEBHOOK_LIMITS.perOwner })
    const now = this.deps.clock.now()
    const _id = this.deps.newId()
    const secret = newWebhookSecret()
    const record: SubscriptionRecord = {
      _id,
      projectId: owner.projectId,
      source: owner.source,
      url,
      events,
      filterJson,
      active: input.active ?? true,
      description: input.description?.trim() ?? '',
      secrets: [this.seal(_id, secret, now)],
      disabled: null,
      failures: { count: 0, since: null },
      createdBy,
      createdAt: now,
      updatedAt: now
    }
    await this.records.insertOne(record)
    await this.lists.changed(owner)
    return { webhook: toWebhookView(record), secret }
  }

  /** Activating a webhook again clears what disabled it, so its failures count afresh. */
  async update (record: SubscriptionRecord, patch: UpdateWebhookBodyT): Promise<WebhookT> {
    const source = this.deps.source(record.source)
    const set: Partial<SubscriptionRecord> = { updatedAt: this.deps.clock.now() }
    if (patch.url !== undefined) set.url = await this.checkUrl(patch.url, 'body.url')
    if (patch.events !== undefined) set.events = this.checkEvents(source, patch.events)
    if (patch.filter !== undefined) set.filterJson = await this.checkFilter(source, record.projectId, patch.filter)
    if (patch.description !== undefined) set.description = patch.description.trim()
    if (patch.active !== undefined) {
      set.active = patch.active
      if (patch.active && !record.active) Object.assign(set, { disabled: null, failures: { count: 0, since: null } })
    }
    const updated = await this.records.findOneAndUpdate({ _id: record._id }, { $set: set }, { returnDocument: 'after' })
    if (updated === null) throw webhookErrors.webhookNotFound()
    await this.lists.changed(updated)
    return toWebhookView(updated)
  }

  /**
   * A new current secret, shown this once; the one it replaces keeps signing
   * beside it for `previousExpiresInSeconds` (both signatures are sent), so
   * the receiver can switch without losing a delivery. An older previous
   * secret is dropped: at most two sign.
   */
  async rotateSecret (record: SubscriptionRecord, options: { previousExpiresInSeconds?: number } = {}): Promise<WebhookWithSecretT> {
    const grace = options.previousExpiresInSeconds ?? WEBHOOK_LIMITS.previousSecretDefaultSeconds
    if (!Number.isInteger(grace) || grace < 0 || grace > WEBHOOK_LIMITS.previousSecretMaxSeconds) {
      throw commonErrors.validationFailed({ fields: [{ path: 'body.previousExpiresInSeconds', message: `must be a whole number of seconds from 0 to ${WEBHOOK_LIMITS.previousSecretMaxSeconds}` }] })
    }
    const now = this.deps.clock.now()
    const secret = newWebhookSecret()
    const current = record.secrets[0]
    const secrets = grace === 0 ? [this.seal(record._id, secret, now)] : [this.seal(record._id, secret, now), { ...current, expiresAt: new Date(now.getTime() + grace * 1000) }]
    const updated = await this.records.findOneAndUpdate({ _id: record._id }, { $set: { secrets, updatedAt: now } }, { returnDocument: 'after' })
    if (updated === null) throw webhookErrors.webhookNotFound()
    return { webhook: toWebhookView(updated), secret }
  }

  /**
   * The secrets that sign now, current first, opened. Opened once per
   * webhook and set of sealed secrets: the set as stored is the entry's
   * stamp, so a rotation (or a re-seal) replaces the entry on the next
   * delivery, and a deleted webhook's goes with it. Plaintext lives only in
   * this process's memory, as it does while a delivery is signed.
   */
  signingSecrets (record: SubscriptionRecord): string[] {
    const now = this.deps.clock.nowMs()
    const stamp = record.secrets.map((secret) => secret.sealed).join(' ')
    let kept = this.opened.get(record._id)
    if (kept === undefined || kept.stamp !== stamp) {
      kept = { stamp, secrets: record.secrets.map((secret) => this.deps.secrets.open(secret.sealed, sealedFor(record._id, secret.id))) }
      this.opened.set(record._id, kept)
    }
    const opened = kept.secrets
    return record.secrets.flatMap((secret, index) => secret.expiresAt === null || secret.expiresAt.getTime() > now ? [opened[index]] : [])
  }

  /** A deleted webhook's opened secrets leave this process's memory now rather than when the cache makes room. */
  forget (subscriptionId: string): void {
    this.opened.delete(subscriptionId)
  }

  private seal (subscriptionId: string, secret: string, now: Date): SealedSecret {
    const id = this.deps.newId()
    return { id, sealed: this.deps.secrets.seal(secret, sealedFor(subscriptionId, id)), createdAt: now, expiresAt: null }
  }

  /**
   * An http(s) URL without credentials whose host reaches no internal
   * address the operator has not allowed. A host that does not resolve yet
   * is taken: every delivery checks again.
   */
  private async checkUrl (raw: string, path: string): Promise<string> {
    let url: URL
    try { url = new URL(raw) } catch { throw webhookErrors.invalidUrl({ why: 'is not a valid URL', path }) }
    if (url.protocol !== 'https:' && url.protocol !== 'http:') throw webhookErrors.invalidUrl({ why: 'must start with https:// or http://', path })
    if (url.username !== '' || url.password !== '') throw webhookErrors.invalidUrl({ why: 'may not hold credentials: receivers check the signature instead', path })
    if (url.href.length > WEBHOOK_LIMITS.urlLength) throw webhookErrors.invalidUrl({ why: `is longer than ${WEBHOOK_LIMITS.urlLength} characters`, path })
    const verdict = await this.deps.guard.check(url)
    if (!verdict.ok && !verdict.unresolved) throw webhookErrors.urlForbidden({ kind: verdict.kind, path })
    url.hash = ''
    return url.href
  }

  private checkEvents (source: WebhookSource, events: readonly string[]): string[] {
    const known = [...source.eventTypes, ...WEBHOOK_SYSTEM_EVENTS, WEBHOOK_ALL_EVENTS]
    events.forEach((type, index) => {
      if (!known.includes(type)) throw webhookErrors.unknownEvent({ type, known, path: `body.events[${index}]` })
    })
    if (events.length === 0) throw commonErrors.validationFailed({ fields: [{ path: 'body.events', message: 'must name at least one event type' }] })
    return [...new Set(events)]
  }

  /** The filter as the source checked it, kept as JSON text; null for none. */
  private async checkFilter (source: WebhookSource, projectId: string, filter: unknown): Promise<string | null> {
    if (filter === undefined || filter === null) return null
    if (source.checkFilter === undefined) throw commonErrors.validationFailed({ fields: [{ path: 'body.filter', message: `is not taken by ${source.name} webhooks` }] })
    const checked = await source.checkFilter(projectId, filter, 'body.filter')
    return checked === null || checked === undefined ? null : JSON.stringify(checked)
  }
}
