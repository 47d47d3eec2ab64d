import { cursorScope, orderRange, type Cursors, type SortKey, type SortPlan } from '../collections/query.js'
import type { Document, Filter, StoreCollection, WithId } from '../store/types.js'
import { WEBHOOK_LIMITS } from '../../schemas/webhooks.js'

/**
 * Keyset pages of the engine's lists on the collections API's sealed
 * cursors: a cursor holds the last item's id, encrypted and bound to the
 * list and filter it came from, so it can be neither read nor used on
 * another list.
 * Ids sort by creation, so one key orders every list.
 */

export interface PageRequest { limit?: number, cursor?: string }
export interface Page<T> { items: T[], nextCursor: string | null }

function plan (keys: readonly SortKey[]): SortPlan {
  return { keys, sort: Object.fromEntries(keys), spec: keys.map(([key, dir]) => `${dir < 0 ? '-' : ''}${key}`).join(',') }
}

export const OLDEST_FIRST = plan([['_id', 1]])
export const NEWEST_FIRST = plan([['_id', -1]])

export async function keysetPage<T extends Document> (
  collection: Pick<StoreCollection<T>, 'find'>,
  filter: Filter,
  order: SortPlan,
  request: PageRequest,
  cursors: Cursors,
  list: string
): Promise<{ docs: Array<WithId<T>>, nextCursor: string | null }> {
  const scope = cursorScope('webhooks', list, filter, order)
  const limit = Math.min(Math.max(1, request.limit ?? WEBHOOK_LIMITS.pageDefault), WEBHOOK_LIMITS.pageMax)
  const after = request.cursor === undefined ? null : cursors.decode(request.cursor, order, scope)
  const range = orderRange(order.keys, after, null)
  const query = Object.keys(range).length === 0 ? filter : { $and: [filter, range] }
  const found = await collection.find(query, { sort: order.sort, limit: limit + 1 }).toArray()
  const docs = found.slice(0, limit)
  return { docs, nextCursor: found.length > limit ? cursors.encode(docs[docs.length - 1], scope) : null }
}
