import type { Clock } from '../platform/clock.js'
import { orderRange, type SortKey } from '../collections/query.js'
import type { IdGenerator } from '../platform/ids.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Store, StoreCollection } from '../store/types.js'
import { WEBHOOK_ALL_EVENTS, WEBHOOK_LIMITS, WEBHOOK_SYSTEM_EVENTS, type DeliveryTrigger, type ReplayResultT } from '../../schemas/webhooks.js'
import { isoString } from '../platform/iso-dates.js'
import { webhookErrors } from './errors.js'
import { WEBHOOK_COLLECTIONS, type DeliveryRecord, type EventRecord, type SubscriptionRecord, type WebhookOwner } from './records.js'
import type { SubscriptionLists } from './subscription-lists.js'
import { forSource, type WebhookEventInput, type WebhookSource } from './source.js'
import { initFanOutQueue, pendingKey, pendingRange } from './fan-out-queue.js'

/**
 * The job that makes a webhook's attempts; keyed by the webhook, so one run
 * at a time sends what it owes (jobs keyed by one delivery, from an earlier
 * release, are still run).
 */
export const WEBHOOK_DELIVER_JOB = 'webhooks.deliver'

/** The slice of the job queue the engine uses. */
export interface DeliveryQueue {
  enqueueKeyed: (type: string, key: string, payload: Record<string, unknown>, options?: { dueNow?: boolean }) => Promise<void>
  enqueueKeyedMany: (type: string, jobs: ReadonlyArray<{ key: string, payload: Record<string, unknown> }>) => Promise<void>
}

export interface PublisherDeps {
  clock: Clock
  newId: IdGenerator
  jobs: DeliveryQueue
  subscriptions: StoreCollection<SubscriptionRecord>
  lists: Pick<SubscriptionLists, 'of'>
  source: (name: string) => WebhookSource
  retentionMs: number
}

const SYSTEM_TYPES: ReadonlySet<string> = new Set(WEBHOOK_SYSTEM_EVENTS)
const REPLAY_PAGE = 500
/** Events written per insert; a publish of more goes in slices (a Store write stays within a transaction's bounds). */
const PUBLISH_SLICE = 200
/** Events a webhook's job fans out per read. */
const FAN_OUT_PAGE = 200
// Pages one job run fans out before it sends: a backlog is fanned out over several runs, each within its lease.
const FAN_OUT_PAGES_PER_RUN = 5
const REPLAY_ORDER: SortKey[] = [['occurredAt', 1], ['_id', 1]]

/**
 * A run of a webhook's job that this process holds: `asked` once a publish's
 * `enqueueKeyed` returned while it ran, so the job is marked to run again when
 * it ends; trusted until `until` (local ms), well inside the lease the claim
 * took, so no other process can have claimed the job meanwhile.
 */
interface HeldRun { asked: boolean, until: number }

const eventIdOf = (owner: WebhookOwner, key: string): string => `${owner.projectId}:${owner.source}:${key}`

/**
 * Turns published events into deliveries. An event is kept once per owner
 * and key (its id derives from them), and a delivery once per subscription
 * and event (a unique index), each with one keyed job: publishing the same
 * change twice, or finishing a publish a crash cut short, delivers it once.
 */
export class WebhookPublisher {
  readonly events: StoreCollection<EventRecord>
  readonly deliveries: StoreCollection<DeliveryRecord>
  /** Webhooks whose job runs in this process now (see `queue`). */
  private readonly held = new Map<string, HeldRun>()

  constructor (store: Store, private readonly deps: PublisherDeps) {
    this.events = store.collection<EventRecord>(WEBHOOK_COLLECTIONS.events)
    this.deliveries = store.collection<DeliveryRecord>(WEBHOOK_COLLECTIONS.deliveries)
  }

  async init (): Promise<void> {
    await this.events.createIndex({ projectId: 1, source: 1, occurredAt: 1, _id: 1 })
    await this.events.createIndex({ createdAt: 1 })
    await initFanOutQueue(this.events)
    await this.deliveries.createIndex({ subscriptionId: 1, eventId: 1 }, { unique: true })
    await this.deliveries.createIndex({ subscriptionId: 1, _id: 1 })
    await this.deliveries.createIndex({ createdAt: 1 })
  }

  /**
   * Hands a source's events to the engine: called with what the source's
   * outbox holds, after the write that holds it (see docs/webhooks.md,
   * "Sources"). Nothing is kept when the owner has no webhook at all; while
   * it has only paused or disabled ones, events are kept for replays.
   */
  async publish (sourceName: string, projectId: string, inputs: readonly WebhookEventInput[]): Promise<void> {
    if (inputs.length === 0) return
    const source = this.deps.source(sourceName)
    for (const input of inputs) checkInput(source, input)
    const owner = { projectId, source: sourceName }
    const subscriptions = await this.deps.lists.of(owner)
    if (subscriptions.length === 0) return
    for (let i = 0; i < inputs.length; i += PUBLISH_SLICE) await this.publishSlice(source, owner, inputs.slice(i, i + PUBLISH_SLICE), subscriptions)
  }

  /**
   * The events of a slice, written by one insert, then each webhook that
   * takes one of them made due: no delivery is made here. An event some
   * active webhook takes is kept `fannedOut: false`, and the webhook's job
   * makes the deliveries of everything not yet fanned out, a page at a time
   * (`fanOut`); one no active webhook takes is kept fanned out already (a
   * paused webhook's events wait for a replay). An insert that meets a key
   * kept already (a publish finishing what a crash or another process's
   * publish began) keeps the others one at a time; the jobs are made due
   * either way, so an event kept before a crash is fanned out by them.
   */
  private async publishSlice (source: WebhookSource, owner: WebhookOwner, inputs: readonly WebhookEventInput[], subscriptions: readonly SubscriptionRecord[]): Promise<void> {
    const active = subscriptions.filter((subscription) => subscription.active)
    const takers = new Set<string>()
    const events: EventRecord[] = []
    for (const input of inputs) {
      const event = this.eventRecord(owner, input)
      const takenBy: string[] = []
      for (const subscription of active) {
        if (await this.takes(source, subscription, event)) takenBy.push(subscription._id)
      }
      for (const id of takenBy) takers.add(id)
      const { pending, ...kept } = event
      events.push(takenBy.length === 0 ? { ...kept, fannedOut: true, takers: takenBy } : { ...kept, pending, takers: takenBy })
    }
    try {
      await this.events.insertMany(events)
    } catch (error) {
      if (!(error instanceof DuplicateKeyError)) throw error
      for (const event of events) {
        try {
          await this.events.insertOne(event)
        } catch (error) {
          if (!(error instanceof DuplicateKeyError)) throw error
        }
      }
    }
    for (const subscriptionId of takers) await this.queue(subscriptionId)
  }

  /**
   * Makes the deliveries of the owner's events not yet fanned out, oldest
   * first, a page at a time: one read, one insert of the page's deliveries
   * (to the webhooks that took each event when it was kept, `takers`), the
   * other takers' jobs made due, then one update marking the page fanned out
   * — in that order, so a crash between them leaves the page to fan out again
   * rather than a delivery with no job. Run by a webhook's job before it
   * sends; any of the owner's webhooks' jobs may do it for all of them. A
   * delivery made already (another job's fan-out at the same time) is kept
   * once by the unique index. At most `FAN_OUT_PAGES_PER_RUN` pages a run:
   * answers whether events are left for the next one.
   */
  async fanOut (subscriptionId: string): Promise<boolean> {
    const self = await this.deps.subscriptions.findOne({ _id: subscriptionId }, { projection: { projectId: 1, source: 1 } })
    if (self === null) return false
    const owner = { projectId: self.projectId, source: self.source }
    const source = this.deps.source(owner.source)
    for (let pages = 0; pages < FAN_OUT_PAGES_PER_RUN; pages++) {
      const page = await this.events.find({ pending: pendingRange(owner) }, { sort: { pending: 1 }, limit: FAN_OUT_PAGE }).toArray()
      if (page.length === 0) return false
      const subscriptions = await this.deps.lists.of(owner)
      const byId = new Map(subscriptions.map((subscription) => [subscription._id, subscription]))
      const deliveries: DeliveryRecord[] = []
      const pairs: Array<[SubscriptionRecord, EventRecord]> = []
      for (const event of page) {
        for (const subscription of await this.takersOf(source, event, subscriptions, byId)) {
          deliveries.push(this.deliveryRecord(subscription, event, 'event'))
          pairs.push([subscription, event])
        }
      }
      if (deliveries.length > 0) {
        try {
          await this.deliveries.insertMany(deliveries)
        } catch (error) {
          if (!(error instanceof DuplicateKeyError)) throw error
          for (const [subscription, event] of pairs) await this.ensureDelivery(subscription, event, 'event', false)
        }
      }
      for (const other of new Set(deliveries.map((delivery) => delivery.subscriptionId))) if (other !== subscriptionId) await this.queue(other)
      await this.events.updateMany({ _id: { $in: page.map((event) => event._id) } }, { $set: { fannedOut: true }, $unset: { pending: '' } })
      if (page.length < FAN_OUT_PAGE) return false
    }
    return true
  }

  /**
   * Who gets an event's deliveries: the webhooks that took it when it was kept and still exist (a paused one's
   * delivery is then skipped when its job sends, as any delivery of a webhook paused before it went out). An event
   * kept without `takers` (an earlier release's, or the engine's own) is judged now: the active webhooks that take
   * it and existed when it was kept.
   */
  private async takersOf (source: WebhookSource, event: EventRecord, subscriptions: readonly SubscriptionRecord[], byId: ReadonlyMap<string, SubscriptionRecord>): Promise<SubscriptionRecord[]> {
    if (event.takers !== undefined) return event.takers.flatMap((id) => byId.get(id) ?? [])
    const takers: SubscriptionRecord[] = []
    for (const subscription of subscriptions) {
      if (!subscription.active || subscription.createdAt.getTime() > event.createdAt.getTime()) continue
      if (await this.takes(source, subscription, event)) takers.push(subscription)
    }
    return takers
  }

  /** An event of the engine's own (`webhook.disabled`) to the owner's other webhooks that take it. */
  async publishSystem (owner: WebhookOwner, input: WebhookEventInput): Promise<void> {
    const subscriptions = await this.deps.subscriptions.find({ projectId: owner.projectId, source: owner.source, active: true }).toArray()
    const takers = subscriptions.filter((subscription) => subscription.events.includes(input.type) || subscription.events.includes(WEBHOOK_ALL_EVENTS))
    if (takers.length === 0) return
    await this.publishOne(this.deps.source(owner.source), owner, input, takers)
  }

  /** An event as kept waiting for its fan-out; a publish that fans it out itself, or has no taker, sets `fannedOut`. */
  private eventRecord (owner: WebhookOwner, input: WebhookEventInput): EventRecord {
    const seq = this.deps.newId()
    return {
      _id: eventIdOf(owner, input.key),
      projectId: owner.projectId,
      source: owner.source,
      key: input.key,
      type: input.type,
      occurredAt: input.occurredAt,
      actor: input.actor,
      data: input.data,
      changes: input.changes ?? null,
      matchOn: input.matchOn ?? null,
      fannedOut: false,
      seq,
      pending: pendingKey(owner, seq),
      createdAt: this.deps.clock.now()
    }
  }

  private async publishOne (source: WebhookSource, owner: WebhookOwner, input: WebhookEventInput, subscriptions: readonly SubscriptionRecord[]): Promise<void> {
    let event = this.eventRecord(owner, input)
    try {
      await this.events.insertOne(event)
    } catch (error) {
      if (!(error instanceof DuplicateKeyError)) throw error
      const kept = await this.events.findOne({ _id: event._id })
      if (kept === null || kept.fannedOut) return
      event = kept
    }
    for (const subscription of subscriptions) {
      if (subscription.active && await this.takes(source, subscription, event)) await this.ensureDelivery(subscription, event, 'event')
    }
    await this.events.updateOne({ _id: event._id }, { $set: { fannedOut: true }, $unset: { pending: '' } })
  }

  /** Whether the subscription takes the event: its types, then (for the source's own types) its filter. */
  async takes (source: WebhookSource, subscription: SubscriptionRecord, event: EventRecord): Promise<boolean> {
    if (!subscription.events.includes(event.type) && !subscription.events.includes(WEBHOOK_ALL_EVENTS)) return false
    if (SYSTEM_TYPES.has(event.type) || subscription.filterJson === null || source.matches === undefined) return true
    return await source.matches(forSource(subscription), event)
  }

  private deliveryRecord (subscription: SubscriptionRecord, event: EventRecord, trigger: DeliveryTrigger): DeliveryRecord {
    const now = this.deps.clock.now()
    return {
      _id: this.deps.newId(),
      subscriptionId: subscription._id,
      projectId: subscription.projectId,
      source: subscription.source,
      eventId: event._id,
      type: event.type,
      occurredAt: event.occurredAt,
      status: 'pending',
      trigger,
      round: 0,
      attempts: 0,
      roundStartedAt: now,
      nextAttemptAt: now,
      lastAttemptAt: null,
      lastResponseStatus: null,
      lastError: null,
      createdAt: now,
      finishedAt: null
    }
  }

  /** The subscription's delivery of the event, made and queued if there is none yet. */
  private async ensureDelivery (subscription: SubscriptionRecord, event: EventRecord, trigger: DeliveryTrigger, queue = true): Promise<{ delivery: DeliveryRecord, created: boolean }> {
    const delivery = this.deliveryRecord(subscription, event, trigger)
    try {
      await this.deliveries.insertOne(delivery)
      if (queue) await this.queue(subscription._id)
      return { delivery, created: true }
    } catch (error) {
      if (!(error instanceof DuplicateKeyError)) throw error
    }
    const existing = await this.deliveries.findOne({ subscriptionId: subscription._id, eventId: event._id })
    if (existing === null) throw new Error(`delivery of ${event._id} to ${subscription._id} vanished`)
    // A publish cut short may have made the delivery and not its job; a second job run finds a finished delivery and ends.
    if (trigger === 'event' && queue) await this.queue(subscription._id)
    return { delivery: existing, created: false }
  }

  /**
   * Sends a delivery again as a new round (a redelivery, a replay): its
   * attempts and age count afresh, and the round's number fences every
   * change the previous round's job might still make.
   */
  async newRound (delivery: DeliveryRecord, trigger: DeliveryTrigger): Promise<DeliveryRecord> {
    const now = this.deps.clock.now()
    const updated = await this.deliveries.findOneAndUpdate(
      { _id: delivery._id },
      { $set: { status: 'pending', trigger, attempts: 0, roundStartedAt: now, nextAttemptAt: now, lastError: null, finishedAt: null }, $inc: { round: 1 } },
      { returnDocument: 'after' }
    )
    if (updated === null) throw webhookErrors.deliveryNotFound()
    await this.queue(updated.subscriptionId)
    return updated
  }

  /**
   * Makes the webhook's job run now: queued if it is not, hurried if it
   * waits for a retry's time, asked to run again if it runs (so what was
   * just made owed is read by a run that begins after it). Called after the
   * rows are written. Skipped while this process holds the job's run and has
   * asked it to run again already: that run ends after this call, in this
   * process, and is then queued again at once, so the run after it begins
   * after these rows were written. A run held elsewhere, or one that has
   * ended, is always asked again (test/services/webhooks/rearm.test.ts).
   */
  private async queue (subscriptionId: string): Promise<void> {
    const held = this.held.get(subscriptionId)
    if (held?.asked === true && this.deps.clock.nowMs() < held.until) return
    await this.deps.jobs.enqueueKeyed(WEBHOOK_DELIVER_JOB, subscriptionId, { subscriptionId }, { dueNow: true })
    // Only the run that was held before the call and still is: the call then found that run's job running, and marked it.
    if (held !== undefined && this.held.get(subscriptionId) === held) held.asked = true
  }

  /**
   * Runs `run` as the webhook's job run this process claimed with a lease of
   * `leaseMs`; a publish meanwhile may rely on the run being asked again
   * (`queue`) for half the lease, a margin for clocks and the handler's start.
   */
  async holding<T> (subscriptionId: string, leaseMs: number, run: () => Promise<T>): Promise<T> {
    const held: HeldRun = { asked: false, until: this.deps.clock.nowMs() + Math.max(0, leaseMs) / 2 }
    this.held.set(subscriptionId, held)
    try {
      return await run()
    } finally {
      if (this.held.get(subscriptionId) === held) this.held.delete(subscriptionId)
    }
  }

  /**
   * Sends a time range of the owner's events to one webhook again, oldest
   * first: each event it takes (by its types and filter today) gets a new
   * round, or its first delivery if it had none (it was paused or disabled
   * then). A delivery still under way is left to finish.
   */
  async replay (subscription: SubscriptionRecord, range: { from: Date, to: Date, onlyFailed?: boolean }): Promise<ReplayResultT> {
    if (!subscription.active) throw webhookErrors.webhookInactive()
    const now = this.deps.clock.nowMs()
    if (!(range.from.getTime() < range.to.getTime())) throw webhookErrors.invalidRange({ why: 'must end after it starts' })
    if (range.from.getTime() < now - this.deps.retentionMs) throw webhookErrors.invalidRange({ why: `reaches further back than events are kept (${Math.round(this.deps.retentionMs / 86_400_000)} days)` })
    const source = this.deps.source(subscription.source)
    const owner = { projectId: subscription.projectId, source: subscription.source }
    const result: ReplayResultT = { matched: 0, queued: 0, truncated: false, through: null }
    let after: unknown[] | null = null
    for (;;) {
      const window = { ...owner, occurredAt: { $gte: range.from, $lt: range.to } }
      const bound = orderRange(REPLAY_ORDER, after, null)
      const page = await this.events.find(Object.keys(bound).length === 0 ? window : { $and: [window, bound] }, { sort: Object.fromEntries(REPLAY_ORDER), limit: REPLAY_PAGE }).toArray()
      for (const event of page) {
        if (!await this.takes(source, subscription, event)) continue
        if (result.matched === WEBHOOK_LIMITS.replayMax) return { ...result, truncated: true }
        result.matched++
        result.through = isoString(event.occurredAt)
        const { delivery, created } = await this.ensureDelivery(subscription, event, 'replay')
        if (created) result.queued++
        else if (delivery.status === 'pending' || delivery.status === 'retrying') continue
        else if (range.onlyFailed === true && delivery.status === 'delivered') continue
        else {
          await this.newRound(delivery, 'replay')
          result.queued++
        }
      }
      if (page.length < REPLAY_PAGE) return result
      const last = page[page.length - 1]
      after = [last.occurredAt, last._id]
    }
  }
}

function checkInput (source: WebhookSource, input: WebhookEventInput): void {
  if (typeof input.key !== 'string' || input.key === '') throw new TypeError(`a ${source.name} event needs a key`)
  if (!source.eventTypes.includes(input.type)) throw new TypeError(`${source.name} has no event type "${input.type}"`)
  if (!(input.occurredAt instanceof Date) || !Number.isFinite(input.occurredAt.getTime())) throw new TypeError(`a ${source.name} event needs its time`)
}
