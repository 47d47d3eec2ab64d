import { BoundedMap } from '../cache/bounded-map.js'
import type { IdGenerator } from '../platform/ids.js'
import { retryUpsertRace } from '../platform/upsert-race.js'
import type { Document, Store, StoreCollection } from '../store/types.js'
import { WEBHOOK_COLLECTIONS, type SubscriptionRecord, type WebhookOwner } from './records.js'

/** Owners whose lists are kept; an owner past it reads its list again, nothing worse. */
const CAPACITY = 1024

interface OwnerStamp extends Document { projectId: string, stamp: string }

const ownerKey = (owner: WebhookOwner): string => `${owner.projectId}:${owner.source}`

/**
 * Each owner's webhooks as the publisher reads them for every publish (a
 * record write with a record webhook publishes one), kept between publishes.
 * A kept list is valid while its owner's **stamp** is the one it was read
 * under: every change of what a publish reads (a webhook saved, changed,
 * deleted, disabled, the project purged) writes a new random stamp after the
 * change, so a publish that begins after the change was acknowledged reads
 * the new stamp and the list again, in this process or any other on the same
 * Store. The stamp is read by primary key through the Store's shared reads,
 * which the embedded engine answers from its document cache until some
 * connection commits to the collection: the one cache and its invalidation,
 * not a second one. A random stamp rather than a counter, so an owner purged
 * and recreated never meets a list kept under an old number.
 */
export class SubscriptionLists {
  private readonly stamps: StoreCollection<OwnerStamp>
  private readonly kept = new BoundedMap<string, { stamp: string | null, list: readonly SubscriptionRecord[] }>(CAPACITY)

  constructor (private readonly store: Store, private readonly records: StoreCollection<SubscriptionRecord>, private readonly newId: IdGenerator) {
    this.stamps = store.collection<OwnerStamp>(WEBHOOK_COLLECTIONS.owners)
  }

  async init (): Promise<void> {
    await this.stamps.createIndex({ projectId: 1 })
  }

  /** The owner's webhooks, active or not; shared between callers, never to be changed. */
  async of (owner: WebhookOwner): Promise<readonly SubscriptionRecord[]> {
    const key = ownerKey(owner)
    const stamp = (await this.store.extensions.shared<OwnerStamp>(WEBHOOK_COLLECTIONS.owners).findOne({ _id: key }))?.stamp ?? null
    const kept = this.kept.get(key)
    if (kept !== undefined && kept.stamp === stamp) return kept.list
    const list = await this.records.find({ projectId: owner.projectId, source: owner.source }).toArray()
    this.kept.set(key, { stamp, list })
    return list
  }

  /** After a change of the owner's webhooks: lists kept anywhere are read again. */
  async changed (owner: WebhookOwner): Promise<void> {
    const stamp = this.newId()
    await retryUpsertRace(async () => await this.stamps.updateOne({ _id: ownerKey(owner) }, { $set: { projectId: owner.projectId, stamp } }, { upsert: true }))
  }

  /** After the project's webhooks of every source were removed. */
  async projectChanged (projectId: string): Promise<void> {
    await this.store.extensions.sweep(WEBHOOK_COLLECTIONS.owners).updateMany({ projectId }, { $set: { stamp: this.newId() } })
  }
}
