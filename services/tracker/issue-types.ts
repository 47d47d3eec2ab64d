import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Store, StoreCollection } from '../store/types.js'
import { TRACKER_LIMITS, type CreateIssueTypeBodyT, type IssueTypeT, type ListQueryT, type PageOf, type UpdateIssueTypeBodyT } from '../../schemas/tracker.js'
import { requireAdmin, requireWritable, type TrackerScope } from './access.js'
import { trackerErrors } from './errors.js'
import { keysetPage, listScope, sortPlan } from './paging.js'
import { TRACKER_COLLECTIONS, type IssueTypeRecord } from './records.js'
import { nameKey } from './states.js'

const ORDER = sortPlan([['_id', 1]])

function toView (record: IssueTypeRecord): IssueTypeT {
  return { id: record._id, name: record.name, description: record.description, active: record.active, createdAt: isoString(record.createdAt), updatedAt: isoString(record.updatedAt) }
}

/** Issue types (bug, feature, …). A type items carry is not deleted: make it inactive instead. */
export class TrackerIssueTypes {
  readonly records: StoreCollection<IssueTypeRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, cursors: Cursors, itemsOfType: (lpId: string, typeId: string) => Promise<number> }) {
    this.records = store.collection<IssueTypeRecord>(TRACKER_COLLECTIONS.issueTypes)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ lpId: 1, nameKey: 1 }, { unique: true })
  }

  async list (scope: TrackerScope, page: ListQueryT): Promise<PageOf<IssueTypeT>> {
    const lpId = scope.project._id
    const { docs, nextCursor } = await keysetPage(this.records, { lpId }, ORDER, page, this.deps.cursors, listScope(scope.projectId, `issue-types:${lpId}`, null, ORDER))
    return { items: docs.map(toView), nextCursor }
  }

  async get (scope: TrackerScope, typeId: string): Promise<IssueTypeT> {
    return toView(await this.record(scope.project._id, typeId))
  }

  async create (scope: TrackerScope, input: CreateIssueTypeBodyT): Promise<IssueTypeT> {
    requireAdmin(scope)
    requireWritable(scope)
    const lpId = scope.project._id
    const name = input.name.trim()
    if (name === '') throw trackerErrors.invalidValue({ path: 'body.name', problem: 'is blank' })
    if (await this.records.countDocuments({ lpId }) >= TRACKER_LIMITS.issueTypesPerProject) throw trackerErrors.limitReached({ what: 'tracker project', limit: TRACKER_LIMITS.issueTypesPerProject, items: 'issue types' })
    const now = this.deps.clock.now()
    const record: IssueTypeRecord = { _id: this.deps.newId(), projectId: scope.projectId, lpId, name, nameKey: nameKey(name), description: input.description ?? '', active: input.active ?? true, createdAt: now, updatedAt: now }
    try {
      await this.records.insertOne(record)
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw trackerErrors.nameTaken({ what: 'issue type', name })
      throw error
    }
    return toView(record)
  }

  async update (scope: TrackerScope, typeId: string, input: UpdateIssueTypeBodyT): Promise<IssueTypeT> {
    requireAdmin(scope)
    requireWritable(scope)
    const set: Partial<IssueTypeRecord> = { updatedAt: this.deps.clock.now() }
    if (input.name !== undefined) {
      set.name = input.name.trim()
      if (set.name === '') throw trackerErrors.invalidValue({ path: 'body.name', problem: 'is blank' })
      set.nameKey = nameKey(set.name)
    }
    if (input.description !== undefined) set.description = input.description
    if (input.active !== undefined) set.active = input.active
    let updated: IssueTypeRecord | null
    try {
      updated = await this.records.findOneAndUpdate({ _id: typeId, lpId: scope.project._id }, { $set: set }, { returnDocument: 'after' })
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw trackerErrors.nameTaken({ what: 'issue type', name: set.name ?? '' })
      throw error
    }
    if (updated === null) throw trackerErrors.issueTypeNotFound()
    return toView(updated)
  }

  async delete (scope: TrackerScope, typeId: string): Promise<void> {
    requireAdmin(scope)
    requireWritable(scope)
    const lpId = scope.project._id
    await this.record(lpId, typeId)
    const used = await this.deps.itemsOfType(lpId, typeId)
    if (used > 0) throw trackerErrors.inUse({ what: 'issue type', count: used })
    await this.records.deleteOne({ _id: typeId, lpId })
  }

  /** 400 unless `typeId` is an active type of the project. */
  async requireActive (lpId: string, typeId: string, path: string): Promise<void> {
    const type = await this.records.findOne({ _id: typeId, lpId })
    if (type === null) throw trackerErrors.invalidReference({ path, problem: 'is not an issue type of this tracker project' })
    if (!type.active) throw trackerErrors.invalidReference({ path, problem: 'is an inactive issue type' })
  }

  async purge (lpId: string): Promise<void> {
    await this.records.deleteMany({ lpId })
  }

  private async record (lpId: string, typeId: string): Promise<IssueTypeRecord> {
    const type = await this.records.findOne({ _id: typeId, lpId })
    if (type === null) throw trackerErrors.issueTypeNotFound()
    return type
  }
}
