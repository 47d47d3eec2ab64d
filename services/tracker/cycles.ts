import type { Clock } from '../platform/clock.js'
import type { Cursors } from '../collections/query.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Store, StoreCollection } from '../store/types.js'
import { TRACKER_LIMITS, type ListQueryT, type PageOf } from '../../schemas/tracker.js'
import type { BurndownT, CreateCycleBodyT, CycleStatusT, CycleT, TransferResultT, UpdateCycleBodyT } from '../../schemas/tracker-planning.js'
import { ownsOrAdmin, refuseGuest, requireFeature, requireWritable, type TrackerScope } from './access.js'
import { daysBetween, daysFrom, isDay, localDay } from './calendar.js'
import { trackerErrors } from './errors.js'
import type { FollowUps } from './follow-ups.js'
import { keysetPage, listScope, sortPlan } from './paging.js'
import type { Progress } from './progress.js'
import { TRACKER_COLLECTIONS, type CycleDayRecord, type CycleRecord } from './records.js'

export const DELETE_CYCLE = 'cycleDelete'
export const TRANSFER_CYCLE = 'cycleTransfer'
const ORDER = sortPlan([['startDate', 1], ['_id', 1]])
// A claim this young may belong to a create still on its way to writing its cycle.
const CLAIM_GRACE_MS = 60_000
const dayId = (lpId: string, day: string): string => `${lpId}:${day}`

/**
 * Cycles (sprints). Their date ranges may not share a day: each day a cycle
 * spans is a document whose id is the project and the day, written for all
 * the days at once (insertMany is all-or-nothing) before the cycle itself,
 * so of two overlapping creates, however they race, one gets every day and
 * the other none. A claim whose cycle never came (its create died) is taken
 * back once it is older than a minute.
 */
export class TrackerCycles {
  readonly records: StoreCollection<CycleRecord>
  readonly days: StoreCollection<CycleDayRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, cursors: Cursors, progress: Progress, followUps: FollowUps }) {
    this.records = store.collection<CycleRecord>(TRACKER_COLLECTIONS.cycles)
    this.days = store.collection<CycleDayRecord>(TRACKER_COLLECTIONS.cycleDays)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ lpId: 1, startDate: 1, _id: 1 })
    await this.days.createIndex({ cycleId: 1 })
    await this.days.createIndex({ lpId: 1 })
  }

  status (scope: TrackerScope, cycle: CycleRecord): CycleStatusT {
    if (cycle.startDate === null || cycle.endDate === null) return 'draft'
    const today = localDay(this.deps.clock.now(), scope.project.timezone)
    return today < cycle.startDate ? 'upcoming' : today > cycle.endDate ? 'completed' : 'current'
  }

  async view (scope: TrackerScope, cycle: CycleRecord): Promise<CycleT> {
    const status = this.status(scope, cycle)
    const progress = status === 'completed' && cycle.progressSnapshot !== null ? cycle.progressSnapshot : await this.deps.progress.of(cycle.lpId, { cycleId: cycle._id })
    return {
      id: cycle._id,
      name: cycle.name,
      description: cycle.description,
      startDate: cycle.startDate,
      endDate: cycle.endDate,
      status,
      ownerId: cycle.ownerId,
      progress,
      progressSnapshot: cycle.progressSnapshot,
      transferredTo: cycle.transferredTo,
      createdAt: isoString(cycle.createdAt),
      updatedAt: isoString(cycle.updatedAt),
      version: cycle.version
    }
  }

  async list (scope: TrackerScope, page: ListQueryT): Promise<PageOf<CycleT>> {
    this.guard(scope)
    const lpId = scope.project._id
    const { docs, nextCursor } = await keysetPage(this.records, { lpId, deletedAt: null }, ORDER, page, this.deps.cursors, listScope(scope.projectId, `cycles:${lpId}`, null, ORDER))
    const items: CycleT[] = []
    for (const doc of docs) items.push(await this.view(scope, doc))
    return { items, nextCursor }
  }

  async get (scope: TrackerScope, cycleId: string): Promise<CycleT> {
    this.guard(scope)
    return await this.view(scope, await this.record(scope.project._id, cycleId))
  }

  async create (scope: TrackerScope, input: CreateCycleBodyT): Promise<CycleT> {
    this.guard(scope)
    requireWritable(scope)
    const name = input.name.trim()
    if (name === '') throw trackerErrors.invalidValue({ path: 'body.name', problem: 'is blank' })
    const range = this.range(input.startDate ?? null, input.endDate ?? null)
    const now = this.deps.clock.now()
    const cycle: CycleRecord = {
      _id: this.deps.newId(),
      projectId: scope.projectId,
      lpId: scope.project._id,
      name,
      description: input.description ?? '',
      startDate: range?.[0] ?? null,
      endDate: range?.[1] ?? null,
      ownerId: scope.actor.userId,
      progressSnapshot: null,
      transferredTo: null,
      deletedAt: null,
      createdAt: now,
      updatedAt: now,
      version: 1
    }
    if (range !== null) await this.claim(cycle, daysFrom(range[0], range[1]))
    try {
      await this.records.insertOne(cycle)
    } catch (error) {
      await this.days.deleteMany({ cycleId: cycle._id })
      throw error
    }
    return await this.view(scope, cycle)
  }

  /** New days are claimed before the cycle moves onto them, days it left are let go after. */
  async update (scope: TrackerScope, cycleId: string, input: UpdateCycleBodyT, ifMatch?: number): Promise<CycleT> {
    this.guard(scope)
    requireWritable(scope)
    const cycle = await this.open(scope, cycleId)
    if (ifMatch !== undefined && ifMatch !== cycle.version) throw trackerErrors.versionMismatch({ what: 'cycle', expected: ifMatch, actual: cycle.version })
    const set: Partial<CycleRecord> = { updatedAt: this.deps.clock.now(), version: cycle.version + 1 }
    if (input.name !== undefined) {
      set.name = input.name.trim()
      if (set.name === '') throw trackerErrors.invalidValue({ path: 'body.name', problem: 'is blank' })
    }
    if (input.description !== undefined) set.description = input.description
    let added: string[] = []
    let left: string[] = []
    if (input.startDate !== undefined || input.endDate !== undefined) {
      const range = this.range(input.startDate !== undefined ? input.startDate : cycle.startDate, input.endDate !== undefined ? input.endDate : cycle.endDate)
      const before = new Set(cycle.startDate === null || cycle.endDate === null ? [] : daysFrom(cycle.startDate, cycle.endDate))
      const after = range === null ? [] : daysFrom(range[0], range[1])
      added = after.filter((day) => !before.has(day))
      left = [...before].filter((day) => !after.includes(day))
      set.startDate = range?.[0] ?? null
      set.endDate = range?.[1] ?? null
    }
    if (added.length > 0) await this.claim(cycle, added)
    const updated = await this.records.findOneAndUpdate({ _id: cycle._id, version: cycle.version, deletedAt: null }, { $set: set }, { returnDocument: 'after' })
    if (updated === null) {
      if (added.length > 0) await this.days.deleteMany({ _id: { $in: added.map((day) => dayId(cycle.lpId, day)) }, cycleId: cycle._id })
      throw trackerErrors.changed({ what: 'cycle' })
    }
    if (left.length > 0) await this.days.deleteMany({ _id: { $in: left.map((day) => dayId(cycle.lpId, day)) }, cycleId: cycle._id })
    return await this.view(scope, updated)
  }

  /** Marked deleted (gone for readers); its items leave it and its days go after (cascades.ts, cycleDelete). */
  async delete (scope: TrackerScope, cycleId: string): Promise<void> {
    this.guard(scope)
    requireWritable(scope)
    const cycle = await this.record(scope.project._id, cycleId)
    if (!ownsOrAdmin(scope, cycle.ownerId)) throw trackerErrors.notYours({ owner: 'owner', action: 'delete this cycle' })
    await this.deps.followUps.guard({ kind: DELETE_CYCLE, projectId: scope.projectId, lpId: cycle.lpId, cycleId }, async () => {
      await this.records.updateOne({ _id: cycleId, deletedAt: null }, { $set: { deletedAt: this.deps.clock.now() } })
    })
  }

  /** A live cycle (for a transfer's follow-up: its target may have gone meanwhile). */
  async live (lpId: string, cycleId: string): Promise<CycleRecord | null> {
    return await this.records.findOne({ _id: cycleId, lpId, deletedAt: null })
  }

  async remove (lpId: string, cycleId: string): Promise<void> {
    await this.days.deleteMany({ cycleId })
    await this.records.deleteOne({ _id: cycleId, lpId, deletedAt: { $ne: null } })
  }

  /**
   * Unfinished items go to another cycle. The source's progress is frozen
   * first (once: a second transfer keeps the first snapshot), then the items
   * move one by one (cascades.ts, cycleTransfer), so a cut-short transfer is
   * finished by its follow-up with the snapshot already right.
   */
  async transfer (scope: TrackerScope, cycleId: string, targetCycleId: string): Promise<TransferResultT> {
    this.guard(scope)
    requireWritable(scope)
    const lpId = scope.project._id
    const source = await this.record(lpId, cycleId)
    if (targetCycleId === cycleId) throw trackerErrors.transferTarget({ problem: 'The target is the cycle itself' })
    const target = await this.records.findOne({ _id: targetCycleId, lpId, deletedAt: null })
    if (target === null) throw trackerErrors.invalidReference({ path: 'body.targetCycleId', problem: 'is not a cycle of this tracker project' })
    if (this.status(scope, target) === 'completed') throw trackerErrors.transferTarget({ problem: `The cycle "${target.name}" is completed` })
    const snapshot = source.progressSnapshot ?? await this.deps.progress.of(lpId, { cycleId })
    const moved = await this.deps.followUps.guard({ kind: TRANSFER_CYCLE, lpId, from: cycleId, to: targetCycleId, actorId: scope.actor.userId }, async () => {
      await this.records.updateOne({ _id: cycleId, progressSnapshot: null }, { $set: { progressSnapshot: snapshot, transferredTo: targetCycleId, updatedAt: this.deps.clock.now() } })
    })
    const frozen = (await this.records.findOne({ _id: cycleId }))?.progressSnapshot ?? snapshot
    return { moved: Number(moved), snapshot: frozen }
  }

  async burndown (scope: TrackerScope, cycleId: string, unit: 'items' | 'points' = 'items'): Promise<BurndownT> {
    this.guard(scope)
    const cycle = await this.record(scope.project._id, cycleId)
    if (cycle.startDate === null) throw trackerErrors.invalidValue({ path: 'params.cycleId', problem: 'is a draft cycle: without dates it has no burndown' })
    return await this.deps.progress.burndown(cycle, scope.project.timezone, unit)
  }

  /** What item writes ask (ItemRules): an item may not leave or enter a completed cycle, nor enter one that does not exist. */
  async checkMove (scope: TrackerScope, from: string | null, to: string | null, path: string): Promise<void> {
    if (from !== null) {
      const source = await this.records.findOne({ _id: from, lpId: scope.project._id, deletedAt: null })
      if (source !== null && this.status(scope, source) === 'completed') throw trackerErrors.cycleCompleted({ name: source.name })
    }
    if (to === null) return
    requireFeature(scope, 'cycles')
    const target = await this.records.findOne({ _id: to, lpId: scope.project._id, deletedAt: null })
    if (target === null) throw trackerErrors.invalidReference({ path, problem: 'is not a cycle of this tracker project' })
    if (this.status(scope, target) === 'completed') throw trackerErrors.cycleCompleted({ name: target.name })
  }

  async ids (lpId: string): Promise<string[]> {
    return (await this.records.find({ lpId, deletedAt: null }, { sort: { startDate: 1, _id: 1 }, projection: { _id: 1 } }).toArray()).map((cycle) => cycle._id)
  }

  async purge (lpId: string): Promise<void> {
    await this.days.deleteMany({ lpId })
    await this.records.deleteMany({ lpId })
  }

  private guard (scope: TrackerScope): void {
    requireFeature(scope, 'cycles')
    refuseGuest(scope, 'use cycles')
  }

  private range (start: string | null, end: string | null): [string, string] | null {
    if (start === null && end === null) return null
    if (start === null || end === null) throw trackerErrors.invalidValue({ path: start === null ? 'body.startDate' : 'body.endDate', problem: 'give both dates or neither' })
    for (const [value, path] of [[start, 'body.startDate'], [end, 'body.endDate']]) if (!isDay(value)) throw trackerErrors.invalidValue({ path, problem: 'is not a day (YYYY-MM-DD)' })
    if (end < start) throw trackerErrors.invalidValue({ path: 'body.endDate', problem: 'is before startDate' })
    if (daysBetween(start, end) + 1 > TRACKER_LIMITS.cycleDays) throw trackerErrors.invalidValue({ path: 'body.endDate', problem: `a cycle spans at most ${TRACKER_LIMITS.cycleDays} days` })
    return [start, end]
  }

  /** All the days at once, or 409 naming the cycle that holds one of them (dead claims are taken back and tried again once). */
  private async claim (cycle: CycleRecord, wanted: string[], retry = true): Promise<void> {
    const now = this.deps.clock.now()
    // Days this cycle holds already (left over from an update cut short) need no second claim.
    const own = new Set((await this.days.find({ _id: { $in: wanted.map((day) => dayId(cycle.lpId, day)) }, cycleId: cycle._id }).toArray()).map((claim) => claim.day))
    const days = wanted.filter((day) => !own.has(day))
    if (days.length === 0) return
    try {
      await this.days.insertMany(days.map((day) => ({ _id: dayId(cycle.lpId, day), lpId: cycle.lpId, cycleId: cycle._id, day, claimedAt: now })))
      return
    } catch (error) {
      if (!(error instanceof DuplicateKeyError)) throw error
    }
    const held = await this.days.find({ _id: { $in: days.map((day) => dayId(cycle.lpId, day)) }, cycleId: { $ne: cycle._id } }).toArray()
    for (const claim of held) {
      const holder = await this.records.findOne({ _id: claim.cycleId })
      const live = holder === null
        ? claim.claimedAt.getTime() > now.getTime() - CLAIM_GRACE_MS
        : holder.deletedAt === null && holder.startDate !== null && holder.endDate !== null && claim.day >= holder.startDate && claim.day <= holder.endDate
      if (live) {
        throw trackerErrors.cycleOverlap({
          name: holder?.name ?? 'being created', startDate: holder?.startDate ?? claim.day, endDate: holder?.endDate ?? claim.day, cycleId: claim.cycleId
        })
      }
      await this.days.deleteOne({ _id: claim._id, cycleId: claim.cycleId, claimedAt: claim.claimedAt })
    }
    if (!retry) throw trackerErrors.changed({ what: 'cycle calendar' })
    await this.claim(cycle, days, false)
  }

  private async record (lpId: string, cycleId: string): Promise<CycleRecord> {
    const cycle = await this.records.findOne({ _id: cycleId, lpId, deletedAt: null })
    if (cycle === null) throw trackerErrors.cycleNotFound()
    return cycle
  }

  /** A cycle that may still change: not completed. */
  private async open (scope: TrackerScope, cycleId: string): Promise<CycleRecord> {
    const cycle = await this.record(scope.project._id, cycleId)
    if (this.status(scope, cycle) === 'completed') throw trackerErrors.cycleCompleted({ name: cycle.name })
    return cycle
  }
}
