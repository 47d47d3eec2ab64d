import type { Clock } from '../platform/clock.js'
import type { Filter } from '../store/types.js'
import type { BurndownT, ProgressT } from '../../schemas/tracker-planning.js'
import { addDays, daysBetween, daysFrom, localDay, startOfDay } from './calendar.js'
import type { ItemStore } from './item-store.js'
import type { ActivityRecord, CycleRecord, ItemRecord } from './records.js'

/**
 * Progress of a set of items (a cycle's, a module's) and a cycle's burndown.
 * The burndown is replayed from the items' activity: each item's cycle,
 * state group and estimate at the end of each day are its current values
 * with every later change undone, so it needs no daily snapshots and agrees
 * with the activity log by construction.
 */

type Tracked = Pick<ItemRecord, '_id' | 'cycleId' | 'stateGroup' | 'estimate' | 'createdAt'>
const REPLAYED = ['cycle', 'stateGroup', 'estimate']

export function emptyProgress (): ProgressT {
  return { total: 0, backlog: 0, unstarted: 0, started: 0, completed: 0, cancelled: 0, totalPoints: 0, completedPoints: 0 }
}

export class Progress {
  constructor (private readonly deps: { clock: Clock, items: ItemStore }) {}

  /** Counts per state group and point sums over the live items `filter` selects (archived ones included). */
  async of (lpId: string, filter: Filter): Promise<ProgressT> {
    const progress = emptyProgress()
    const items = await this.deps.items.items.find({ lpId, deletedAt: null, ...filter }, { projection: { stateGroup: 1, estimate: 1 } }).toArray()
    for (const item of items) {
      if (item.stateGroup === 'triage') continue
      progress.total++
      progress[item.stateGroup]++
      const points = item.estimate ?? 0
      if (item.stateGroup !== 'cancelled') progress.totalPoints += points
      if (item.stateGroup === 'completed') progress.completedPoints += points
    }
    return progress
  }

  async burndown (cycle: CycleRecord, timezone: string, unit: 'items' | 'points'): Promise<BurndownT> {
    const start = cycle.startDate as string
    const end = cycle.endDate as string
    const today = localDay(this.deps.clock.now(), timezone)
    const answer: BurndownT = { cycleId: cycle._id, unit, startDate: start, endDate: end, days: [] }
    if (today < start) return answer
    const last = today < end ? today : end
    const { items, history } = await this.history(cycle)
    const weight = (estimate: number | null): number => unit === 'points' ? estimate ?? 0 : 1
    /** Each item's weight in the cycle's scope at `at` (0 outside it, cancelled or not yet made), and whether it was completed. */
    const at = (item: Tracked, instant: Date): { scope: number, done: number } => {
      if (item.createdAt > instant) return { scope: 0, done: 0 }
      let cycleId = item.cycleId
      let group: string = item.stateGroup
      let estimate = item.estimate
      for (const event of history.get(item._id) ?? []) {
        if (event.at <= instant) break
        if (event.field === 'cycle') cycleId = event.from as string | null
        else if (event.field === 'stateGroup') group = event.from as string
        else estimate = event.from as number | null
      }
      if (cycleId !== cycle._id || group === 'cancelled') return { scope: 0, done: 0 }
      const value = weight(estimate)
      return { scope: value, done: group === 'completed' ? value : 0 }
    }
    const length = daysBetween(start, end)
    let before = items.map((item) => at(item, startOfDay(start, timezone)))
    let first: number | null = null
    for (const day of daysFrom(start, last)) {
      const now = items.map((item) => at(item, startOfDay(addDays(day, 1), timezone)))
      let scope = 0; let completed = 0; let added = 0; let removed = 0
      now.forEach((value, index) => {
        scope += value.scope
        completed += value.done
        const change = value.scope - before[index].scope
        if (change > 0) added += change
        else removed -= change
      })
      first ??= scope
      const index = daysBetween(start, day)
      answer.days.push({ date: day, scope, completed, remaining: scope - completed, ideal: length === 0 ? first : round(first * (1 - index / length)), added, removed })
      before = now
    }
    return answer
  }

  /** The items ever in the cycle and, per item, its replayed changes newest first. */
  private async history (cycle: CycleRecord): Promise<{ items: Tracked[], history: Map<string, ActivityRecord[]> }> {
    const { lpId } = cycle
    const moved = await this.deps.items.activity.find({ lpId, field: 'cycle', $or: [{ from: cycle._id }, { to: cycle._id }] }, { projection: { itemId: 1 } }).toArray()
    const ids = new Set(moved.map((entry) => entry.itemId))
    const items = await this.deps.items.items.find({ lpId, deletedAt: null, $or: [{ cycleId: cycle._id }, { _id: { $in: [...ids] } }] }, { projection: { cycleId: 1, stateGroup: 1, estimate: 1, createdAt: 1 } }).toArray()
    const events = items.length === 0 ? [] : await this.deps.items.activity.find({ itemId: { $in: items.map((item) => item._id) }, field: { $in: REPLAYED } }, { sort: { at: -1, _id: -1 } }).toArray()
    const history = new Map<string, ActivityRecord[]>()
    for (const event of events) history.set(event.itemId, [...(history.get(event.itemId) ?? []), event])
    return { items, history }
  }
}

const round = (value: number): number => Math.round(value * 1000) / 1000
