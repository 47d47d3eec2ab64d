import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { Filter } from '../store/types.js'
import type { PageOf } from '../../schemas/tracker.js'
import type { CreateIntakeBodyT, IntakeDecisionBodyT, ListIntakeQueryT } from '../../schemas/tracker-planning.js'
import type { WorkItemT } from '../../schemas/tracker-work-items.js'
import { canSeeItem, refuseGuest, requireFeature, requireWritable, visibleItems, type TrackerScope } from './access.js'
import { trackerErrors } from './errors.js'
import type { ItemStore } from './item-store.js'
import { toItemView } from './item-rules.js'
import { keysetPage, listScope, sortPlan } from './paging.js'
import type { IntakeRecord, ItemRecord } from './records.js'
import type { WorkItems, WriteRequest } from './work-items.js'

const ORDER = sortPlan([['seq', -1]])

/**
 * Intake: work items proposed to a project, held in its hidden triage state
 * until someone decides. Accepting moves the item to the default state (or
 * one given) and makes it an ordinary item; a snoozed item is pending again
 * once its time has come. The decision is one write of the item.
 */
export class TrackerIntake {
  constructor (private readonly deps: { clock: Clock, cursors: Cursors, items: ItemStore, workItems: WorkItems }) {}

  /** The intake status as of now: a snooze that ran out reads as pending. */
  private status (intake: IntakeRecord): IntakeRecord['status'] {
    return intake.status === 'snoozed' && intake.snoozedUntil !== null && intake.snoozedUntil <= this.deps.clock.now() ? 'pending' : intake.status
  }

  view (scope: TrackerScope, item: ItemRecord): WorkItemT {
    const view = toItemView(item, scope.project.identifier)
    if (view.intake !== null && item.intake !== null) view.intake.status = this.status(item.intake)
    return view
  }

  /** Anyone who may write, guests included, may propose an item. */
  async create (scope: TrackerScope, input: CreateIntakeBodyT, request: WriteRequest = {}): Promise<WorkItemT> {
    requireFeature(scope, 'intake')
    const { source, ...fields } = input
    const created = await this.deps.workItems.create(scope, fields, request, { source: source ?? 'in-app' })
    return this.view(scope, await this.deps.workItems.visible(scope, created.id))
  }

  async list (scope: TrackerScope, query: ListIntakeQueryT): Promise<PageOf<WorkItemT>> {
    requireFeature(scope, 'intake')
    const now = this.deps.clock.now()
    // `intake.status` holds a string exactly when `intake` is set: said so, both engines walk the partial intake index (ItemStore.init).
    const filter: Filter[] = [{ lpId: scope.project._id, deletedAt: null, intake: { $ne: null }, 'intake.status': { $gte: '' } }, visibleItems(scope)]
    if (query.status === 'pending') filter.push({ $or: [{ 'intake.status': 'pending' }, { 'intake.status': 'snoozed', 'intake.snoozedUntil': { $lte: now } }] })
    else if (query.status === 'snoozed') filter.push({ 'intake.status': 'snoozed', 'intake.snoozedUntil': { $gt: now } })
    else if (query.status !== undefined) filter.push({ 'intake.status': query.status })
    const { docs, nextCursor } = await keysetPage(this.deps.items.items, { $and: filter }, ORDER, query, this.deps.cursors, listScope(scope.projectId, `intake:${scope.project._id}`, { status: query.status ?? null }, ORDER))
    return { items: docs.map((doc) => this.view(scope, doc)), nextCursor }
  }

  async get (scope: TrackerScope, itemId: string): Promise<WorkItemT> {
    requireFeature(scope, 'intake')
    return this.view(scope, await this.intakeItem(scope, itemId))
  }

  /** Accepted and duplicate are final; pending, snoozed and declined items may be decided (again). */
  async decide (scope: TrackerScope, itemId: string, input: IntakeDecisionBodyT): Promise<WorkItemT> {
    requireFeature(scope, 'intake')
    requireWritable(scope)
    refuseGuest(scope, 'triage intake')
    const item = await this.intakeItem(scope, itemId)
    const intake = item.intake as IntakeRecord
    const current = this.status(intake)
    if (current === 'accepted' || current === 'duplicate') throw trackerErrors.intakeDecided({ status: current, problem: 'it is decided for good' })
    const now = this.deps.clock.now()
    const next: IntakeRecord = { ...intake, status: input.status, snoozedUntil: null, duplicateOfId: null, decidedBy: scope.actor.userId, decidedAt: now }
    let stateId: string | null = null
    switch (input.status) {
      case 'accepted':
        stateId = input.stateId ?? scope.project.defaultStateId
        break
      case 'snoozed': {
        const until = input.snoozedUntil === undefined ? null : new Date(input.snoozedUntil)
        if (until === null || !Number.isFinite(until.getTime()) || until <= now) throw trackerErrors.invalidValue({ path: 'body.snoozedUntil', problem: 'is required for snoozed and must be in the future' })
        next.snoozedUntil = until
        break
      }
      case 'duplicate': {
        if (input.duplicateOfId === undefined) throw trackerErrors.invalidValue({ path: 'body.duplicateOfId', problem: 'is required for duplicate' })
        if (input.duplicateOfId === itemId) throw trackerErrors.invalidReference({ path: 'body.duplicateOfId', problem: 'is the item itself' })
        const original = await this.deps.items.find(scope.project._id, input.duplicateOfId)
        if (original === null || !canSeeItem(scope, original)) throw trackerErrors.invalidReference({ path: 'body.duplicateOfId', problem: 'is not a work item of this tracker project' })
        next.duplicateOfId = original._id
        break
      }
      case 'pending':
        next.decidedBy = null
        next.decidedAt = null
        break
    }
    return this.view(scope, await this.deps.workItems.writeIntake(scope, item, next, stateId))
  }

  private async intakeItem (scope: TrackerScope, itemId: string): Promise<ItemRecord> {
    const item = await this.deps.workItems.visible(scope, itemId)
    if (item.intake === null) throw trackerErrors.intakeNotFound()
    return item
  }
}
