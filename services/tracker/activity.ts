import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import { isoString } from '../platform/iso-dates.js'
import type { ListQueryT, PageOf } from '../../schemas/tracker.js'
import type { ActivityT, SubscriberT } from '../../schemas/tracker-work-items.js'
import { ownsOrAdmin, refuseGuest, requireWritable, type TrackerScope } from './access.js'
import { trackerErrors } from './errors.js'
import type { ItemStore } from './item-store.js'
import { subscriberId } from './item-store.js'
import type { TrackerMembers } from './members.js'
import { keysetPage, listScope, sortPlan } from './paging.js'
import type { ActivityRecord, SubscriberRecord } from './records.js'
import type { WorkItems } from './work-items.js'

const ACTIVITY_ORDER = sortPlan([['at', 1], ['_id', 1]])
const SUBSCRIBER_ORDER = sortPlan([['_id', 1]])

export function toActivityView (record: ActivityRecord): ActivityT {
  return { id: record._id, itemId: record.itemId, changeId: record.changeId, field: record.field, from: record.from, to: record.to, actorId: record.actorId, automation: record.automation, at: isoString(record.at) }
}

function toSubscriberView (record: SubscriberRecord): SubscriberT {
  return { userId: record.userId, reason: record.reason, createdAt: isoString(record.createdAt) }
}

/** An item's activity (oldest first) and its subscribers. */
export class ItemActivity {
  constructor (private readonly deps: { clock: Clock, cursors: Cursors, items: ItemStore, workItems: WorkItems, members: TrackerMembers }) {}

  /** The item's outbox is written out first, so a write cut short before its activity shows it now. */
  async list (scope: TrackerScope, itemId: string, page: ListQueryT): Promise<PageOf<ActivityT>> {
    const item = await this.deps.workItems.visible(scope, itemId)
    await this.deps.items.ensureFlushed(item)
    const { docs, nextCursor } = await keysetPage(this.deps.items.activity, { itemId }, ACTIVITY_ORDER, page, this.deps.cursors, listScope(scope.projectId, `activity:${itemId}`, null, ACTIVITY_ORDER))
    return { items: docs.map(toActivityView), nextCursor }
  }

  async subscribers (scope: TrackerScope, itemId: string, page: ListQueryT): Promise<PageOf<SubscriberT>> {
    await this.deps.workItems.visible(scope, itemId)
    const { docs, nextCursor } = await keysetPage(this.deps.items.subscribers, { itemId }, SUBSCRIBER_ORDER, page, this.deps.cursors, listScope(scope.projectId, `subscribers:${itemId}`, null, SUBSCRIBER_ORDER))
    return { items: docs.map(toSubscriberView), nextCursor }
  }

  /** The caller, or (for members and admins) another member of the project; subscribing twice is one subscription. */
  async subscribe (scope: TrackerScope, itemId: string, userId = scope.actor.userId): Promise<SubscriberT> {
    requireWritable(scope)
    const item = await this.deps.workItems.visible(scope, itemId)
    if (userId !== scope.actor.userId) {
      refuseGuest(scope, 'subscribe others')
      await this.deps.members.requireMembers(item.lpId, [userId], 'body.userId', false)
    }
    await this.deps.items.subscribe(item, [{ userId, reason: 'manual' }], this.deps.clock.now())
    const record = await this.deps.items.subscribers.findOne({ _id: subscriberId(itemId, userId) })
    if (record === null) throw trackerErrors.subscriberNotFound()
    return toSubscriberView(record)
  }

  async unsubscribe (scope: TrackerScope, itemId: string, userId = scope.actor.userId): Promise<void> {
    requireWritable(scope)
    await this.deps.workItems.visible(scope, itemId)
    if (!ownsOrAdmin(scope, userId)) throw trackerErrors.notYours({ owner: 'subscriber', action: 'unsubscribe them' })
    const { deletedCount } = await this.deps.items.subscribers.deleteOne({ _id: subscriberId(itemId, userId) })
    if (deletedCount === 0) throw trackerErrors.subscriberNotFound()
  }

  /** Who is subscribed to an item: what part 2's notifications fan out to. */
  async subscriberIds (itemId: string): Promise<string[]> {
    return (await this.deps.items.subscribers.find({ itemId }, { projection: { userId: 1 } }).toArray()).map((record) => record.userId)
  }

  async purgeItem (itemId: string): Promise<void> {
    await this.deps.items.subscribers.deleteMany({ itemId })
  }
}
