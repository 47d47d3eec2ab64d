import type { Clock } from '../platform/clock.js'
import { AppError } from '../platform/errors.js'
import type { Filter } from '../store/types.js'
import { TRACKER_LIMITS } from '../../schemas/tracker.js'
import type {
  BulkItemResultT, BulkPatchBodyT, BulkPatchResultT, CreateWorkItemBodyT, UpdateWorkItemBodyT, WorkItemT
} from '../../schemas/tracker-work-items.js'
import { AUTOMATION_ACTOR, canSeeItem, requireWritable, type TrackerActor, type TrackerScope } from './access.js'
import { trackerErrors } from './errors.js'
import type { FollowUps } from './follow-ups.js'
import type { Idempotency } from './idempotency.js'
import type { ItemStore } from './item-store.js'
import { itemKey, priorityRank, sharedItemView, toItemView, type ItemPlan, type ItemRules } from './item-rules.js'
import type { TrackerProjects } from './projects.js'
import type { ActivityEntry, IntakeRecord, ItemRecord, Subscription } from './records.js'
import type { TrackerStates } from './states.js'

export const DELETE_ITEM = 'itemDelete'
const ATTEMPTS = 5
// Board order: new items go after every older one; moves take midpoints between neighbours.
const SORT_STEP = 1024

export interface WriteRequest {
  /** If-Match: the version the client read. */
  ifMatch?: number
  idempotencyKey?: string
}

/**
 * Work items: created with a number from the project's counter, changed by
 * one conditional write each (with their activity, see ItemStore), deleted
 * into tombstones whose numbers stay taken, patched in bulk item by item.
 */
export class WorkItems {
  constructor (private readonly deps: {
    clock: Clock
    items: ItemStore
    rules: ItemRules
    states: TrackerStates
    projects: TrackerProjects
    idempotency: Idempotency
    followUps: FollowUps
  }) {}

  view (scope: TrackerScope, record: ItemRecord): WorkItemT {
    return toItemView(record, scope.project.identifier)
  }

  /** An item the caller may see; 404 otherwise (an item they may not see does not exist for them). */
  async visible (scope: TrackerScope, itemId: string): Promise<ItemRecord> {
    const item = await this.deps.items.find(scope.project._id, itemId)
    if (item === null || !canSeeItem(scope, item)) throw trackerErrors.itemNotFound()
    return item
  }

  /** Read shared: the one frozen view of the stored item, whose JSON text a fast-writing route makes once. */
  async get (scope: TrackerScope, itemId: string): Promise<WorkItemT> {
    return sharedItemView(await this.visible(scope, itemId), scope.project.identifier)
  }

  /** By number (the key's project already resolved, see TrackerProjects.scopeOfKey). */
  async getByNumber (scope: TrackerScope, seq: number): Promise<WorkItemT> {
    const item = await this.deps.items.findBySeq(scope.project._id, seq)
    if (item === null || !canSeeItem(scope, item)) throw trackerErrors.itemNotFound()
    return sharedItemView(item, scope.project.identifier)
  }

  /** By key (`WEB-42`, or a key from before the project's identifier was renamed), in the platform project; 404 when unseen. */
  async getByKey (actor: TrackerActor, projectId: string, key: string): Promise<WorkItemT> {
    const { scope, seq } = await this.deps.projects.scopeOfKey(actor, projectId, key)
    return await this.getByNumber(scope, seq)
  }

  /**
   * Reserves an id (through the Idempotency-Key when given), takes the next
   * number, inserts the item: a retry after a crash finds its item under the
   * reserved id, so one key creates one item.
   */
  async create (scope: TrackerScope, input: CreateWorkItemBodyT, request: WriteRequest = {}, intake?: { source: string }): Promise<WorkItemT> {
    requireWritable(scope)
    const lpId = scope.project._id
    // Without a key the id is new, so nothing can be under it yet; and the item just inserted is answered as written.
    const keyed = request.idempotencyKey !== undefined
    let inserted: ItemRecord | null = null
    const { itemId } = await this.deps.idempotency.once(scope.actor, `create:${lpId}`, request.idempotencyKey, { input, intake }, async (reservedId) => {
      if (keyed && await this.deps.items.items.findOne({ _id: reservedId }, { projection: { _id: 1 } }) !== null) return { itemId: reservedId }
      const now = this.deps.clock.now()
      const triage = intake === undefined ? null : await this.deps.states.triage(lpId)
      const defaults = {
        stateId: triage?._id ?? scope.project.defaultStateId,
        priority: 'none' as const,
        assigneeIds: scope.project.defaultAssigneeId === null || intake !== undefined ? [] : [scope.project.defaultAssigneeId]
      }
      const plan = await this.deps.rules.plan(scope, null, { ...defaults, ...input, ...(triage === null ? {} : { stateId: triage._id }) }, now, { triage: triage !== null })
      const subscribe: Subscription[] = [{ userId: scope.actor.userId, reason: 'creator' }, ...plan.subscribe]
      for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
        const record = this.newRecord(scope, reservedId, await this.deps.items.nextNumber(lpId), now, plan, subscribe, intake)
        const outcome = await this.deps.items.insert(record)
        if (outcome === 'numberTaken') continue
        if (outcome === 'inserted') inserted = record
        return { itemId: reservedId }
      }
      throw trackerErrors.changed({ what: 'work item numbers' })
    })
    const created = inserted ?? await this.deps.items.find(lpId, itemId)
    if (created === null) throw trackerErrors.itemNotFound()
    return this.view(scope, created)
  }

  private newRecord (scope: TrackerScope, _id: string, seq: number, now: Date, plan: ItemPlan, subscribe: Subscription[], intake?: { source: string }): ItemRecord {
    const lpId = scope.project._id
    return {
      _id,
      projectId: scope.projectId,
      lpId,
      seq,
      title: '',
      descriptionFormat: 'markdown',
      description: '',
      descriptionJson: null,
      descriptionText: '',
      stateId: '',
      stateGroup: 'backlog',
      priority: 'none',
      priorityRank: priorityRank('none'),
      assignees: [],
      labelIds: [],
      parentId: null,
      startDate: null,
      targetDate: null,
      estimatePointId: null,
      estimate: null,
      typeId: null,
      cycleId: null,
      moduleIds: [],
      sortOrder: seq * SORT_STEP,
      archivedAt: null,
      draft: false,
      completedAt: null,
      intake: intake === undefined ? null : newIntake(intake.source),
      createdBy: scope.actor.userId,
      updatedBy: scope.actor.userId,
      createdAt: now,
      updatedAt: now,
      deletedAt: null,
      version: 1,
      ...plan.set,
      outbox: this.deps.items.change(scope.actor.userId, [{ field: 'created', from: null, to: itemKey(scope.project.identifier, seq) }], subscribe)
    }
  }

  /**
   * Reads, plans and writes conditionally on the version read; a write that
   * lost a race is planned again on what won (or refused with 412 when the
   * client named the version it read).
   */
  async update (scope: TrackerScope, itemId: string, input: UpdateWorkItemBodyT, request: WriteRequest = {}): Promise<WorkItemT> {
    return this.view(scope, await this.patch(scope, itemId, input, request))
  }

  private async patch (scope: TrackerScope, itemId: string, input: UpdateWorkItemBodyT, request: WriteRequest): Promise<ItemRecord> {
    requireWritable(scope)
    for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
      const item = await this.visible(scope, itemId)
      if (scope.role === 'guest' && item.createdBy !== scope.actor.userId) throw trackerErrors.guestRefused({ action: 'change items they did not create' })
      if (request.ifMatch !== undefined && request.ifMatch !== item.version) throw trackerErrors.versionMismatch({ what: 'work item', expected: request.ifMatch, actual: item.version })
      const now = this.deps.clock.now()
      const { position, ...fields } = input
      if (position !== undefined) fields.sortOrder = await this.sortOrderAt(scope, item, position)
      const plan = await this.deps.rules.plan(scope, item, fields, now)
      if (Object.keys(plan.set).length === 0) return item
      const updated = await this.write(item, plan, scope.actor.userId, false, request.ifMatch)
      if (updated === null) continue
      if (plan.set.parentId !== undefined && plan.set.parentId !== null) await this.loopAfterWrite(scope, updated)
      return updated
    }
    throw trackerErrors.changed({ what: 'work item' })
  }

  /** An item write that is not a client's (a clean-up, an automation, intake triage): no role checks, same activity. */
  async write (item: ItemRecord, plan: ItemPlan, actorId: string, automation: boolean, ifMatch?: number): Promise<ItemRecord | null> {
    return await this.deps.items.write(item, plan.set, this.deps.items.change(actorId, plan.entries, plan.subscribe, automation), { ifMatch })
  }

  /**
   * Applies `change` to every live item matching `filter`, one conditional
   * write each, as an automation: clean-ups after a delete, transfers,
   * automations. Walks the items once in id order; an item changed under it
   * is read and planned again.
   */
  async rewriteAll (lpId: string, filter: Filter, change: (item: ItemRecord) => { set: Partial<ItemRecord>, entries: ActivityEntry[] } | null, actorId = AUTOMATION_ACTOR): Promise<number> {
    let changed = 0
    let after = ''
    for (;;) {
      const page = await this.deps.items.items.find({ lpId, deletedAt: null, ...filter, _id: { $gt: after } }, { sort: { _id: 1 }, limit: 200 }).toArray()
      for (let item of page) {
        for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
          const plan = change(item)
          if (plan === null || Object.keys(plan.set).length === 0) break
          if (await this.write(item, { ...plan, subscribe: [] }, actorId, actorId === AUTOMATION_ACTOR) !== null) { changed++; break }
          const fresh = await this.deps.items.items.findOne({ _id: item._id, deletedAt: null, ...filter })
          if (fresh === null) break
          item = fresh
        }
      }
      if (page.length < 200) return changed
      after = page[page.length - 1]._id
    }
  }

  /** Publishes the intake decision on an item (triage moves, see TrackerIntake). */
  async writeIntake (scope: TrackerScope, item: ItemRecord, intake: IntakeRecord, stateId: string | null): Promise<ItemRecord> {
    const plan = stateId === null ? { set: {}, entries: [], subscribe: [] } : await this.deps.rules.plan(scope, item, { stateId }, this.deps.clock.now())
    plan.set.intake = intake
    plan.entries.push({ field: 'intake', from: item.intake?.status ?? null, to: intake.status })
    const updated = await this.write(item, plan, scope.actor.userId, false)
    if (updated === null) throw trackerErrors.changed({ what: 'intake item' })
    return updated
  }

  /**
   * One write turns the item into its tombstone (content dropped, number
   * kept); what hung off it goes after (cascades.ts, itemDelete). Admins and
   * the item's creator may delete.
   */
  async delete (scope: TrackerScope, itemId: string, request: WriteRequest = {}): Promise<void> {
    requireWritable(scope)
    const item = await this.visible(scope, itemId)
    if (scope.role !== 'admin' && item.createdBy !== scope.actor.userId) throw trackerErrors.notYours({ owner: 'creator', action: 'delete this item' })
    const now = this.deps.clock.now()
    const set: Partial<ItemRecord> = { deletedAt: now, title: '', description: null, descriptionJson: null, descriptionText: '', labelIds: [], moduleIds: [], parentId: null, cycleId: null }
    const written = await this.deps.items.write(item, set, this.deps.items.change(scope.actor.userId, [{ field: 'deleted', from: null, to: itemKey(scope.project.identifier, item.seq) }]), { ifMatch: request.ifMatch })
    if (written === null) throw trackerErrors.changed({ what: 'work item' })
    await this.deps.followUps.guard({ kind: DELETE_ITEM, projectId: scope.projectId, lpId: item.lpId, itemId })
  }

  /**
   * Up to 500 items, each patched as a single PATCH would be (its own
   * conditional write and activity), each answered on its own: a refused
   * item leaves the others as they are and is itself untouched.
   */
  async bulkPatch (scope: TrackerScope, body: BulkPatchBodyT, request: WriteRequest = {}): Promise<BulkPatchResultT> {
    requireWritable(scope)
    const byIds = body.ids !== undefined || body.patch !== undefined
    if (byIds === (body.items !== undefined) || (byIds && (body.ids === undefined || body.patch === undefined))) throw trackerErrors.invalidBulk()
    const work = body.items ?? (body.ids ?? []).map((id) => ({ id, version: undefined, patch: body.patch as UpdateWorkItemBodyT }))
    if (work.length > TRACKER_LIMITS.bulkMax) throw trackerErrors.invalidReference({ path: 'body', problem: `holds more than ${TRACKER_LIMITS.bulkMax} items` })
    return await this.deps.idempotency.once(scope.actor, `bulk:${scope.project._id}`, request.idempotencyKey, body, async () => {
      const results: BulkItemResultT[] = []
      for (const { id, version, patch } of work) {
        try {
          const item = await this.patch(scope, id, patch, { ifMatch: version })
          results.push({ id, status: 200, key: itemKey(scope.project.identifier, item.seq), version: item.version, code: null, message: null })
        } catch (error) {
          if (!(error instanceof AppError) || error.status >= 500) throw error
          results.push({ id, status: error.status, key: null, version: null, code: error.code, message: error.message })
        }
      }
      const patched = results.filter((result) => result.status === 200).length
      return { results, patched, failed: results.length - patched }
    })
  }

  /** A sortOrder just before or after another item in board order; 409 when floating point has no room left there. */
  private async sortOrderAt (scope: TrackerScope, item: ItemRecord, position: { before?: string, after?: string }): Promise<number> {
    const anchorId = position.before ?? position.after as string
    const path = position.before !== undefined ? 'body.position.before' : 'body.position.after'
    if (anchorId === item._id) throw trackerErrors.invalidReference({ path, problem: 'is the item itself' })
    const anchor = await this.deps.items.find(scope.project._id, anchorId)
    if (anchor === null || !canSeeItem(scope, anchor)) throw trackerErrors.invalidReference({ path, problem: 'is not a work item of this tracker project' })
    const before = position.before !== undefined
    const neighbour = await this.deps.items.items.findOne(
      { lpId: scope.project._id, deletedAt: null, _id: { $ne: item._id }, sortOrder: before ? { $lt: anchor.sortOrder } : { $gt: anchor.sortOrder } },
      { sort: { sortOrder: before ? -1 : 1, _id: 1 }, projection: { sortOrder: 1 } }
    )
    const other = neighbour?.sortOrder ?? anchor.sortOrder + (before ? -SORT_STEP : SORT_STEP)
    const middle = (anchor.sortOrder + other) / 2
    if (middle === anchor.sortOrder || middle === other) throw trackerErrors.sortGap()
    return middle
  }

  /** After a new parent was written: a loop made by a racing re-parenting is taken back. */
  private async loopAfterWrite (scope: TrackerScope, item: ItemRecord): Promise<void> {
    const parent = await this.deps.items.find(item.lpId, item.parentId as string)
    try {
      if (parent !== null) await this.deps.rules.refuseLoop(item.lpId, item._id, parent)
    } catch (error) {
      await this.write(item, { set: { parentId: null }, entries: [{ field: 'parent', from: item.parentId, to: null }], subscribe: [] }, scope.actor.userId, false)
      throw error
    }
  }
}

function newIntake (source: string): IntakeRecord {
  return { status: 'pending', snoozedUntil: null, duplicateOfId: null, source, decidedBy: null, decidedAt: null }
}
