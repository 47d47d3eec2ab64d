import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { Filter, Store } from '../store/types.js'
import type { PageOf, TrackerRoleT } from '../../schemas/tracker.js'
import type { TrackerFilterT } from '../../schemas/tracker-filters.js'
import {
  WORKSPACE_LIMITS, type ActiveCycleT, type WorkspaceActivityQueryT, type WorkspaceActivityT, type WorkspaceMemberT
} from '../../schemas/tracker-workspace.js'
import { roleIn, visibleItems, type TrackerActor, type TrackerScope } from './access.js'
import { toActivityView } from './activity.js'
import { localDay } from './calendar.js'
import { compileFilter, parseFilterText } from './filters.js'
import type { ItemStore } from './item-store.js'
import type { TrackerMembers } from './members.js'
import { listScope, sortPlan, type PageRequest } from './paging.js'
import type { Progress } from './progress.js'
import { TRACKER_COLLECTIONS, type ActivityRecord, type CycleRecord, type TrackerProjectRecord } from './records.js'
import { TRACKER_LIMITS } from '../../schemas/tracker.js'

/** A platform user who may use the tracker (holds `tracker.read` in the platform project). */
export interface PlatformMember { userId: string, name: string | null, email: string | null, admin: boolean }
export type PlatformMembers = (projectId: string) => Promise<PlatformMember[]>

const MEMBER_ORDER = sortPlan([['userId', 1]])
const FEED_ORDER = sortPlan([['at', -1], ['_id', -1]])
const CYCLE_ORDER = sortPlan([['endDate', 1], ['_id', 1]])
/** Entries read per step while a feed page fills. */
const FEED_BATCH = 200

function page<T extends Record<string, unknown>> (rows: T[], plan: typeof MEMBER_ORDER, request: PageRequest, cursors: Cursors, scope: string): { docs: T[], nextCursor: string | null } {
  const limit = Math.min(request.limit ?? TRACKER_LIMITS.pageDefault, TRACKER_LIMITS.pageMax)
  const [key] = plan.keys[0]
  const after = request.cursor === undefined ? null : String(cursors.decode(request.cursor, plan, scope)[0])
  const rest = after === null ? rows : rows.filter((row) => String(row[key]) > after)
  const docs = rest.slice(0, limit)
  return { docs, nextCursor: rest.length > limit ? cursors.encode(docs[docs.length - 1], scope) : null }
}

/**
 * The tracker across the tracker projects of one platform project, as one
 * caller may read it: who can be assigned, what happened, the cycles running
 * now. Every read starts from the scopes the caller holds (the same rule as
 * one project's routes: `roleIn`), so nothing of a project they may not read,
 * nor an item a guest may not see, is ever read out.
 */
export class TrackerWorkspace {
  constructor (private readonly store: Store, private readonly deps: {
    clock: Clock
    cursors: Cursors
    items: ItemStore
    members: TrackerMembers
    progress: Progress
    platformMembers: PlatformMembers
  }) {}

  /** Every live tracker project of the platform project the caller may read, with their scope there, by id. */
  async scopes (actor: TrackerActor, projectId: string): Promise<Map<string, TrackerScope>> {
    const scopes = new Map<string, TrackerScope>()
    if (!actor.permissions.includes('tracker.read')) return scopes
    const projects = await this.store.collection<TrackerProjectRecord>(TRACKER_COLLECTIONS.projects).find({ projectId, deletedAt: null }, { sort: { _id: 1 } }).toArray()
    const roles = new Map((await this.deps.members.records.find({ projectId, userId: actor.userId }, { projection: { lpId: 1, role: 1 } }).toArray()).map((member) => [member.lpId, member.role]))
    for (const project of projects) {
      const role = roleIn(actor, project, roles.get(project._id) ?? null)
      if (role !== null) scopes.set(project._id, { actor, projectId, project, role, seesAllItems: role !== 'guest' || project.guestsSeeAllItems })
    }
    return scopes
  }

  /** Who may be assigned: the platform project's tracker users, each with their role in every tracker project the caller reads. */
  async members (actor: TrackerActor, projectId: string, request: PageRequest): Promise<PageOf<WorkspaceMemberT>> {
    const scopes = await this.scopes(actor, projectId)
    if (scopes.size === 0) return { items: [], nextCursor: null }
    const people = (await this.deps.platformMembers(projectId)).sort((a, b) => a.userId < b.userId ? -1 : a.userId > b.userId ? 1 : 0)
    const { docs, nextCursor } = page(people as unknown as Array<Record<string, unknown>>, MEMBER_ORDER, request, this.deps.cursors, listScope(projectId, 'workspace-members', null, MEMBER_ORDER))
    const chosen = docs as unknown as PlatformMember[]
    const explicit = await this.deps.members.records.find({ projectId, userId: { $in: chosen.map((person) => person.userId) } }, { projection: { lpId: 1, userId: 1, role: 1 } }).toArray()
    const roles = new Map(explicit.map((member) => [`${member.lpId}:${member.userId}`, member.role]))
    const items = chosen.map((person) => {
      const them: TrackerActor = { userId: person.userId, permissions: person.admin ? ['tracker.read', 'tracker.admin'] : ['tracker.read'] }
      const projects: Array<{ lpId: string, role: TrackerRoleT }> = []
      for (const [lpId, scope] of scopes) {
        const role = roleIn(them, scope.project, roles.get(`${lpId}:${person.userId}`) ?? null)
        if (role !== null) projects.push({ lpId, role })
      }
      return { userId: person.userId, name: person.name, email: person.email, projects }
    })
    return { items, nextCursor }
  }

  /**
   * The activity across the tracker projects the caller reads, newest first,
   * of the items the filter selects and the caller may see. Entries are read
   * in batches, and each batch's items are checked by one item query that
   * carries the filter and each project's visibility rule, so a page is full
   * and holds nothing the caller may not see. A page stops early (with a
   * cursor) after WORKSPACE_LIMITS.activityScan entries, so a filter that
   * matches little costs a bounded read per page.
   */
  async activity (actor: TrackerActor, projectId: string, query: WorkspaceActivityQueryT): Promise<PageOf<WorkspaceActivityT>> {
    const tree = parseFilterText(query.filter)
    const scopes = await this.scopes(actor, projectId)
    const cursorScope = listScope(projectId, 'workspace-activity', { tree }, FEED_ORDER)
    if (scopes.size === 0) return { items: [], nextCursor: null }
    const limit = Math.min(query.limit ?? TRACKER_LIMITS.pageDefault, TRACKER_LIMITS.pageMax)
    const itemFilter = this.itemFilter([...scopes.values()], tree)
    const activity = this.deps.items.activity
    let after = query.cursor === undefined ? null : this.deps.cursors.decode(query.cursor, FEED_ORDER, cursorScope)
    const found: ActivityRecord[] = []
    let scanned = 0
    let last: ActivityRecord | null = null
    let more = true
    while (found.length < limit && more && scanned < WORKSPACE_LIMITS.activityScan) {
      const range: Filter = after === null ? {} : { $or: [{ at: { $lt: after[0] } }, { at: after[0], _id: { $lt: after[1] } }] }
      const batch = await activity.find({ $and: [{ lpId: { $in: [...scopes.keys()] } }, range] }, { sort: FEED_ORDER.sort, limit: FEED_BATCH }).toArray()
      more = batch.length === FEED_BATCH
      scanned += batch.length
      const itemIds = [...new Set(batch.map((entry) => entry.itemId))]
      const seen = itemIds.length === 0
        ? new Set<string>()
        : new Set((await this.deps.items.items.find({ $and: [{ _id: { $in: itemIds } }, itemFilter] }, { projection: { _id: 1 } }).toArray()).map((item) => item._id))
      for (const [index, entry] of batch.entries()) {
        last = entry
        if (!seen.has(entry.itemId)) continue
        found.push(entry)
        if (found.length === limit) {
          // Entries left in this batch, or a full batch, may hold more.
          more ||= index < batch.length - 1
          break
        }
      }
      if (last !== null) after = [last.at, last._id]
    }
    const nextCursor = last === null || !more ? null : this.deps.cursors.encode(last, cursorScope)
    return { items: found.map((entry) => ({ ...toActivityView(entry), lpId: entry.lpId })), nextCursor }
  }

  /**
   * The items a filter selects in each project, as each project's visibility
   * rule lets the caller see them (drafts: their own). With `listDefaults`,
   * what a work item list leaves out unless the filter names it: archived
   * items, drafts, triage (services/tracker/item-lists.ts).
   */
  itemFilter (scopes: TrackerScope[], tree: TrackerFilterT | null, listDefaults = false): Filter {
    const now = this.deps.clock.now()
    return {
      $or: scopes.map((scope) => {
        const compiled = compileFilter(tree, { userId: scope.actor.userId, timezone: scope.project.timezone, now })
        const base: Filter = { lpId: scope.project._id, deletedAt: null }
        if (listDefaults && !compiled.fields.has('archived')) base.archivedAt = null
        if (listDefaults && !compiled.fields.has('draft')) base.draft = false
        if (listDefaults && !compiled.fields.has('stateGroup') && !compiled.fields.has('state')) base.stateGroup = { $ne: 'triage' }
        const parts = [base, compiled.filter, visibleItems(scope)].filter((part) => Object.keys(part).length > 0)
        return { $and: parts }
      })
    }
  }

  /**
   * The cycles holding today (in each project's timezone) in the projects
   * the caller may use cycles in (not as a guest, the feature on), ending
   * soonest first, each with its progress.
   */
  async activeCycles (actor: TrackerActor, projectId: string, request: PageRequest): Promise<PageOf<ActiveCycleT>> {
    const scopes = [...(await this.scopes(actor, projectId)).values()].filter((scope) => scope.role !== 'guest' && scope.project.features.cycles && scope.project.archivedAt === null)
    const cursorScope = listScope(projectId, 'workspace-active-cycles', null, CYCLE_ORDER)
    if (scopes.length === 0) return { items: [], nextCursor: null }
    const now = this.deps.clock.now()
    const current: Filter = {
      deletedAt: null,
      $or: scopes.map((scope) => {
        const today = localDay(now, scope.project.timezone)
        return { lpId: scope.project._id, startDate: { $lte: today }, endDate: { $gte: today } }
      })
    }
    const limit = Math.min(request.limit ?? TRACKER_LIMITS.pageDefault, TRACKER_LIMITS.pageMax)
    const after = request.cursor === undefined ? null : this.deps.cursors.decode(request.cursor, CYCLE_ORDER, cursorScope)
    const range: Filter = after === null ? {} : { $or: [{ endDate: { $gt: after[0] } }, { endDate: after[0], _id: { $gt: after[1] } }] }
    const cycles = this.store.collection<CycleRecord>(TRACKER_COLLECTIONS.cycles)
    const found = await cycles.find({ $and: [current, range] }, { sort: CYCLE_ORDER.sort, limit: limit + 1 }).toArray()
    const docs = found.slice(0, limit)
    const byId = new Map(scopes.map((scope) => [scope.project._id, scope]))
    const items: ActiveCycleT[] = []
    for (const cycle of docs) {
      const scope = byId.get(cycle.lpId) as TrackerScope
      items.push({
        id: cycle._id,
        lpId: cycle.lpId,
        projectIdentifier: scope.project.identifier,
        name: cycle.name,
        startDate: cycle.startDate as string,
        endDate: cycle.endDate as string,
        ownerId: cycle.ownerId,
        progress: await this.deps.progress.of(cycle.lpId, { cycleId: cycle._id })
      })
    }
    return { items, nextCursor: found.length > limit ? this.deps.cursors.encode(docs[docs.length - 1], cursorScope) : null }
  }
}
