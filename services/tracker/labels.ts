import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Store, StoreCollection } from '../store/types.js'
import { TRACKER_LIMITS, type CreateLabelBodyT, type ListQueryT, type PageOf, type TrackerLabelT, type UpdateLabelBodyT } from '../../schemas/tracker.js'
import { requireAdmin, requireWritable, type TrackerScope } from './access.js'
import { trackerErrors } from './errors.js'
import type { FollowUps } from './follow-ups.js'
import { keysetPage, listScope, sortPlan } from './paging.js'
import { TRACKER_COLLECTIONS, type LabelRecord } from './records.js'
import { nameKey } from './states.js'

export const DELETE_LABEL = 'labelDelete'
const ORDER = sortPlan([['sortOrder', 1], ['_id', 1]])

function toView (record: LabelRecord): TrackerLabelT {
  return {
    id: record._id,
    name: record.name,
    color: record.color,
    description: record.description,
    parentId: record.parentId,
    sortOrder: record.sortOrder,
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt)
  }
}

/**
 * Labels, nested one level: a parent is a top-level label and a label with
 * children has no parent. Two renestings racing could each pass the other's
 * check, so a label given a parent is checked again after its write and the
 * write is taken back if the tree got a second level (at worst both are
 * refused, and a retry decides).
 */
export class TrackerLabels {
  readonly records: StoreCollection<LabelRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, cursors: Cursors, followUps: FollowUps }) {
    this.records = store.collection<LabelRecord>(TRACKER_COLLECTIONS.labels)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ lpId: 1, nameKey: 1 }, { unique: true })
    await this.records.createIndex({ lpId: 1, sortOrder: 1, _id: 1 })
    await this.records.createIndex({ lpId: 1, parentId: 1 })
  }

  async list (scope: TrackerScope, page: ListQueryT): Promise<PageOf<TrackerLabelT>> {
    const lpId = scope.project._id
    const { docs, nextCursor } = await keysetPage(this.records, { lpId }, ORDER, page, this.deps.cursors, listScope(scope.projectId, `labels:${lpId}`, null, ORDER))
    return { items: docs.map(toView), nextCursor }
  }

  async get (scope: TrackerScope, labelId: string): Promise<TrackerLabelT> {
    return toView(await this.record(scope.project._id, labelId))
  }

  async create (scope: TrackerScope, input: CreateLabelBodyT): Promise<TrackerLabelT> {
    requireAdmin(scope)
    requireWritable(scope)
    const lpId = scope.project._id
    const name = input.name.trim()
    if (name === '') throw trackerErrors.invalidValue({ path: 'body.name', problem: 'is blank' })
    if (await this.records.countDocuments({ lpId }) >= TRACKER_LIMITS.labelsPerProject) throw trackerErrors.limitReached({ what: 'tracker project', limit: TRACKER_LIMITS.labelsPerProject, items: 'labels' })
    const parentId = input.parentId ?? null
    if (parentId !== null) await this.checkParent(lpId, parentId, null)
    const last = input.sortOrder === undefined ? await this.records.findOne({ lpId }, { sort: { sortOrder: -1, _id: -1 } }) : null
    const now = this.deps.clock.now()
    const record: LabelRecord = {
      _id: this.deps.newId(),
      projectId: scope.projectId,
      lpId,
      name,
      nameKey: nameKey(name),
      color: input.color.toLowerCase(),
      description: input.description ?? '',
      parentId,
      sortOrder: input.sortOrder ?? (last?.sortOrder ?? 0) + 1000,
      createdAt: now,
      updatedAt: now
    }
    try {
      await this.records.insertOne(record)
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw trackerErrors.nameTaken({ what: 'label', name })
      throw error
    }
    if (parentId !== null) await this.recheck(record, async () => { await this.records.deleteOne({ _id: record._id }) })
    return toView(record)
  }

  async update (scope: TrackerScope, labelId: string, input: UpdateLabelBodyT): Promise<TrackerLabelT> {
    requireAdmin(scope)
    requireWritable(scope)
    const lpId = scope.project._id
    const label = await this.record(lpId, labelId)
    const set: Partial<LabelRecord> = { updatedAt: this.deps.clock.now() }
    if (input.name !== undefined) {
      set.name = input.name.trim()
      if (set.name === '') throw trackerErrors.invalidValue({ path: 'body.name', problem: 'is blank' })
      set.nameKey = nameKey(set.name)
    }
    if (input.color !== undefined) set.color = input.color.toLowerCase()
    if (input.description !== undefined) set.description = input.description
    if (input.sortOrder !== undefined) set.sortOrder = input.sortOrder
    const newParent = input.parentId !== undefined && input.parentId !== label.parentId
    if (newParent) {
      set.parentId = input.parentId ?? null
      if (set.parentId !== null) await this.checkParent(lpId, set.parentId, label._id)
    }
    let updated: LabelRecord | null
    try {
      updated = await this.records.findOneAndUpdate({ _id: label._id, lpId }, { $set: set }, { returnDocument: 'after' })
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw trackerErrors.nameTaken({ what: 'label', name: set.name ?? label.name })
      throw error
    }
    if (updated === null) throw trackerErrors.labelNotFound()
    if (newParent && updated.parentId !== null) await this.recheck(updated, async () => { await this.records.updateOne({ _id: label._id, parentId: updated.parentId }, { $set: { parentId: label.parentId } }) })
    return toView(updated)
  }

  /** The label goes first; its children become top-level and items let go of it after (cascades.ts, labelDelete). */
  async delete (scope: TrackerScope, labelId: string): Promise<void> {
    requireAdmin(scope)
    requireWritable(scope)
    await this.record(scope.project._id, labelId)
    await this.deps.followUps.guard({ kind: DELETE_LABEL, projectId: scope.projectId, lpId: scope.project._id, labelId })
  }

  async remove (lpId: string, labelId: string): Promise<void> {
    await this.records.deleteOne({ _id: labelId, lpId })
    await this.records.updateMany({ lpId, parentId: labelId }, { $set: { parentId: null, updatedAt: this.deps.clock.now() } })
  }

  /** 400 naming the first id that is no label of the project. */
  async requireLabels (lpId: string, labelIds: readonly string[], path: string): Promise<void> {
    if (labelIds.length === 0) return
    const found = new Set((await this.records.find({ lpId, _id: { $in: [...new Set(labelIds)] } }, { projection: { _id: 1 } }).toArray()).map((label) => label._id))
    const index = labelIds.findIndex((id) => !found.has(id))
    if (index >= 0) throw trackerErrors.invalidReference({ path: `${path}[${index}]`, problem: 'is not a label of this tracker project' })
  }

  async purge (lpId: string): Promise<void> {
    await this.records.deleteMany({ lpId })
  }

  private async record (lpId: string, labelId: string): Promise<LabelRecord> {
    const label = await this.records.findOne({ _id: labelId, lpId })
    if (label === null) throw trackerErrors.labelNotFound()
    return label
  }

  private async checkParent (lpId: string, parentId: string, childId: string | null): Promise<void> {
    if (parentId === childId) throw trackerErrors.invalidReference({ path: 'body.parentId', problem: 'is the label itself' })
    const parent = await this.records.findOne({ _id: parentId, lpId })
    if (parent === null) throw trackerErrors.invalidReference({ path: 'body.parentId', problem: 'is not a label of this tracker project' })
    if (parent.parentId !== null) throw trackerErrors.labelDepth({ problem: `"${parent.name}" is itself a child` })
    if (childId !== null && await this.records.countDocuments({ lpId, parentId: childId }) > 0) throw trackerErrors.labelDepth({ problem: 'this label has children' })
  }

  /** After a label got a parent: if the parent got one meanwhile or the label got children, the write is taken back. */
  private async recheck (label: LabelRecord, undo: () => Promise<void>): Promise<void> {
    const parent = await this.records.findOne({ _id: label.parentId as string, lpId: label.lpId })
    const children = await this.records.countDocuments({ lpId: label.lpId, parentId: label._id })
    if (parent !== null && parent.parentId === null && children === 0) return
    await undo()
    throw trackerErrors.labelDepth({ problem: parent === null ? 'the parent is gone' : 'the tree changed meanwhile; try again' })
  }
}
