import type { Clock } from '../platform/clock.js'
import type { Filter } from '../store/types.js'
import { STATE_GROUPS } from '../../schemas/tracker.js'
import { PRIORITIES } from '../../schemas/tracker-filters.js'
import type { AnalyticsDimensionT, AnalyticsGroupT, AnalyticsQueryT, AnalyticsResultT } from '../../schemas/tracker-reports.js'
import type { TrackerActor, TrackerScope } from './access.js'
import { trackerErrors } from './errors.js'
import type { ItemLists } from './item-lists.js'
import type { ItemStore } from './item-store.js'
import type { ItemRecord } from './records.js'

const PAGE = 5000

/** The stored field each dimension reads; list fields count an item once under each value. */
const FIELDS: Record<AnalyticsDimensionT, keyof ItemRecord> = {
  state: 'stateId',
  stateGroup: 'stateGroup',
  label: 'labelIds',
  assignee: 'assignees',
  priority: 'priority',
  estimate: 'estimate',
  cycle: 'cycleId',
  module: 'moduleIds',
  createdBy: 'createdBy',
  createdAt: 'createdAt',
  completedAt: 'completedAt'
}

/** Dimensions with a fixed order of values; the rest go by count, dates by time. */
const ORDER: Partial<Record<AnalyticsDimensionT, readonly string[]>> = { stateGroup: STATE_GROUPS, priority: PRIORITIES }

interface Tally { count: number, points: number }
type Key = string | null

/** The day a time falls on in a timezone, `YYYY-MM-DD`. */
function localDay (at: Date, timezone: string): string {
  return new Intl.DateTimeFormat('en-CA', { timeZone: timezone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(at)
}

/** The first day of the week (Monday) or month a time falls in, in the tracker project's timezone. */
export function bucketOf (at: Date, interval: 'week' | 'month', timezone: string): string {
  const day = localDay(at, timezone)
  if (interval === 'month') return `${day.slice(0, 7)}-01`
  const date = new Date(`${day}T00:00:00.000Z`)
  date.setUTCDate(date.getUTCDate() - ((date.getUTCDay() + 6) % 7))
  return date.toISOString().slice(0, 10)
}

/**
 * Counts and point sums of the work items a caller sees, grouped by one
 * dimension and optionally segmented by a second, under the filter grammar
 * and the visibility rules the lists apply (services/tracker/item-lists.ts).
 */
export class TrackerAnalytics {
  constructor (private readonly deps: {
    clock: Clock
    items: ItemStore
    lists: ItemLists
    scopeOf: (actor: TrackerActor, projectId: string, lpId: string) => Promise<TrackerScope>
  }) {}

  async report (actor: TrackerActor, projectId: string, query: AnalyticsQueryT): Promise<AnalyticsResultT> {
    const scope = await this.deps.scopeOf(actor, projectId, query.lpId)
    const segment = query.segment ?? null
    if (segment === query.groupBy) throw trackerErrors.invalidValue({ path: 'query.segment', problem: 'must differ from groupBy' })
    const { filter } = await this.deps.lists.filterFor(scope, query.filter, undefined)
    const keysOf = this.keys(scope, query.interval ?? 'week')
    const total: Tally = { count: 0, points: 0 }
    const groups = new Map<Key, { tally: Tally, segments: Map<Key, Tally> }>()
    const add = (tally: Tally, points: number): void => { tally.count++; tally.points += points }
    const fields: Record<string, 1> = { [FIELDS[query.groupBy]]: 1, estimate: 1, ...(segment === null ? {} : { [FIELDS[segment]]: 1 }) }
    let after = ''
    for (;;) {
      const page = await this.deps.items.items.find({ $and: [filter, { _id: { $gt: after } }] } as Filter, { sort: { _id: 1 }, limit: PAGE, projection: fields }).toArray()
      for (const item of page) {
        const points = item.estimate ?? 0
        add(total, points)
        for (const key of keysOf(query.groupBy, item)) {
          let group = groups.get(key)
          if (group === undefined) groups.set(key, group = { tally: { count: 0, points: 0 }, segments: new Map() })
          add(group.tally, points)
          if (segment === null) continue
          for (const part of keysOf(segment, item)) {
            const tally = group.segments.get(part) ?? { count: 0, points: 0 }
            add(tally, points)
            group.segments.set(part, tally)
          }
        }
      }
      if (page.length < PAGE) break
      after = page[page.length - 1]._id
    }
    const result: AnalyticsGroupT[] = this.sorted(query.groupBy, [...groups.entries()].map(([value, group]) => ({ value, tally: group.tally, segments: group.segments })))
      .map(({ value, tally, segments }) => ({
        value,
        count: tally.count,
        points: tally.points,
        ...(segment === null ? {} : { segments: this.sorted(segment, [...segments.entries()].map(([part, sum]) => ({ value: part, tally: sum }))).map((part) => ({ value: part.value, count: part.tally.count, points: part.tally.points })) })
      }))
    return { groupBy: query.groupBy, segment, total, groups: result }
  }

  /** The values an item falls under for a dimension: one, several (labels, assignees, modules) or null for none. */
  private keys (scope: TrackerScope, interval: 'week' | 'month') {
    return (dimension: AnalyticsDimensionT, item: Partial<ItemRecord>): Key[] => {
      const raw = item[FIELDS[dimension]] as unknown
      if (raw instanceof Date) return [bucketOf(raw, interval, scope.project.timezone)]
      if (Array.isArray(raw)) return raw.length === 0 ? [null] : [...new Set(raw as string[])]
      return [raw === null || raw === undefined ? null : String(raw)]
    }
  }

  private sorted<T extends { value: Key, tally: Tally }> (dimension: AnalyticsDimensionT, rows: T[]): T[] {
    const order = ORDER[dimension]
    const rank = (value: Key): number => value === null ? Number.MAX_SAFE_INTEGER : order === undefined ? 0 : order.indexOf(value)
    const byTime = dimension === 'createdAt' || dimension === 'completedAt' || dimension === 'estimate'
    return rows.sort((a, b) => {
      if (a.value === null || b.value === null) return rank(a.value) - rank(b.value)
      if (order !== undefined) return rank(a.value) - rank(b.value)
      if (byTime) return dimension === 'estimate' ? Number(a.value) - Number(b.value) : a.value.localeCompare(b.value)
      return b.tally.count - a.tally.count || a.value.localeCompare(b.value)
    })
  }
}
