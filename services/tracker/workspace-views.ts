import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import { commonErrors } from '../platform/errors.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import type { Filter, Store, StoreCollection } from '../store/types.js'
import type { PageOf } from '../../schemas/tracker.js'
import type { OrderByT } from '../../schemas/tracker-filters.js'
import {
  WORKSPACE_LIMITS, type CreateWorkspaceViewBodyT, type UpdateWorkspaceViewBodyT, type WorkspaceItemT, type WorkspaceViewT
} from '../../schemas/tracker-workspace.js'
import type { TrackerActor } from './access.js'
import { trackerErrors } from './errors.js'
import { checkFilter } from './filters.js'
import type { ItemStore } from './item-store.js'
import { toItemView } from './item-rules.js'
import { keysetPage, listScope, sortPlan, type PageRequest, type SortPlan } from './paging.js'
import type { TrackerWorkspace } from './workspace.js'
import { WORKSPACE_COLLECTIONS, type WorkspaceViewRecord } from './workspace-records.js'

const ORDER = sortPlan([['_id', 1]])
/** Item orders across projects: numbers repeat from project to project, so each ends on the item's id. */
const ITEM_ORDERS: Record<OrderByT, SortPlan> = {
  manual: sortPlan([['sortOrder', 1], ['_id', 1]]),
  number: sortPlan([['seq', 1], ['_id', 1]]),
  '-number': sortPlan([['seq', -1], ['_id', -1]]),
  createdAt: sortPlan([['createdAt', 1], ['_id', 1]]),
  '-createdAt': sortPlan([['createdAt', -1], ['_id', -1]]),
  updatedAt: sortPlan([['updatedAt', 1], ['_id', 1]]),
  '-updatedAt': sortPlan([['updatedAt', -1], ['_id', -1]]),
  priority: sortPlan([['priorityRank', 1], ['_id', 1]]),
  '-priority': sortPlan([['priorityRank', -1], ['_id', -1]]),
  targetDate: sortPlan([['targetDate', 1], ['_id', 1]]),
  '-targetDate': sortPlan([['targetDate', -1], ['_id', -1]]),
  startDate: sortPlan([['startDate', 1], ['_id', 1]]),
  '-startDate': sortPlan([['startDate', -1], ['_id', -1]])
}

function toView (record: WorkspaceViewRecord): WorkspaceViewT {
  return {
    id: record._id,
    name: record.name,
    description: record.description,
    filter: record.filter,
    orderBy: record.orderBy,
    access: record.access,
    locked: record.locked,
    ownerId: record.ownerId,
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt)
  }
}

const isAdmin = (actor: TrackerActor): boolean => actor.permissions.includes('tracker.admin')

/** Sharing a view is a write for everyone who reads the workspace: it needs `tracker.write`. */
function checkShare (actor: TrackerActor, access: 'private' | 'public' | undefined): void {
  if (access === 'public' && !actor.permissions.includes('tracker.write')) throw commonErrors.forbidden({ permission: 'tracker.write' })
}

/**
 * Saved filters across the tracker projects of a platform project. A private
 * view is its owner's alone; a public one (made with `tracker.write`) is
 * everyone's to read and apply, its owner's or a `tracker.admin` holder's to
 * change, and a locked one changes only once unlocked. Applying a view lists
 * the items it selects in every project the caller reads, each project's
 * visibility rule inside the query.
 */
export class TrackerWorkspaceViews {
  readonly records: StoreCollection<WorkspaceViewRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, cursors: Cursors, workspace: TrackerWorkspace, items: ItemStore }) {
    this.records = store.collection<WorkspaceViewRecord>(WORKSPACE_COLLECTIONS.views)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ projectId: 1, _id: 1 })
  }

  async list (actor: TrackerActor, projectId: string, request: PageRequest): Promise<PageOf<WorkspaceViewT>> {
    const filter = { projectId, $or: [{ access: 'public' }, { ownerId: actor.userId }] }
    const { docs, nextCursor } = await keysetPage(this.records, filter, ORDER, request, this.deps.cursors, listScope(projectId, `workspace-views:${actor.userId}`, null, ORDER))
    return { items: docs.map(toView), nextCursor }
  }

  async get (actor: TrackerActor, projectId: string, viewId: string): Promise<WorkspaceViewT> {
    return toView(await this.visible(actor, projectId, viewId))
  }

  async create (actor: TrackerActor, projectId: string, input: CreateWorkspaceViewBodyT): Promise<WorkspaceViewT> {
    checkShare(actor, input.access)
    const name = input.name.trim()
    if (name === '') throw trackerErrors.invalidValue({ path: 'body.name', problem: 'is blank' })
    if (await this.records.countDocuments({ projectId }) >= WORKSPACE_LIMITS.workspaceViews) {
      throw trackerErrors.limitReached({ what: 'platform project', limit: WORKSPACE_LIMITS.workspaceViews, items: 'workspace views' })
    }
    const now = this.deps.clock.now()
    const record: WorkspaceViewRecord = {
      _id: this.deps.newId(),
      projectId,
      name,
      description: input.description ?? '',
      filter: input.filter === undefined || input.filter === null ? null : checkFilter(input.filter, 'body.filter'),
      orderBy: input.orderBy ?? '-updatedAt',
      access: input.access ?? 'private',
      locked: input.locked ?? false,
      ownerId: actor.userId,
      createdAt: now,
      updatedAt: now
    }
    await this.records.insertOne(record)
    return toView(record)
  }

  async update (actor: TrackerActor, projectId: string, viewId: string, input: UpdateWorkspaceViewBodyT): Promise<WorkspaceViewT> {
    const view = await this.visible(actor, projectId, viewId)
    const mayChange = view.ownerId === actor.userId || isAdmin(actor)
    if (view.locked && (input.locked !== false || !mayChange)) throw trackerErrors.viewLocked()
    if (!mayChange) throw trackerErrors.notYours({ owner: 'owner', action: 'change this view' })
    checkShare(actor, input.access)
    const set: Partial<WorkspaceViewRecord> = { updatedAt: this.deps.clock.now() }
    if (input.name !== undefined) {
      set.name = input.name.trim()
      if (set.name === '') throw trackerErrors.invalidValue({ path: 'body.name', problem: 'is blank' })
    }
    if (input.filter !== undefined) set.filter = input.filter === null ? null : checkFilter(input.filter, 'body.filter')
    for (const field of ['description', 'orderBy', 'access', 'locked'] as const) {
      if (input[field] !== undefined) (set as Record<string, unknown>)[field] = input[field]
    }
    const updated = await this.records.findOneAndUpdate({ _id: viewId, projectId, updatedAt: view.updatedAt }, { $set: set }, { returnDocument: 'after' })
    if (updated === null) throw trackerErrors.changed({ what: 'view' })
    return toView(updated)
  }

  async delete (actor: TrackerActor, projectId: string, viewId: string): Promise<void> {
    const view = await this.visible(actor, projectId, viewId)
    if (view.locked) throw trackerErrors.viewLocked()
    if (view.ownerId !== actor.userId && !isAdmin(actor)) throw trackerErrors.notYours({ owner: 'owner', action: 'delete this view' })
    await this.records.deleteOne({ _id: viewId, projectId })
  }

  /** The work items the view selects across every tracker project the caller reads, in the view's order. */
  async items (actor: TrackerActor, projectId: string, viewId: string, request: PageRequest): Promise<PageOf<WorkspaceItemT>> {
    const view = await this.visible(actor, projectId, viewId)
    const scopes = await this.deps.workspace.scopes(actor, projectId)
    if (scopes.size === 0) return { items: [], nextCursor: null }
    const plan = ITEM_ORDERS[view.orderBy]
    const filter: Filter = this.deps.workspace.itemFilter([...scopes.values()], view.filter, true)
    const cursorScope = listScope(projectId, `workspace-view-items:${viewId}`, { filter: view.filter, at: view.updatedAt.getTime() }, plan)
    const { docs, nextCursor } = await keysetPage(this.deps.items.items, filter, plan, request, this.deps.cursors, cursorScope)
    return {
      items: docs.map((doc) => ({ ...toItemView(doc, scopes.get(doc.lpId)?.project.identifier ?? ''), lpId: doc.lpId })),
      nextCursor
    }
  }

  private async visible (actor: TrackerActor, projectId: string, viewId: string): Promise<WorkspaceViewRecord> {
    const view = await this.records.findOne({ _id: viewId, projectId })
    if (view === null || (view.access === 'private' && view.ownerId !== actor.userId)) throw trackerErrors.workspaceViewNotFound()
    return view
  }
}
