import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import type { Store, StoreCollection } from '../store/types.js'
import type { WebhookNoticeT } from '../../schemas/webhooks.js'
import { keysetPage, NEWEST_FIRST, type Page, type PageRequest } from './paging.js'
import type { SubscriptionLists } from './subscription-lists.js'
import type { WebhookPublisher } from './publisher.js'
import { WEBHOOK_COLLECTIONS, type NoticeRecord, type SubscriptionRecord, type WebhookOwner } from './records.js'
import type { WebhookSource } from './source.js'

export interface HealthDeps {
  clock: Clock
  newId: IdGenerator
  cursors: Cursors
  subscriptions: StoreCollection<SubscriptionRecord>
  lists: Pick<SubscriptionLists, 'changed'>
  publisher: WebhookPublisher
  source: (name: string) => WebhookSource
  disableAfterFailures: number
  disableAfterMs: number
  /** Told of each webhook disabled (the plugin logs it). */
  onDisabled?: (notice: NoticeRecord) => void
}

function toNoticeView (record: NoticeRecord): WebhookNoticeT {
  return {
    id: record._id,
    webhookId: record.subscriptionId,
    type: record.type,
    reason: record.reason,
    at: isoString(record.at),
    consecutiveFailures: record.consecutiveFailures,
    failingSince: record.failingSince === null ? null : isoString(record.failingSince),
    lastError: record.lastError
  }
}

/**
 * Whether each webhook's receiver is keeping up. A webhook is disabled when
 * WEBHOOK_DISABLE_AFTER_FAILURES deliveries in a row failed (each after its
 * retries), or when it has been failing for WEBHOOK_DISABLE_AFTER_HOURS
 * without one successful attempt. Disabling leaves a `webhook.disabled`
 * notice for the owner, publishes a `webhook.disabled` event to the owner's
 * other webhooks that take it, and tells the source.
 */
export class WebhookHealth {
  readonly notices: StoreCollection<NoticeRecord>

  constructor (store: Store, private readonly deps: HealthDeps) {
    this.notices = store.collection<NoticeRecord>(WEBHOOK_COLLECTIONS.notices)
  }

  async init (): Promise<void> {
    await this.notices.createIndex({ projectId: 1, source: 1, _id: 1 })
  }

  async list (owner: WebhookOwner, page: PageRequest = {}): Promise<Page<WebhookNoticeT>> {
    const { docs, nextCursor } = await keysetPage(this.notices, { projectId: owner.projectId, source: owner.source }, NEWEST_FIRST, page, this.deps.cursors, 'notices')
    return { items: docs.map(toNoticeView), nextCursor }
  }

  /**
   * An attempt succeeded: the streak ends. Nothing is written when
   * `subscription`, as read, had none and no failure was counted since
   * (`failedSinceRead`, which the caller knows of its own batch).
   */
  async succeeded (subscription: SubscriptionRecord, failedSinceRead = false): Promise<void> {
    if (!failedSinceRead && subscription.failures.count === 0 && subscription.failures.since === null) return
    await this.deps.subscriptions.updateOne({ _id: subscription._id }, { $set: { failures: { count: 0, since: null } } })
  }

  /** An attempt failed; `final` when its delivery is given up (a failed event). */
  async failed (subscription: SubscriptionRecord, final: boolean, lastError: string): Promise<void> {
    const now = this.deps.clock.now()
    await this.deps.subscriptions.updateOne({ _id: subscription._id, 'failures.since': null }, { $set: { 'failures.since': now } })
    const current = await this.deps.subscriptions.findOneAndUpdate({ _id: subscription._id }, { $inc: { 'failures.count': final ? 1 : 0 } }, { returnDocument: 'after' })
    if (current === null || !current.active) return
    const { count, since } = current.failures
    if (count >= this.deps.disableAfterFailures) await this.disable(current, `${count} deliveries in a row failed`, lastError)
    else if (since !== null && now.getTime() - since.getTime() >= this.deps.disableAfterMs) await this.disable(current, `failing since ${isoString(since)} without one successful attempt`, lastError)
  }

  private async disable (subscription: SubscriptionRecord, reason: string, lastError: string): Promise<void> {
    const now = this.deps.clock.now()
    const disabled = await this.deps.subscriptions.findOneAndUpdate(
      { _id: subscription._id, active: true },
      { $set: { active: false, disabled: { at: now, reason }, updatedAt: now } },
      { returnDocument: 'after' }
    )
    // Another attempt's worker disabled it first, or someone paused it: one notice.
    if (disabled === null) return
    await this.deps.lists.changed(disabled)
    const notice: NoticeRecord = {
      _id: this.deps.newId(),
      projectId: disabled.projectId,
      source: disabled.source,
      subscriptionId: disabled._id,
      type: 'webhook.disabled',
      reason,
      at: now,
      consecutiveFailures: disabled.failures.count,
      failingSince: disabled.failures.since,
      lastError
    }
    await this.notices.insertOne(notice)
    this.deps.onDisabled?.(notice)
    await this.deps.publisher.publishSystem({ projectId: notice.projectId, source: notice.source }, {
      key: `webhook.disabled:${notice._id}`,
      type: 'webhook.disabled',
      occurredAt: now,
      actor: { type: 'system', id: null },
      data: { webhook: { id: disabled._id, url: disabled.url, description: disabled.description }, ...toNoticeView(notice) }
    })
    await this.deps.source(disabled.source).onDisabled?.(notice)
  }
}
