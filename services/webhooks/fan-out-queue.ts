import type { StoreCollection } from '../store/types.js'
import type { EventRecord, WebhookOwner } from './records.js'

/**
 * The queue of events webhooks' jobs have still to fan out (publisher.ts, `fanOut`): one indexed key per waiting
 * event, absent once fanned out and on events no active webhook took, so a paused webhook's event costs its insert
 * no fan-out key at all (bench/README.md, "what keeping an event costs").
 */

/** The fan-out's index of an earlier build: five keys on every event, a paused webhook's included. */
const SUPERSEDED_INDEX = JSON.stringify({ projectId: 1, source: 1, fannedOut: 1, seq: 1, _id: 1 })
const PAGE = 200

/**
 * An event's place in the queue: its owner and the order it was kept in, one string, so one index finds an owner's
 * waiting events oldest first. Project ids and source names hold no space.
 */
export const pendingKey = (owner: WebhookOwner, seq: string): string => `${owner.projectId} ${owner.source} ${seq}`

/** The bounds of an owner's keys: its prefix, and the prefix with the separator's successor. */
export const pendingRange = (owner: WebhookOwner): { $gte: string, $lt: string } => ({ $gte: `${owner.projectId} ${owner.source} `, $lt: `${owner.projectId} ${owner.source}!` })

/**
 * The queue's index; on the first start that finds the earlier build's index, the events it kept and did not fan
 * out (a crash between the two) are queued, so their owners' next jobs fan them out (one without `seq` first),
 * and that index goes: the scan is paid once.
 */
export async function initFanOutQueue (events: StoreCollection<EventRecord>): Promise<void> {
  await events.createIndex({ pending: 1 })
  for (const index of await events.listIndexes()) {
    if (JSON.stringify(index.key) !== SUPERSEDED_INDEX) continue
    for (;;) {
      const page = await events.find({ fannedOut: false, pending: { $exists: false } }, { limit: PAGE }).toArray()
      for (const event of page) await events.updateOne({ _id: event._id, fannedOut: false }, { $set: { pending: pendingKey(event, event.seq ?? '') } })
      if (page.length < PAGE) break
    }
    await events.dropIndex(index.name)
  }
}
