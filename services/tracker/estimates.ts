import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import type { Store, StoreCollection } from '../store/types.js'
import {
  TRACKER_LIMITS, type CreateEstimateBodyT, type EstimateT, type EstimateTypeT, type ListQueryT, type PageOf, type UpdateEstimateBodyT
} from '../../schemas/tracker.js'
import { requireAdmin, requireWritable, type TrackerScope } from './access.js'
import { trackerErrors } from './errors.js'
import { keysetPage, listScope, sortPlan } from './paging.js'
import { TRACKER_COLLECTIONS, type EstimateRecord } from './records.js'

const ORDER = sortPlan([['_id', 1]])

function toView (record: EstimateRecord): EstimateT {
  return { id: record._id, name: record.name, type: record.type, points: record.points, createdAt: isoString(record.createdAt), updatedAt: isoString(record.updatedAt) }
}

/** Points and time (minutes) are numbers that add up; categories are names. */
function checkValue (type: EstimateTypeT, raw: string, path: string): string {
  const value = raw.trim()
  if (value === '') throw trackerErrors.invalidValue({ path, problem: 'is blank' })
  if (type !== 'categories' && !(/^\d{1,9}(\.\d{1,3})?$/.test(value))) throw trackerErrors.invalidValue({ path, problem: `must be a number of ${type === 'time' ? 'minutes' : 'points'} (0 or more, up to 3 decimals)` })
  return value
}

export function numericValue (type: EstimateTypeT, value: string): number | null {
  return type === 'categories' ? null : Number(value)
}

/**
 * Estimate systems. A project uses one (`estimateId` on the project); items
 * hold a point of it and, beside it, the point's number for sums. So a point
 * items hold keeps its number: removing it or giving it another number is
 * refused while items hold it.
 */
export class TrackerEstimates {
  readonly records: StoreCollection<EstimateRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, cursors: Cursors, itemsWithPoints: (lpId: string, pointIds: string[]) => Promise<number> }) {
    this.records = store.collection<EstimateRecord>(TRACKER_COLLECTIONS.estimates)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ lpId: 1, _id: 1 })
  }

  async list (scope: TrackerScope, page: ListQueryT): Promise<PageOf<EstimateT>> {
    const lpId = scope.project._id
    const { docs, nextCursor } = await keysetPage(this.records, { lpId }, ORDER, page, this.deps.cursors, listScope(scope.projectId, `estimates:${lpId}`, null, ORDER))
    return { items: docs.map(toView), nextCursor }
  }

  async get (scope: TrackerScope, estimateId: string): Promise<EstimateT> {
    return toView(await this.record(scope.project._id, estimateId))
  }

  async create (scope: TrackerScope, input: CreateEstimateBodyT): Promise<EstimateT> {
    requireAdmin(scope)
    requireWritable(scope)
    const lpId = scope.project._id
    if (await this.records.countDocuments({ lpId }) >= TRACKER_LIMITS.estimatesPerProject) throw trackerErrors.limitReached({ what: 'tracker project', limit: TRACKER_LIMITS.estimatesPerProject, items: 'estimates' })
    const name = input.name.trim()
    if (name === '') throw trackerErrors.invalidValue({ path: 'body.name', problem: 'is blank' })
    const now = this.deps.clock.now()
    const record: EstimateRecord = {
      _id: this.deps.newId(),
      projectId: scope.projectId,
      lpId,
      name,
      type: input.type,
      points: input.points.map((value, index) => ({ id: this.deps.newId(), key: index, value: checkValue(input.type, value, `body.points[${index}]`) })),
      createdAt: now,
      updatedAt: now
    }
    await this.records.insertOne(record)
    return toView(record)
  }

  async update (scope: TrackerScope, estimateId: string, input: UpdateEstimateBodyT): Promise<EstimateT> {
    requireAdmin(scope)
    requireWritable(scope)
    const lpId = scope.project._id
    const estimate = await this.record(lpId, estimateId)
    const set: Partial<EstimateRecord> = { updatedAt: this.deps.clock.now() }
    if (input.name !== undefined) {
      set.name = input.name.trim()
      if (set.name === '') throw trackerErrors.invalidValue({ path: 'body.name', problem: 'is blank' })
    }
    if (input.points !== undefined) {
      const before = new Map(estimate.points.map((point) => [point.id, point]))
      const points = input.points.map((point, index) => {
        const value = checkValue(estimate.type, point.value, `body.points[${index}].value`)
        if (point.id !== undefined && !before.has(point.id)) throw trackerErrors.invalidReference({ path: `body.points[${index}].id`, problem: 'is not a point of this estimate' })
        return { id: point.id ?? this.deps.newId(), key: index, value }
      })
      const kept = new Set(points.map((point) => point.id))
      const renumbered = points.filter((point) => estimate.type !== 'categories' && before.has(point.id) && Number(before.get(point.id)?.value) !== Number(point.value))
      const touched = [...estimate.points.filter((point) => !kept.has(point.id)).map((point) => point.id), ...renumbered.map((point) => point.id)]
      const used = touched.length === 0 ? 0 : await this.deps.itemsWithPoints(lpId, touched)
      if (used > 0) throw trackerErrors.inUse({ what: 'estimate point removed or renumbered', count: used })
      set.points = points
    }
    const updated = await this.records.findOneAndUpdate({ _id: estimate._id, updatedAt: estimate.updatedAt }, { $set: set }, { returnDocument: 'after' })
    if (updated === null) throw trackerErrors.changed({ what: 'estimate' })
    return toView(updated)
  }

  async delete (scope: TrackerScope, estimateId: string): Promise<void> {
    requireAdmin(scope)
    requireWritable(scope)
    const lpId = scope.project._id
    await this.record(lpId, estimateId)
    if (scope.project.estimateId === estimateId) throw trackerErrors.inUse({ what: 'estimate (the project\'s estimate system)', count: 0 })
    await this.records.deleteOne({ _id: estimateId, lpId })
  }

  async requireExists (lpId: string, estimateId: string, path: string): Promise<void> {
    if (await this.records.findOne({ _id: estimateId, lpId }, { projection: { _id: 1 } }) === null) throw trackerErrors.invalidReference({ path, problem: 'is not an estimate of this tracker project' })
  }

  /** The number an item keeps for a point of the project's estimate system; 400 for a point of none or another. */
  async pointValue (lpId: string, estimateId: string | null, pointId: string, path: string): Promise<number | null> {
    const estimate = estimateId === null ? null : await this.records.findOne({ _id: estimateId, lpId })
    const point = estimate?.points.find((candidate) => candidate.id === pointId)
    if (estimate === null || estimate === undefined || point === undefined) throw trackerErrors.invalidReference({ path, problem: 'is not a point of the tracker project\'s estimate system' })
    return numericValue(estimate.type, point.value)
  }

  /** The points of an estimate, for the clean-up when the project switches systems. */
  async pointIds (lpId: string, estimateId: string | null): Promise<string[]> {
    if (estimateId === null) return []
    return (await this.records.findOne({ _id: estimateId, lpId }))?.points.map((point) => point.id) ?? []
  }

  async purge (lpId: string): Promise<void> {
    await this.records.deleteMany({ lpId })
  }

  private async record (lpId: string, estimateId: string): Promise<EstimateRecord> {
    const estimate = await this.records.findOne({ _id: estimateId, lpId })
    if (estimate === null) throw trackerErrors.estimateNotFound()
    return estimate
  }
}
