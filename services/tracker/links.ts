import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { PagedWrites, Store, StoreCollection } from '../store/types.js'
import { TRACKER_LIMITS, type ListQueryT, type PageOf } from '../../schemas/tracker.js'
import type { LinkBodyT, LinkT } from '../../schemas/tracker-work-items.js'
import { ownsOrAdmin, requireWritable, type TrackerScope } from './access.js'
import { trackerErrors } from './errors.js'
import type { FollowUps } from './follow-ups.js'
import type { ItemStore } from './item-store.js'
import { keysetPage, listScope, sortPlan } from './paging.js'
import { TRACKER_COLLECTIONS, type LinkRecord } from './records.js'
import type { WorkItems } from './work-items.js'

export const LINK_CHANGED = 'linkChanged'
const ORDER = sortPlan([['_id', 1]])

function toView (record: LinkRecord): LinkT {
  return { id: record._id, itemId: record.itemId, url: record.url, title: record.title, createdBy: record.createdBy, createdAt: isoString(record.createdAt) }
}

/** An http(s) URL as given, or 400: links are shown to others and must not run script. */
export function checkUrl (raw: string, path: string): string {
  let url: URL
  try {
    url = new URL(raw.trim())
  } catch {
    throw trackerErrors.invalidValue({ path, problem: 'is not a URL' })
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw trackerErrors.invalidValue({ path, problem: 'must be an http or https URL' })
  return url.href
}

/** Links from a work item to elsewhere, each URL once per item; added and removed ones show in the item's activity. */
export class TrackerLinks {
  readonly records: StoreCollection<LinkRecord>
  /** A tracker project's links go page by page: it may hold more than one write may remove. */
  private readonly sweep: PagedWrites

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, cursors: Cursors, items: ItemStore, workItems: WorkItems, followUps: FollowUps }) {
    this.records = store.collection<LinkRecord>(TRACKER_COLLECTIONS.links)
    this.sweep = store.extensions.sweep(TRACKER_COLLECTIONS.links)
    deps.followUps.on(LINK_CHANGED, async (task) => { await this.changed(task as unknown as { link: LinkRecord, added: boolean, actorId: string, at: Date }) })
  }

  async init (): Promise<void> {
    await this.records.createIndex({ itemId: 1, url: 1 }, { unique: true })
    await this.records.createIndex({ itemId: 1, _id: 1 })
    await this.records.createIndex({ lpId: 1 })
  }

  async list (scope: TrackerScope, itemId: string, page: ListQueryT): Promise<PageOf<LinkT>> {
    await this.deps.workItems.visible(scope, itemId)
    const { docs, nextCursor } = await keysetPage(this.records, { itemId }, ORDER, page, this.deps.cursors, listScope(scope.projectId, `links:${itemId}`, null, ORDER))
    return { items: docs.map(toView), nextCursor }
  }

  async create (scope: TrackerScope, itemId: string, input: LinkBodyT): Promise<LinkT> {
    requireWritable(scope)
    const item = await this.deps.workItems.visible(scope, itemId)
    const url = checkUrl(input.url, 'body.url')
    if (await this.records.countDocuments({ itemId }) >= TRACKER_LIMITS.linksPerItem) throw trackerErrors.limitReached({ what: 'work item', limit: TRACKER_LIMITS.linksPerItem, items: 'links' })
    const now = this.deps.clock.now()
    const record: LinkRecord = { _id: this.deps.newId(), projectId: item.projectId, lpId: item.lpId, itemId, url, title: input.title?.trim() ?? '', createdBy: scope.actor.userId, createdAt: now }
    await this.deps.followUps.guard({ kind: LINK_CHANGED, link: record, added: true, actorId: scope.actor.userId, at: now }, async () => {
      try {
        await this.records.insertOne(record)
      } catch (error) {
        if (error instanceof DuplicateKeyError) throw trackerErrors.linkExists()
        throw error
      }
    })
    return toView(record)
  }

  async delete (scope: TrackerScope, itemId: string, linkId: string): Promise<void> {
    requireWritable(scope)
    await this.deps.workItems.visible(scope, itemId)
    const link = await this.records.findOne({ _id: linkId, itemId })
    if (link === null) throw trackerErrors.linkNotFound()
    if (!ownsOrAdmin(scope, link.createdBy) && scope.role === 'guest') throw trackerErrors.notYours({ owner: 'creator', action: 'remove this link' })
    await this.deps.followUps.guard({ kind: LINK_CHANGED, link, added: false, actorId: scope.actor.userId, at: this.deps.clock.now() }, async () => {
      await this.records.deleteOne({ _id: linkId })
    })
  }

  /** The activity entry of a link added (if it is there) or removed (if it is gone). */
  private async changed (task: { link: LinkRecord, added: boolean, actorId: string, at: Date }): Promise<void> {
    const { link, added } = task
    const present = await this.records.findOne({ _id: link._id }, { projection: { _id: 1 } }) !== null
    if (present !== added) return
    const entry = added ? { field: 'link', from: null, to: link.url } : { field: 'link', from: link.url, to: null }
    await this.deps.items.record({ _id: link.itemId, projectId: link.projectId, lpId: link.lpId }, `${link.itemId}:link-${added ? 'added' : 'removed'}:${link._id}`, task.actorId, entry, new Date(task.at))
  }

  async purgeItem (itemId: string): Promise<void> {
    await this.records.deleteMany({ itemId })
  }

  async purge (lpId: string): Promise<void> {
    await this.sweep.deleteMany({ lpId })
  }
}
