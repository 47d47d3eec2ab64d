import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Store, StoreCollection } from '../store/types.js'
import type { ListQueryT, PageOf } from '../../schemas/tracker.js'
import type { RelationBodyT, RelationT, RelationTypeT } from '../../schemas/tracker-work-items.js'
import { canSeeItem, refuseGuest, requireWritable, type TrackerScope } from './access.js'
import { trackerErrors } from './errors.js'
import type { FollowUps } from './follow-ups.js'
import type { ItemStore } from './item-store.js'
import { itemKey } from './item-rules.js'
import { keysetPage, listScope, sortPlan } from './paging.js'
import { TRACKER_COLLECTIONS, type RelationRecord } from './records.js'
import type { WorkItems } from './work-items.js'

export const RELATION_ADDED = 'relationAdded'
export const RELATION_REMOVED = 'relationRemoved'
const ORDER = sortPlan([['_id', 1]])

/** Each type as stored (from → to) and as the other side reads it. */
const STORED: Record<RelationTypeT, { type: RelationTypeT, swap: boolean }> = {
  blocked_by: { type: 'blocked_by', swap: false },
  blocking: { type: 'blocked_by', swap: true },
  start_before: { type: 'start_before', swap: false },
  start_after: { type: 'start_before', swap: true },
  finish_before: { type: 'finish_before', swap: false },
  finish_after: { type: 'finish_before', swap: true },
  relates_to: { type: 'relates_to', swap: false },
  duplicate: { type: 'duplicate', swap: false }
}
const REVERSE: Partial<Record<RelationTypeT, RelationTypeT>> = { blocked_by: 'blocking', start_before: 'start_after', finish_before: 'finish_after' }

/** The relation as `itemId` sees it. */
export function typeSeenFrom (record: RelationRecord, itemId: string): RelationTypeT {
  return record.fromId === itemId ? record.type : REVERSE[record.type] ?? record.type
}

const pairOf = (a: string, b: string): string => a < b ? `${a}:${b}` : `${b}:${a}`
const activityIds = (relationId: string, itemId: string, what: 'added' | 'removed'): string => `${itemId}:relation-${what}:${relationId}`

/**
 * Relations between work items of one tracker project, one per pair:
 * stored once (one direction per type, symmetric ones in id order) under a
 * unique pair key, so asking from either side finds the one relation and a
 * second one between the same items is refused, whatever its type.
 */
export class TrackerRelations {
  readonly records: StoreCollection<RelationRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, cursors: Cursors, items: ItemStore, workItems: WorkItems, followUps: FollowUps }) {
    this.records = store.collection<RelationRecord>(TRACKER_COLLECTIONS.relations)
    deps.followUps.on(RELATION_ADDED, async (task) => { await this.added(String(task.relationId)) })
    deps.followUps.on(RELATION_REMOVED, async (task) => { await this.removed(task as unknown as { relation: RelationRecord, actorId: string, at: string }) })
  }

  async init (): Promise<void> {
    await this.records.createIndex({ pair: 1 }, { unique: true })
    await this.records.createIndex({ fromId: 1, _id: 1 })
    await this.records.createIndex({ toId: 1, _id: 1 })
    await this.records.createIndex({ lpId: 1 })
  }

  async list (scope: TrackerScope, itemId: string, page: ListQueryT): Promise<PageOf<RelationT>> {
    await this.deps.workItems.visible(scope, itemId)
    const { docs, nextCursor } = await keysetPage(this.records, { $or: [{ fromId: itemId }, { toId: itemId }] }, ORDER, page, this.deps.cursors, listScope(scope.projectId, `relations:${itemId}`, null, ORDER))
    const others = await this.deps.items.items.find({ _id: { $in: docs.map((doc) => doc.fromId === itemId ? doc.toId : doc.fromId) }, deletedAt: null }).toArray()
    const byId = new Map(others.filter((other) => canSeeItem(scope, other)).map((other) => [other._id, other]))
    const items: RelationT[] = []
    for (const doc of docs) {
      const other = byId.get(doc.fromId === itemId ? doc.toId : doc.fromId)
      if (other === undefined) continue
      items.push({
        id: doc._id, type: typeSeenFrom(doc, itemId), itemId: other._id, key: itemKey(scope.project.identifier, other.seq), title: other.title, stateGroup: other.stateGroup, createdBy: doc.createdBy, createdAt: isoString(doc.createdAt)
      })
    }
    return { items, nextCursor }
  }

  async create (scope: TrackerScope, itemId: string, input: RelationBodyT): Promise<RelationT> {
    requireWritable(scope)
    refuseGuest(scope, 'relate items')
    if (input.itemId === itemId) throw trackerErrors.relationSelf()
    const item = await this.deps.workItems.visible(scope, itemId)
    const other = await this.deps.items.find(scope.project._id, input.itemId)
    if (other === null || !canSeeItem(scope, other)) throw trackerErrors.invalidReference({ path: 'body.itemId', problem: 'is not a work item of this tracker project' })
    const stored = STORED[input.type]
    const [fromId, toId] = stored.type === 'relates_to' || stored.type === 'duplicate' ? [itemId, input.itemId].sort() : stored.swap ? [input.itemId, itemId] : [itemId, input.itemId]
    const record: RelationRecord = { _id: this.deps.newId(), projectId: scope.projectId, lpId: item.lpId, fromId, toId, type: stored.type, pair: pairOf(itemId, input.itemId), createdBy: scope.actor.userId, createdAt: this.deps.clock.now() }
    await this.deps.followUps.guard({ kind: RELATION_ADDED, relationId: record._id }, async () => {
      try {
        await this.records.insertOne(record)
      } catch (error) {
        if (!(error instanceof DuplicateKeyError)) throw error
        const existing = await this.records.findOne({ pair: record.pair })
        throw trackerErrors.relationExists({ type: existing === null ? 'another type' : typeSeenFrom(existing, itemId) })
      }
    })
    return { id: record._id, type: input.type, itemId: other._id, key: itemKey(scope.project.identifier, other.seq), title: other.title, stateGroup: other.stateGroup, createdBy: record.createdBy, createdAt: isoString(record.createdAt) }
  }

  async delete (scope: TrackerScope, itemId: string, relationId: string): Promise<void> {
    requireWritable(scope)
    refuseGuest(scope, 'relate items')
    await this.deps.workItems.visible(scope, itemId)
    const relation = await this.records.findOne({ _id: relationId, $or: [{ fromId: itemId }, { toId: itemId }] })
    if (relation === null) throw trackerErrors.relationNotFound()
    await this.deps.followUps.guard({ kind: RELATION_REMOVED, relation, actorId: scope.actor.userId, at: this.deps.clock.now().toISOString() }, async () => {
      await this.records.deleteOne({ _id: relationId })
    })
  }

  /** Activity on both sides of a relation that exists. */
  private async added (relationId: string): Promise<void> {
    const relation = await this.records.findOne({ _id: relationId })
    if (relation === null) return
    for (const [side, other] of [[relation.fromId, relation.toId], [relation.toId, relation.fromId]]) {
      await this.deps.items.record({ _id: side, projectId: relation.projectId, lpId: relation.lpId }, activityIds(relationId, side, 'added'), relation.createdBy, { field: 'relation', from: null, to: { type: typeSeenFrom(relation, side), itemId: other } }, relation.createdAt)
    }
  }

  /** Activity on both sides of a relation that is gone. */
  private async removed (task: { relation: RelationRecord, actorId: string, at: string }): Promise<void> {
    const { relation } = task
    if (await this.records.findOne({ _id: relation._id }, { projection: { _id: 1 } }) !== null) return
    for (const [side, other] of [[relation.fromId, relation.toId], [relation.toId, relation.fromId]]) {
      await this.deps.items.record({ _id: side, projectId: relation.projectId, lpId: relation.lpId }, activityIds(relation._id, side, 'removed'), task.actorId, { field: 'relation', from: { type: typeSeenFrom(relation, side), itemId: other }, to: null }, new Date(task.at))
    }
  }

  async purgeItem (itemId: string): Promise<void> {
    await this.records.deleteMany({ $or: [{ fromId: itemId }, { toId: itemId }] })
  }

  async purge (lpId: string): Promise<void> {
    await this.records.deleteMany({ lpId })
  }
}
