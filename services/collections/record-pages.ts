import type { Document, Filter, ScanPage, SharedReads, WithId } from '../store/types.js'
import { andFilters, restrict, type Access } from './access.js'
import { orderRange, QUERY_LIMITS, type SortKey, type SortPlan } from './query.js'

/** What one list page reads: the caller's filter with the rule applied, the order, where the page starts and its size. */
export interface PageRead {
  filter: Filter
  access: Access
  order: SortPlan
  /** The sort values (and id) of the record before the page, from its cursor; null on a first or offset page. */
  after: unknown[] | null
  offset: number
  /** The page's size plus one, the record telling whether a next page exists. */
  limit: number
  /** No index serves the client's filter: the page examines a bounded window (scanPage). */
  scanned: boolean
}

/**
 * One list page of records, read shared: documents (and their API form)
 * unchanged since an earlier page are reused, not copied. `last` is where
 * a scanned page's next page starts (see scanPage); null otherwise.
 */
export async function readPage (records: SharedReads<Document>, read: PageRead): Promise<ScanPage<Document>> {
  if (read.scanned) return await scanPage(records, read)
  const { filter, order, after, limit } = read
  if (after === null) return { docs: await records.find(filter, { sort: order.sort, limit, ...(read.offset === 0 ? {} : { skip: read.offset }) }).toArray(), last: null }
  let docs: Array<WithId<Document>> = []
  for (const segment of keysetSegments(order.keys, after)) {
    // Each range is asked for a whole page: the repeats dropped from it may leave the page short of what it could still give.
    docs = withoutRepeats([...docs, ...await records.find(andFilters(filter, segment), { sort: order.sort, limit }).toArray()])
    if (docs.length >= limit) break
  }
  return { docs: docs.slice(0, limit), last: null }
}

/**
 * The ranges of one page are separate reads, which MongoDB does not give one
 * snapshot: a record whose sort value changes between two of them can be in
 * both. It stays where it was read first.
 */
export function withoutRepeats<T extends { _id: unknown }> (docs: readonly T[]): T[] {
  const seen = new Set<unknown>()
  return docs.filter((doc) => {
    if (seen.has(doc._id)) return false
    seen.add(doc._id)
    return true
  })
}

/**
 * The records after a cursor's position, as ranges to read one after the
 * other in the list's order, whose concatenation is orderRange's answer. One
 * `$or` of them is sorted whole by SQLite (it reads each branch through the
 * index, then sorts every record after the cursor), while each range alone is
 * walked in the index's order and stops at the page. So page N of a sort on an
 * indexed key costs what page 1 does. In an order by
 * one field and the id: the records tied with the cursor's value after its
 * id, then those beyond the value, then (descending, where null sorts last)
 * those without one.
 */
export function keysetSegments (keys: readonly SortKey[], after: unknown[]): Filter[] {
  if (keys.length !== 2 || keys[1][0] !== '_id') return [orderRange(keys, after, null)]
  const [[key, dir], [, idDir]] = keys
  const [value, id] = after
  const segments: Filter[] = [{ [key]: value, _id: { [idDir === 1 ? '$gt' : '$lt']: id } }]
  if (value === null) {
    if (dir === 1) segments.push({ [key]: { $ne: null } })
    return segments
  }
  segments.push({ [key]: { [dir === 1 ? '$gt' : '$lt']: value } })
  if (dir === -1) segments.push({ [key]: null })
  return segments
}

/**
 * A page when no index serves the client's filter: the matches among the
 * maxExamined records the caller's rule lets it see after the cursor (or
 * after `skip` of them, for an offset page) in the list's order, whatever
 * the client's filter, and the last of those records (null when fewer are
 * left), where the next page starts. Counting only visible records keeps a
 * short page from telling how many records the rule hides in the window;
 * the rule's own filter is the admin's to index.
 */
async function scanPage (records: SharedReads<Document>, { filter, access, order, after, offset, limit }: PageRead): Promise<ScanPage<Document>> {
  // Shared, so that the same last record (and the cursor sealed after it) is the same instance until the collection changes.
  return await records.scan(restrict(orderRange(order.keys, after, null), access), filter, {
    sort: order.sort,
    examine: offset + QUERY_LIMITS.maxExamined,
    skip: offset,
    limit,
    query: (last) => andFilters(filter, orderRange(order.keys, after, last === null ? null : order.keys.map(([key]) => Object.hasOwn(last, key) ? last[key] ?? null : null)))
  })
}
