import { cursorScope, orderRange, type Cursors, type SortKey, type SortPlan } from '../collections/query.js'
import type { Document, Filter, StoreCollection, WithId } from '../store/types.js'
import { TRACKER_LIMITS } from '../../schemas/tracker.js'

/**
 * Keyset pages for every tracker list, on the collections API's sealed
 * cursors (services/collections/query.ts): a cursor holds the last record's
 * sort values, encrypted and bound to the list, filter and order it came
 * from, so it can be neither read nor replayed elsewhere.
 */

export type { SortKey, SortPlan }

/** An order over the given keys; lists name a unique key last so the order is total. */
export function sortPlan (keys: readonly SortKey[]): SortPlan {
  return { keys, sort: Object.fromEntries(keys), spec: keys.map(([key, dir]) => `${dir < 0 ? '-' : ''}${key}`).join(',') }
}

export interface PageRequest { limit?: number, cursor?: string }

export interface ListOf<T> { docs: Array<WithId<T>>, nextCursor: string | null }

/**
 * What a cursor is bound to: the platform project, the list (`what` and the
 * tracker project or item it lists), the filter as the caller asked for it
 * and the order.
 */
export function listScope (projectId: string, what: string, asked: unknown, plan: SortPlan): string {
  return cursorScope(projectId, `tracker:${what}`, (asked ?? {}) as Filter, plan)
}

export async function keysetPage<T extends Document> (
  collection: Pick<StoreCollection<T>, 'find'>,
  filter: Filter,
  plan: SortPlan,
  request: PageRequest,
  cursors: Cursors,
  scope: string
): Promise<ListOf<T>> {
  const limit = Math.min(request.limit ?? TRACKER_LIMITS.pageDefault, TRACKER_LIMITS.pageMax)
  const after = request.cursor === undefined ? null : cursors.decode(request.cursor, plan, scope)
  const range = orderRange(plan.keys, after, null)
  const query = Object.keys(range).length === 0 ? filter : { $and: [filter, range] }
  const found = await collection.find(query, { sort: plan.sort, limit: limit + 1 }).toArray()
  const docs = found.slice(0, limit)
  return { docs, nextCursor: found.length > limit ? cursors.encode(docs[docs.length - 1], scope) : null }
}
