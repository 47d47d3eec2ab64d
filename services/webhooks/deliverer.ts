import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import type { AddressGuard } from '../outbound/internal-addresses.js'
import { isoString } from '../platform/iso-dates.js'
import { DeferJobError, retryDelayMs, type BackoffPolicy } from '../jobs/job.js'
import { outboundRequest } from '../outbound/http.js'
import type { OutboundPool } from '../outbound/pool.js'
import type { Store, StoreCollection } from '../store/types.js'
import { WEBHOOK_LIMITS, WEBHOOK_SYSTEM_EVENTS, type DeliveryStatus, type WebhookAttemptT, type WebhookPayloadT } from '../../schemas/webhooks.js'
import type { WebhookHealth } from './health.js'
import type { WebhookPublisher } from './publisher.js'
import { judge, toAttemptView } from './attempt-outcome.js'
import { WEBHOOK_COLLECTIONS, type AttemptRecord, type DeliveryRecord, type EventRecord, type SubscriptionRecord } from './records.js'
import { ATTEMPT_HEADER, EVENT_ID_HEADER, EVENT_TYPE_HEADER, REQUEST_ID_HEADER, SIGNATURE_HEADER, signatureHeader } from './signing.js'
import { forSource, type WebhookSource } from './source.js'
import type { WebhookSubscriptions } from './subscriptions.js'

export interface DelivererDeps {
  clock: Clock
  newId: IdGenerator
  guard: AddressGuard
  connections: OutboundPool
  subscriptions: WebhookSubscriptions
  publisher: WebhookPublisher
  health: WebhookHealth
  source: (name: string) => WebhookSource
  timeoutMs: number
  maxAttempts: number
  maxAgeMs: number
  /** Source of jitter; tests pass a fixed one. */
  random?: () => number
}

/** Retries: 30 s, then doubling up to 4 h, with equal jitter (half fixed, half random). */
export const WEBHOOK_BACKOFF: BackoffPolicy = { baseMs: 30_000, maxMs: 4 * 3_600_000 }
/** A Retry-After of 0 is taken as this, so a receiver cannot make the engine spin. */
const MIN_RETRY_AFTER_MS = 1000
const USER_AGENT = 'Plinth-Webhooks/1'
const SYSTEM_TYPES: ReadonlySet<string> = new Set(WEBHOOK_SYSTEM_EVENTS)
const FINISHED = new Set(['delivered', 'failed', 'skipped'])
const OWED: DeliveryStatus[] = ['pending', 'retrying']
/** Deliveries of one webhook sent at once by its job, and batches a run sends before it gives its slot up. */
const BATCH = 8
const BATCHES_PER_RUN = 16
/** How long a webhook's job waits after a run in which a delivery could not be attempted at all. */
const REFUSED_RUN_DELAY_MS = 5_000

function errorText (error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

/** An attempt made and judged, before its log entry and its delivery's state are written. */
interface Sent { delivery: DeliveryRecord, record: AttemptRecord, now: number }

/**
 * Makes the attempts: the `webhooks.deliver` job's handler (one attempt per
 * run; a retry goes back to the queue, due when the backoff and any
 * `Retry-After` allow and never sooner) and the test action.
 */
export class WebhookDeliverer {
  readonly attempts: StoreCollection<AttemptRecord>

  constructor (store: Store, private readonly deps: DelivererDeps) {
    this.attempts = store.collection<AttemptRecord>(WEBHOOK_COLLECTIONS.attempts)
  }

  async init (): Promise<void> {
    // A webhook's job reads what it owes, due first.
    await this.deps.publisher.deliveries.createIndex({ subscriptionId: 1, status: 1, nextAttemptAt: 1 })
    await this.attempts.createIndex({ subscriptionId: 1, _id: 1 })
    await this.attempts.createIndex({ deliveryId: 1, _id: 1 })
    await this.attempts.createIndex({ startedAt: 1 })
  }

  /**
   * The webhook's job: every attempt of its deliveries that is due, a batch
   * at a time (each delivery still its own request, signed and logged alone),
   * then back to the queue due when the next one is (a retry's backoff), or
   * finished when none is owed. One claim and one completion for a backlog
   * rather than one each per delivery (docs/webhooks.md, "Delivery").
   */
  async runWebhook (subscriptionId: string): Promise<{ outcome: string, sent: number }> {
    let moreToFanOut: boolean
    try {
      moreToFanOut = await this.deps.publisher.fanOut(subscriptionId)
    } catch (error) {
      throw new DeferJobError(`the webhook's events could not be fanned out: ${errorText(error)}`, REFUSED_RUN_DELAY_MS)
    }
    let sent = 0
    for (let batch = 0; batch < BATCHES_PER_RUN; batch++) {
      const due = await this.deps.publisher.deliveries.find(
        { subscriptionId, status: { $in: OWED }, nextAttemptAt: { $lte: this.deps.clock.now() } },
        { sort: { nextAttemptAt: 1, _id: 1 }, limit: BATCH }
      ).toArray()
      if (due.length === 0) break
      // Read once a batch: a webhook paused or disabled meanwhile skips what is left from the next batch on.
      const subscription = await this.deps.subscriptions.records.findOne({ _id: subscriptionId })
      const refused = await this.runBatch(due, subscription)
      // A delivery that could not be attempted (the store failing under it) keeps its own retry state; the webhook's
      // job is deferred, never spent, so a run of failures cannot leave its owed deliveries without a job.
      if (refused !== null) throw new DeferJobError(`a delivery could not be attempted: ${errorText(refused)}`, REFUSED_RUN_DELAY_MS)
      sent += due.length
      if (batch === BATCHES_PER_RUN - 1) throw new DeferJobError('more deliveries are due: the slot is given up between runs', 0)
    }
    if (moreToFanOut) throw new DeferJobError('more events are to be fanned out: the slot is given up between runs', 0)
    const [next] = await this.deps.publisher.deliveries.find(
      { subscriptionId, status: { $in: OWED }, nextAttemptAt: { $ne: null } },
      { sort: { nextAttemptAt: 1, _id: 1 }, limit: 1, projection: { nextAttemptAt: 1 } }
    ).toArray()
    if (next?.nextAttemptAt instanceof Date) throw new DeferJobError('the next attempt is not due yet', Math.max(0, next.nextAttemptAt.getTime() - this.deps.clock.nowMs()))
    return { outcome: sent === 0 ? 'nothing due' : 'sent', sent }
  }

  /** A job of one delivery (queued by an earlier release): one attempt of it if one is due. */
  async run (deliveryId: string): Promise<{ outcome: string }> {
    const delivery = await this.deps.publisher.deliveries.findOne({ _id: deliveryId })
    if (delivery === null || FINISHED.has(delivery.status)) return { outcome: 'nothing due' }
    const now = this.deps.clock.nowMs()
    if (delivery.nextAttemptAt !== null && delivery.nextAttemptAt.getTime() > now) throw new DeferJobError('the next attempt is not due yet', delivery.nextAttemptAt.getTime() - now)
    const attempt = await this.runOne(delivery, await this.deps.subscriptions.records.findOne({ _id: delivery.subscriptionId }))
    if (attempt.outcome === 'retry') {
      // A redelivery since the attempt wants its round now: finishing this run lets the queue run it again at once.
      const current = await this.deps.publisher.deliveries.findOne({ _id: deliveryId }, { projection: { round: 1 } })
      if (current?.round === delivery.round) throw new DeferJobError(`attempt ${attempt.attempt ?? ''}: ${attempt.error ?? ''}`, Math.max(0, (attempt.retryAt?.getTime() ?? now) - this.deps.clock.nowMs()))
    }
    return { outcome: attempt.outcome }
  }

  /**
   * A batch of a webhook's due deliveries: their requests at once, then their
   * log entries in one insert, then each delivery's state and the webhook's
   * health in turn, so a success after a sibling's failure in the same batch
   * still ends the streak. The first reason a delivery could not be
   * attempted, or null.
   */
  private async runBatch (due: DeliveryRecord[], subscription: SubscriptionRecord | null): Promise<unknown> {
    let events: Map<string, EventRecord>
    try {
      events = await this.eventsOf(due, subscription)
    } catch (error) {
      return error
    }
    const made = await Promise.allSettled(due.map(async (delivery) => await this.prepare(delivery, subscription, events)))
    const sent: Sent[] = []
    let refused: unknown = null
    for (const outcome of made) {
      if (outcome.status === 'rejected') refused ??= outcome.reason
      else if (outcome.value !== null) sent.push(outcome.value)
    }
    if (sent.length === 0 || subscription === null) return refused
    try {
      await this.attempts.insertMany(sent.map((attempt) => attempt.record))
    } catch (error) {
      // Unlogged attempts are not settled: each delivery is attempted again by the deferred run.
      return error
    }
    try {
      if (await this.settleDelivered(subscription, sent)) return refused
    } catch (error) {
      // Settling is a store write like the others: its failure defers the run, never spends the webhook's job.
      return error
    }
    const streak = { failedSinceRead: false }
    for (const attempt of sent) {
      try {
        await this.finish(subscription, attempt, false, streak)
      } catch (error) {
        refused ??= error
      }
    }
    return refused
  }

  /** The events of a batch's deliveries, read at once (none for a webhook whose deliveries are skipped). */
  private async eventsOf (due: DeliveryRecord[], subscription: SubscriptionRecord | null): Promise<Map<string, EventRecord>> {
    const ids = due.flatMap((delivery) => delivery.eventId === null ? [] : [delivery.eventId])
    if (subscription?.active !== true || ids.length === 0) return new Map()
    const events = await this.deps.publisher.events.find({ _id: { $in: ids } }).toArray()
    return new Map(events.map((event) => [event._id, event]))
  }

  /**
   * The usual batch, every attempt delivered at its same attempt number with
   * the same status: the deliveries settled by one write, each still fenced
   * on its round, the attempts' earliest start taken as their last attempt's
   * time (each log entry keeps its own). False, nothing written, when the
   * batch is not that, or when a round changed under it (then each is
   * settled alone again, which is the same write for the others).
   */
  private async settleDelivered (subscription: SubscriptionRecord, sent: Sent[]): Promise<boolean> {
    const [first] = sent
    if (sent.length < 2 || sent.some(({ record }) => record.outcome !== 'delivered' || record.attempt !== first.record.attempt || record.responseStatus !== first.record.responseStatus)) return false
    const startedAt = new Date(Math.min(...sent.map(({ record }) => record.startedAt.getTime())))
    const result = await this.deps.publisher.deliveries.updateMany(
      { $or: sent.map(({ delivery }) => ({ _id: delivery._id, round: delivery.round })) },
      { $set: { status: 'delivered', attempts: first.record.attempt, lastAttemptAt: startedAt, lastResponseStatus: first.record.responseStatus, lastError: null, nextAttemptAt: null, finishedAt: new Date(Math.max(...sent.map(({ now }) => now))) } }
    )
    if (result.matchedCount !== sent.length) return false
    await this.deps.health.succeeded(subscription)
    return true
  }

  /** A due delivery's request made (null: there was none to make, the delivery is settled already). */
  private async prepare (delivery: DeliveryRecord, subscription: SubscriptionRecord | null, events: Map<string, EventRecord>): Promise<Sent | null> {
    const found = await this.found(delivery, subscription, events)
    return typeof found === 'string' ? null : await this.send(found.subscription, delivery, found.event, false)
  }

  /** One attempt of a due delivery; skipped when its webhook is gone or inactive, failed when its event is no longer kept. */
  private async runOne (delivery: DeliveryRecord, subscription: SubscriptionRecord | null): Promise<{ outcome: string, attempt?: number, error?: string | null, retryAt?: Date | null }> {
    const found = await this.found(delivery, subscription)
    return typeof found === 'string' ? { outcome: found } : await this.attempt(found.subscription, delivery, found.event, false)
  }

  /** The webhook and event to send the delivery with, or the outcome it was settled with: skipped (webhook gone or inactive), failed (event no longer kept). */
  private async found (delivery: DeliveryRecord, subscription: SubscriptionRecord | null, events?: Map<string, EventRecord>): Promise<{ subscription: SubscriptionRecord, event: EventRecord } | 'skipped' | 'failed'> {
    if (subscription === null || !subscription.active) {
      const why = subscription === null ? 'the webhook was deleted' : subscription.disabled !== null ? 'the webhook was disabled' : 'the webhook is paused'
      await this.settle(delivery, { status: 'skipped', lastError: why, nextAttemptAt: null, finishedAt: this.deps.clock.now() })
      return 'skipped'
    }
    const event = delivery.eventId === null ? null : events !== undefined ? events.get(delivery.eventId) ?? null : await this.deps.publisher.events.findOne({ _id: delivery.eventId })
    if (event === null) {
      await this.settle(delivery, { status: 'failed', lastError: 'the event is no longer kept', nextAttemptAt: null, finishedAt: this.deps.clock.now() })
      return 'failed'
    }
    return { subscription, event }
  }

  /**
   * The test action: a sample event of `type`, sent once now (no retries),
   * kept in the delivery log as a `test` delivery. It neither counts toward
   * nor clears a failure streak.
   */
  async test (subscription: SubscriptionRecord, type: string, sample: EventRecord): Promise<WebhookAttemptT> {
    const now = this.deps.clock.now()
    const delivery: DeliveryRecord = {
      _id: this.deps.newId(),
      subscriptionId: subscription._id,
      projectId: subscription.projectId,
      source: subscription.source,
      eventId: `test:${sample._id}`,
      type,
      occurredAt: sample.occurredAt,
      status: 'pending',
      trigger: 'test',
      round: 0,
      attempts: 0,
      roundStartedAt: now,
      nextAttemptAt: null,
      lastAttemptAt: null,
      lastResponseStatus: null,
      lastError: null,
      createdAt: now,
      finishedAt: null
    }
    await this.deps.publisher.deliveries.insertOne(delivery)
    return toAttemptView(await this.attempt(subscription, delivery, sample, true))
  }

  /** One POST, logged; the delivery and the webhook's health updated from its outcome. */
  private async attempt (subscription: SubscriptionRecord, delivery: DeliveryRecord, event: EventRecord, test: boolean): Promise<AttemptRecord> {
    const sent = await this.send(subscription, delivery, event, test)
    await this.attempts.insertOne(sent.record)
    return await this.finish(subscription, sent, test, { failedSinceRead: false })
  }

  /** One POST and what it means, not yet written anywhere. */
  private async send (subscription: SubscriptionRecord, delivery: DeliveryRecord, event: EventRecord, test: boolean): Promise<Sent> {
    const number = delivery.attempts + 1
    const requestId = this.deps.newId()
    const body = JSON.stringify(await this.payload(subscription, delivery, event, test))
    const timestamp = Math.floor(this.deps.clock.nowMs() / 1000)
    const headers = {
      'content-type': 'application/json',
      'user-agent': USER_AGENT,
      [SIGNATURE_HEADER]: signatureHeader(this.deps.subscriptions.signingSecrets(subscription), timestamp, body),
      [EVENT_ID_HEADER]: delivery._id,
      [EVENT_TYPE_HEADER]: delivery.type,
      [ATTEMPT_HEADER]: String(number),
      [REQUEST_ID_HEADER]: requestId
    }
    const startedAt = this.deps.clock.now()
    const started = performance.now()
    const result = await outboundRequest(this.deps.guard, { method: 'POST', url: subscription.url, headers, body }, { timeoutMs: this.deps.timeoutMs, maxResponseBytes: WEBHOOK_LIMITS.responseExcerptBytes }, this.deps.connections)
    const durationMs = Math.round(performance.now() - started)
    const now = this.deps.clock.nowMs()
    let verdict = judge(result, now)
    let retryAt: Date | null = null
    if (verdict.outcome === 'retry') {
      // The receiver's Retry-After, when it gives one, is when it asked to be called again: that time, never sooner.
      const delay = verdict.retryAfterMs === null ? retryDelayMs(number, WEBHOOK_BACKOFF, this.deps.random) : Math.max(verdict.retryAfterMs, MIN_RETRY_AFTER_MS)
      if (test) verdict = { outcome: 'failed', why: verdict.why }
      else if (number >= this.deps.maxAttempts) verdict = { outcome: 'failed', why: `${verdict.why}; gave up after ${number} attempts` }
      else if (now + delay - delivery.roundStartedAt.getTime() > this.deps.maxAgeMs) verdict = { outcome: 'failed', why: `${verdict.why}; the next attempt would come later than ${this.deps.maxAgeMs / 3_600_000} h after the delivery was asked for` }
      else retryAt = new Date(now + delay)
    }
    const answered = result.kind === 'answered' ? result : null
    const record: AttemptRecord = {
      _id: requestId,
      deliveryId: delivery._id,
      subscriptionId: subscription._id,
      projectId: subscription.projectId,
      source: subscription.source,
      type: delivery.type,
      attempt: number,
      round: delivery.round,
      trigger: delivery.trigger,
      url: subscription.url,
      startedAt,
      durationMs,
      outcome: verdict.outcome,
      responseStatus: answered?.status ?? null,
      error: verdict.outcome === 'delivered' ? null : verdict.why,
      responseExcerpt: answered === null ? null : answered.body.toString('utf8'),
      responseTruncated: answered?.truncated ?? false,
      retryAt
    }
    return { delivery, record, now }
  }

  /**
   * A logged attempt's delivery settled and the webhook's health told;
   * `streak.failedSinceRead` says a failure was counted since `subscription`
   * was read (a sibling in the same batch), so a success must end it.
   */
  private async finish (subscription: SubscriptionRecord, sent: Sent, test: boolean, streak: { failedSinceRead: boolean }): Promise<AttemptRecord> {
    const { delivery, record, now } = sent
    const { retryAt, startedAt } = record
    const settled = await this.settle(delivery, {
      status: record.outcome === 'delivered' ? 'delivered' : record.outcome === 'retry' ? 'retrying' : 'failed',
      attempts: record.attempt,
      lastAttemptAt: startedAt,
      lastResponseStatus: record.responseStatus,
      lastError: record.error,
      nextAttemptAt: retryAt,
      finishedAt: retryAt === null ? new Date(now) : null
    })
    // A redelivery started a new round meanwhile: its own run reports; this round's outcome changes nothing more.
    if (!settled) return { ...record, outcome: record.outcome === 'retry' ? 'failed' : record.outcome, retryAt: null }
    if (!test) {
      if (record.outcome === 'delivered') {
        await this.deps.health.succeeded(subscription, streak.failedSinceRead)
        streak.failedSinceRead = false
      } else {
        streak.failedSinceRead = true
        await this.deps.health.failed(subscription, record.outcome === 'failed', record.error ?? '')
      }
    }
    return record
  }

  private async payload (subscription: SubscriptionRecord, delivery: DeliveryRecord, event: EventRecord, test: boolean): Promise<WebhookPayloadT> {
    const source = this.deps.source(subscription.source)
    const shown = SYSTEM_TYPES.has(event.type) || source.render === undefined
      ? { data: event.data, changes: event.changes }
      : await source.render(forSource(subscription), event)
    return {
      id: delivery._id,
      type: event.type,
      occurredAt: isoString(event.occurredAt),
      source: subscription.source,
      projectId: subscription.projectId,
      webhookId: subscription._id,
      actor: event.actor,
      data: shown.data,
      ...(shown.changes === null ? {} : { changes: shown.changes }),
      ...(test ? { test: true as const } : {})
    }
  }

  /** Changes the delivery if its round is still the one this run read; false when a new round began. */
  private async settle (delivery: DeliveryRecord, set: Partial<DeliveryRecord>): Promise<boolean> {
    const result = await this.deps.publisher.deliveries.updateOne({ _id: delivery._id, round: delivery.round }, { $set: set })
    return result.matchedCount === 1
  }
}
