import type { Clock } from '../platform/clock.js'
import { FrozenMemo } from '../cache/frozen-memo.js'
import type { Cursors } from '../collections/query.js'
import type { Filter } from '../store/types.js'
import { STATE_GROUPS, type PageOf } from '../../schemas/tracker.js'
import { PRIORITIES, type GroupByFieldT, type OrderByT, type TrackerFilterT } from '../../schemas/tracker-filters.js'
import type { CountResultT, CountWorkItemsQueryT, ListWorkItemsQueryT, WorkItemT, WorkItemTombstoneT } from '../../schemas/tracker-work-items.js'
import { visibleItems, type TrackerScope } from './access.js'
import { trackerErrors } from './errors.js'
import { compileFilter, parseFilterText } from './filters.js'
import type { ItemStore } from './item-store.js'
import { sharedItemView, toItemView, toTombstoneView } from './item-rules.js'
import { keysetPage, listScope, sortPlan, type SortPlan } from './paging.js'
import type { ItemRecord } from './records.js'
import type { TrackerStates } from './states.js'

/** A saved view as lists apply it (services/tracker/views.ts). */
export interface AppliedView { filter: TrackerFilterT | null, orderBy: OrderByT }
export type ViewSource = (scope: TrackerScope, viewId: string) => Promise<AppliedView>

const ORDERS: Record<OrderByT, SortPlan> = {
  manual: sortPlan([['sortOrder', 1], ['_id', 1]]),
  number: sortPlan([['seq', 1]]),
  '-number': sortPlan([['seq', -1]]),
  createdAt: sortPlan([['createdAt', 1], ['_id', 1]]),
  '-createdAt': sortPlan([['createdAt', -1], ['_id', -1]]),
  updatedAt: sortPlan([['updatedAt', 1], ['_id', 1]]),
  '-updatedAt': sortPlan([['updatedAt', -1], ['_id', -1]]),
  priority: sortPlan([['priorityRank', 1], ['seq', -1]]),
  '-priority': sortPlan([['priorityRank', -1], ['seq', -1]]),
  targetDate: sortPlan([['targetDate', 1], ['seq', -1]]),
  '-targetDate': sortPlan([['targetDate', -1], ['seq', -1]]),
  startDate: sortPlan([['startDate', 1], ['seq', -1]]),
  '-startDate': sortPlan([['startDate', -1], ['seq', -1]])
}
const SYNC_ORDER = sortPlan([['updatedAt', 1], ['_id', 1]])
/** Above this many values a group count reads the matching items once instead of counting per value. */
const COUNT_PER_VALUE_MAX = 60
const GROUP_PATHS: Record<GroupByFieldT, keyof ItemRecord> = {
  state: 'stateId', stateGroup: 'stateGroup', priority: 'priority', assignee: 'assignees', label: 'labelIds', module: 'moduleIds', cycle: 'cycleId', type: 'typeId', createdBy: 'createdBy', parent: 'parentId'
}

/** What a list's cursor is bound to when only a filter was asked: the one frozen value per parsed tree, so its text is written once. */
const askedTree = new FrozenMemo((tree: TrackerFilterT) => ({ tree, viewId: null }))

/**
 * Lists, counts and sync pages of work items: the filter grammar compiled
 * and ANDed with the project, the caller's visibility and the defaults a
 * filter does not override (no archived items, no drafts, nothing in triage).
 */
export class ItemLists {
  private views: ViewSource | null = null
  // A list's page is read shared: each document the Store cache's frozen one, answered as its one frozen view.
  private readonly sharedItems = { find: (filter: Filter, options: { sort?: Record<string, 1 | -1>, limit?: number }) => this.deps.items.shared().find(filter, options) }

  constructor (private readonly deps: { clock: Clock, items: ItemStore, states: TrackerStates, cursors: Cursors, memberIds: (lpId: string) => Promise<string[]>, domain: (lpId: string, field: 'label' | 'module' | 'cycle' | 'type') => Promise<string[]> }) {}

  connect (views: ViewSource): void {
    this.views = views
  }

  /** The Store filter of a list: the tree given (and the view's, and what the route narrows to: a cycle's items), defaults, visibility. */
  async filterFor (scope: TrackerScope, filterText: string | undefined, viewId: string | undefined, within: TrackerFilterT | null = null): Promise<{ filter: Filter, asked: unknown, view: AppliedView | null }> {
    const asked = parseFilterText(filterText)
    const view = viewId === undefined || this.views === null ? null : await this.views(scope, viewId)
    const trees = [within, view?.filter ?? null, asked].filter((tree) => tree !== null)
    const tree: TrackerFilterT | null = trees.length === 0 ? null : trees.length === 1 ? trees[0] : { and: trees }
    const compiled = compileFilter(tree, { userId: scope.actor.userId, timezone: scope.project.timezone, now: this.deps.clock.now() })
    const base: Filter = { lpId: scope.project._id, deletedAt: null }
    if (!compiled.fields.has('archived')) base.archivedAt = null
    if (!compiled.fields.has('draft')) base.draft = false
    if (!compiled.fields.has('stateGroup') && !compiled.fields.has('state')) base.stateGroup = { $ne: 'triage' }
    const parts = [compiled.filter, base, visibleItems(scope, { draftsExcluded: base.draft === false })].filter((part) => Object.keys(part).length > 0)
    return { filter: { $and: parts }, asked: viewId === undefined && tree !== null ? askedTree.get(tree) : { tree, viewId: viewId ?? null }, view }
  }

  async list (scope: TrackerScope, query: ListWorkItemsQueryT, within: TrackerFilterT | null = null): Promise<PageOf<WorkItemT | WorkItemTombstoneT>> {
    if (query.updatedSince !== undefined && within === null) return await this.sync(scope, query)
    if (query.updatedSince !== undefined) throw trackerErrors.invalidValue({ path: 'query.updatedSince', problem: 'syncs the whole project: ask the work item list' })
    const { filter, asked, view } = await this.filterFor(scope, query.filter, query.viewId, within)
    const plan = ORDERS[query.orderBy ?? view?.orderBy ?? '-number']
    const { docs, nextCursor } = await keysetPage(this.sharedItems, filter, plan, query, this.deps.cursors, listScope(scope.projectId, `items:${scope.project._id}`, asked, plan))
    return { items: docs.map((doc) => sharedItemView(doc, scope.project.identifier)), nextCursor }
  }

  /**
   * Everything the caller may see that changed after `updatedSince`, oldest
   * change first, archived items, own drafts, triage and tombstones of
   * deleted items included: what a client needs to keep a copy in step.
   */
  private async sync (scope: TrackerScope, query: ListWorkItemsQueryT): Promise<PageOf<WorkItemT | WorkItemTombstoneT>> {
    if (query.filter !== undefined || query.viewId !== undefined || query.orderBy !== undefined) throw trackerErrors.invalidValue({ path: 'query.updatedSince', problem: 'goes alone: a sync page is every change, in the order made' })
    const since = new Date(query.updatedSince as string)
    if (!Number.isFinite(since.getTime())) throw trackerErrors.invalidValue({ path: 'query.updatedSince', problem: 'is not a date-time' })
    const filter = { $and: [{ lpId: scope.project._id, updatedAt: { $gt: since } }, visibleItems(scope)] }
    const { docs, nextCursor } = await keysetPage(this.deps.items.items, filter, SYNC_ORDER, query, this.deps.cursors, listScope(scope.projectId, `sync:${scope.project._id}`, { since: since.getTime() }, SYNC_ORDER))
    return { items: docs.map((doc) => doc.deletedAt === null ? toItemView(doc, scope.project.identifier) : toTombstoneView(doc, scope.project.identifier)), nextCursor }
  }

  /** How many items match, and how many per value of `groupBy` (in the field's own order; null last). */
  async count (scope: TrackerScope, query: CountWorkItemsQueryT): Promise<CountResultT> {
    const { filter } = await this.filterFor(scope, query.filter, query.viewId)
    const total = await this.deps.items.items.countDocuments(filter)
    if (query.groupBy === undefined) return { total, groups: [] }
    const path = GROUP_PATHS[query.groupBy]
    const values = await this.domain(scope, query.groupBy)
    const list = path === 'assignees' || path === 'labelIds' || path === 'moduleIds'
    const emptyValue = list ? { $size: 0 } : null
    const groups: CountResultT['groups'] = []
    if (values !== null && values.length <= COUNT_PER_VALUE_MAX) {
      for (const value of values) groups.push({ value, count: await this.deps.items.items.countDocuments({ $and: [filter, { [path]: value }] }) })
      if (query.groupBy !== 'stateGroup' && query.groupBy !== 'priority' && query.groupBy !== 'state') groups.push({ value: null, count: await this.deps.items.items.countDocuments({ $and: [filter, { [path]: emptyValue }] }) })
    } else {
      const counts = new Map<string | null, number>()
      let after = ''
      for (;;) {
        const page = await this.deps.items.items.find({ $and: [filter, { _id: { $gt: after } }] }, { sort: { _id: 1 }, limit: 5000, projection: { [path]: 1 } }).toArray()
        for (const doc of page) {
          const raw = doc[path] as unknown
          const keys = Array.isArray(raw) ? (raw.length === 0 ? [null] : raw as string[]) : [raw as string | null ?? null]
          for (const key of keys) counts.set(key, (counts.get(key) ?? 0) + 1)
        }
        if (page.length < 5000) break
        after = page[page.length - 1]._id
      }
      const order = values ?? [...counts.keys()].filter((key) => key !== null).sort()
      for (const value of order) if (counts.has(value)) groups.push({ value, count: counts.get(value) as number })
      if (counts.has(null)) groups.push({ value: null, count: counts.get(null) as number })
    }
    return { total, groups: groups.filter((group) => group.count > 0 || values !== null) }
  }

  /** The values a group-by field can take in the project, in their order; null for open-ended ones. */
  private async domain (scope: TrackerScope, field: GroupByFieldT): Promise<string[] | null> {
    const lpId = scope.project._id
    switch (field) {
      case 'stateGroup': return [...STATE_GROUPS]
      case 'priority': return [...PRIORITIES]
      case 'state': return (await this.deps.states.records.find({ lpId }, { sort: { sequence: 1, _id: 1 }, projection: { _id: 1 } }).toArray()).map((state) => state._id)
      case 'assignee': return await this.deps.memberIds(lpId)
      case 'label': case 'module': case 'cycle': case 'type': return await this.deps.domain(lpId, field)
      default: return null
    }
  }
}
