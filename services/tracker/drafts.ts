import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import { AppError, commonErrors } from '../platform/errors.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import type { Store, StoreCollection } from '../store/types.js'
import type { PageOf } from '../../schemas/tracker.js'
import type { CreateWorkItemBodyT, WorkItemT } from '../../schemas/tracker-work-items.js'
import { WORKSPACE_LIMITS, type CreateDraftBodyT, type DraftT, type UpdateDraftBodyT } from '../../schemas/tracker-workspace.js'
import type { TrackerActor } from './access.js'
import { trackerErrors } from './errors.js'
import { keysetPage, listScope, sortPlan, type PageRequest } from './paging.js'
import type { WorkItems } from './work-items.js'
import type { TrackerWorkspace } from './workspace.js'
import { WORKSPACE_COLLECTIONS, type DraftRecord } from './workspace-records.js'

const ORDER = sortPlan([['updatedAt', -1], ['_id', -1]])

function toDraft (record: DraftRecord): DraftT {
  return {
    id: record._id,
    title: record.title,
    description: record.description,
    priority: record.priority,
    startDate: record.startDate,
    targetDate: record.targetDate,
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt)
  }
}

function checkDates (startDate: string | null, targetDate: string | null): void {
  if (startDate !== null && targetDate !== null && targetDate < startDate) throw trackerErrors.invalidValue({ path: 'body.targetDate', problem: 'is before startDate' })
}

/**
 * Personal drafts of work items, in no tracker project yet; promoting one
 * makes it a work item in the project chosen. The promotion is an ordered
 * sequence each step of which a retry repeats safely: claim the draft for
 * that project, create the item under an idempotency key derived from the
 * draft (a retry finds the same item), delete the draft.
 */
export class TrackerDrafts {
  readonly records: StoreCollection<DraftRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, cursors: Cursors, workspace: TrackerWorkspace, workItems: WorkItems }) {
    this.records = store.collection<DraftRecord>(WORKSPACE_COLLECTIONS.drafts)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ projectId: 1, ownerId: 1, updatedAt: -1, _id: -1 })
  }

  async list (projectId: string, userId: string, request: PageRequest): Promise<PageOf<DraftT>> {
    const { docs, nextCursor } = await keysetPage(this.records, { projectId, ownerId: userId }, ORDER, request, this.deps.cursors, listScope(projectId, `drafts:${userId}`, null, ORDER))
    return { items: docs.map(toDraft), nextCursor }
  }

  async get (projectId: string, userId: string, draftId: string): Promise<DraftT> {
    return toDraft(await this.draft(projectId, userId, draftId))
  }

  async create (projectId: string, userId: string, input: CreateDraftBodyT): Promise<DraftT> {
    const title = input.title.trim()
    if (title === '') throw trackerErrors.invalidValue({ path: 'body.title', problem: 'is blank' })
    checkDates(input.startDate ?? null, input.targetDate ?? null)
    if (await this.records.countDocuments({ projectId, ownerId: userId }) >= WORKSPACE_LIMITS.draftsPerUser) {
      throw trackerErrors.limitReached({ what: 'person', limit: WORKSPACE_LIMITS.draftsPerUser, items: 'drafts' })
    }
    const now = this.deps.clock.now()
    const record: DraftRecord = {
      _id: this.deps.newId(),
      projectId,
      ownerId: userId,
      title,
      description: input.description ?? '',
      priority: input.priority ?? 'none',
      startDate: input.startDate ?? null,
      targetDate: input.targetDate ?? null,
      promotingTo: null,
      createdAt: now,
      updatedAt: now
    }
    await this.records.insertOne(record)
    return toDraft(record)
  }

  /** A draft being promoted is fixed: the retry that finishes the promotion must send what the first attempt sent. */
  async update (projectId: string, userId: string, draftId: string, input: UpdateDraftBodyT): Promise<DraftT> {
    const draft = await this.draft(projectId, userId, draftId)
    if (draft.promotingTo !== null) throw trackerErrors.draftPromoting({ lpId: draft.promotingTo })
    const set: Partial<DraftRecord> = { updatedAt: this.deps.clock.now() }
    if (input.title !== undefined) {
      set.title = input.title.trim()
      if (set.title === '') throw trackerErrors.invalidValue({ path: 'body.title', problem: 'is blank' })
    }
    for (const field of ['description', 'priority', 'startDate', 'targetDate'] as const) {
      if (input[field] !== undefined) (set as Record<string, unknown>)[field] = input[field]
    }
    checkDates(set.startDate !== undefined ? set.startDate : draft.startDate, set.targetDate !== undefined ? set.targetDate : draft.targetDate)
    const updated = await this.records.findOneAndUpdate({ _id: draftId, projectId, ownerId: userId, promotingTo: null }, { $set: set }, { returnDocument: 'after' })
    if (updated === null) throw trackerErrors.changed({ what: 'draft' })
    return toDraft(updated)
  }

  async delete (projectId: string, userId: string, draftId: string): Promise<void> {
    if ((await this.records.deleteOne({ _id: draftId, projectId, ownerId: userId })).deletedCount === 0) throw trackerErrors.draftNotFound()
  }

  /**
   * 1. Claim: `promotingTo` set to the tracker project in one conditional
   *    write (only from null or the same project), so the draft goes to one
   *    project and is not changed meanwhile.
   * 2. Create the work item there with the idempotency key `draft:<id>`: a
   *    retry after a crash answers the item made the first time.
   * 3. Delete the draft.
   * A refusal in step 2 (a field the project refuses) releases the claim.
   */
  async promote (actor: TrackerActor, projectId: string, draftId: string, lpId: string): Promise<WorkItemT> {
    if (!actor.permissions.includes('tracker.write')) throw commonErrors.forbidden({ permission: 'tracker.write' })
    const draft = await this.draft(projectId, actor.userId, draftId)
    if (draft.promotingTo !== null && draft.promotingTo !== lpId) throw trackerErrors.draftPromoting({ lpId: draft.promotingTo })
    const scope = (await this.deps.workspace.scopes(actor, projectId)).get(lpId)
    if (scope === undefined) throw trackerErrors.invalidReference({ path: 'body.lpId', problem: 'names no tracker project the caller reads' })
    const claimed = await this.records.findOneAndUpdate(
      { _id: draftId, projectId, ownerId: actor.userId, promotingTo: { $in: [null, lpId] } },
      { $set: { promotingTo: lpId } },
      { returnDocument: 'after' }
    )
    if (claimed === null) {
      const now = await this.draft(projectId, actor.userId, draftId)
      throw trackerErrors.draftPromoting({ lpId: now.promotingTo ?? lpId })
    }
    const input: CreateWorkItemBodyT = { title: claimed.title, description: claimed.description, priority: claimed.priority }
    if (claimed.startDate !== null) input.startDate = claimed.startDate
    if (claimed.targetDate !== null) input.targetDate = claimed.targetDate
    let item: WorkItemT
    try {
      item = await this.deps.workItems.create(scope, input, { idempotencyKey: `draft:${draftId}` })
    } catch (error) {
      // A request still running under the key (in progress) keeps its claim.
      const refused = error instanceof AppError && error.status < 500 && !trackerErrors.idempotencyInProgress.is(error)
      if (refused) await this.records.updateOne({ _id: draftId, promotingTo: lpId }, { $set: { promotingTo: null } })
      throw error
    }
    await this.records.deleteOne({ _id: draftId })
    return item
  }

  private async draft (projectId: string, userId: string, draftId: string): Promise<DraftRecord> {
    const record = await this.records.findOne({ _id: draftId, projectId, ownerId: userId })
    if (record === null) throw trackerErrors.draftNotFound()
    return record
  }
}
