import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import type { Store, StoreCollection } from '../store/types.js'
import { TRACKER_LIMITS, type ListQueryT, type PageOf } from '../../schemas/tracker.js'
import type { CreateViewBodyT, SavedViewT, UpdateViewBodyT } from '../../schemas/tracker-planning.js'
import { ownsOrAdmin, requireFeature, requireWritable, type TrackerScope } from './access.js'
import { trackerErrors } from './errors.js'
import { checkFilter } from './filters.js'
import type { AppliedView } from './item-lists.js'
import { keysetPage, listScope, sortPlan } from './paging.js'
import { TRACKER_COLLECTIONS, type ViewRecord } from './records.js'

const ORDER = sortPlan([['_id', 1]])

function toView (record: ViewRecord): SavedViewT {
  return {
    id: record._id,
    name: record.name,
    description: record.description,
    filter: record.filter,
    layout: record.layout,
    groupBy: record.groupBy,
    subGroupBy: record.subGroupBy,
    orderBy: record.orderBy,
    displayProperties: record.displayProperties,
    access: record.access,
    locked: record.locked,
    ownerId: record.ownerId,
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt),
    version: record.version
  }
}

/**
 * Saved views: a filter in the tracker's grammar (kept as written, so
 * relative days move with the calendar), layout, grouping, order and display
 * properties. Private views are their owner's alone; a locked view changes
 * only once unlocked, which its owner or a project admin may do.
 */
export class TrackerViews {
  readonly records: StoreCollection<ViewRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, cursors: Cursors }) {
    this.records = store.collection<ViewRecord>(TRACKER_COLLECTIONS.views)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ lpId: 1, _id: 1 })
  }

  async list (scope: TrackerScope, page: ListQueryT): Promise<PageOf<SavedViewT>> {
    requireFeature(scope, 'views')
    const lpId = scope.project._id
    const filter = { lpId, $or: [{ access: 'public' }, { ownerId: scope.actor.userId }] }
    const { docs, nextCursor } = await keysetPage(this.records, filter, ORDER, page, this.deps.cursors, listScope(scope.projectId, `views:${lpId}`, null, ORDER))
    return { items: docs.map(toView), nextCursor }
  }

  async get (scope: TrackerScope, viewId: string): Promise<SavedViewT> {
    return toView(await this.visible(scope, viewId))
  }

  /** What a list applies (item-lists.ts): the view's filter and order. */
  async apply (scope: TrackerScope, viewId: string): Promise<AppliedView> {
    const view = await this.visible(scope, viewId)
    return { filter: view.filter, orderBy: view.orderBy }
  }

  async create (scope: TrackerScope, input: CreateViewBodyT): Promise<SavedViewT> {
    requireFeature(scope, 'views')
    requireWritable(scope)
    const lpId = scope.project._id
    if (scope.role === 'guest' && input.access === 'public') throw trackerErrors.guestRefused({ action: 'share views' })
    if (await this.records.countDocuments({ lpId }) >= TRACKER_LIMITS.viewsPerProject) throw trackerErrors.limitReached({ what: 'tracker project', limit: TRACKER_LIMITS.viewsPerProject, items: 'views' })
    const name = input.name.trim()
    if (name === '') throw trackerErrors.invalidValue({ path: 'body.name', problem: 'is blank' })
    const now = this.deps.clock.now()
    const record: ViewRecord = {
      _id: this.deps.newId(),
      projectId: scope.projectId,
      lpId,
      name,
      description: input.description ?? '',
      filter: input.filter === undefined || input.filter === null ? null : checkFilter(input.filter, 'body.filter'),
      layout: input.layout ?? 'list',
      groupBy: input.groupBy ?? null,
      subGroupBy: input.subGroupBy ?? null,
      orderBy: input.orderBy ?? '-number',
      displayProperties: input.displayProperties ?? {},
      access: input.access ?? 'private',
      locked: input.locked ?? false,
      ownerId: scope.actor.userId,
      createdAt: now,
      updatedAt: now,
      version: 1
    }
    await this.records.insertOne(record)
    return toView(record)
  }

  async update (scope: TrackerScope, viewId: string, input: UpdateViewBodyT, ifMatch?: number): Promise<SavedViewT> {
    requireFeature(scope, 'views')
    requireWritable(scope)
    const view = await this.visible(scope, viewId)
    const mayUnlock = ownsOrAdmin(scope, view.ownerId)
    if (view.locked && (input.locked !== false || !mayUnlock)) throw trackerErrors.viewLocked()
    if (!mayUnlock) throw trackerErrors.notYours({ owner: 'owner', action: 'change this view' })
    if (ifMatch !== undefined && ifMatch !== view.version) throw trackerErrors.versionMismatch({ what: 'view', expected: ifMatch, actual: view.version })
    if (scope.role === 'guest' && input.access === 'public') throw trackerErrors.guestRefused({ action: 'share views' })
    const set: Partial<ViewRecord> = { updatedAt: this.deps.clock.now(), version: view.version + 1 }
    if (input.name !== undefined) {
      set.name = input.name.trim()
      if (set.name === '') throw trackerErrors.invalidValue({ path: 'body.name', problem: 'is blank' })
    }
    if (input.filter !== undefined) set.filter = input.filter === null ? null : checkFilter(input.filter, 'body.filter')
    for (const field of ['description', 'layout', 'groupBy', 'subGroupBy', 'orderBy', 'displayProperties', 'access', 'locked'] as const) {
      if (input[field] !== undefined) (set as Record<string, unknown>)[field] = input[field]
    }
    const updated = await this.records.findOneAndUpdate({ _id: viewId, version: view.version }, { $set: set }, { returnDocument: 'after' })
    if (updated === null) throw trackerErrors.changed({ what: 'view' })
    return toView(updated)
  }

  async delete (scope: TrackerScope, viewId: string): Promise<void> {
    requireFeature(scope, 'views')
    requireWritable(scope)
    const view = await this.visible(scope, viewId)
    if (view.locked) throw trackerErrors.viewLocked()
    if (!ownsOrAdmin(scope, view.ownerId)) throw trackerErrors.notYours({ owner: 'owner', action: 'delete this view' })
    await this.records.deleteOne({ _id: viewId })
  }

  async purge (lpId: string): Promise<void> {
    await this.records.deleteMany({ lpId })
  }

  private async visible (scope: TrackerScope, viewId: string): Promise<ViewRecord> {
    const view = await this.records.findOne({ _id: viewId, lpId: scope.project._id })
    if (view === null || (view.access === 'private' && view.ownerId !== scope.actor.userId)) throw trackerErrors.viewNotFound()
    return view
  }
}
