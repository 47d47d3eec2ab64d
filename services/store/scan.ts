import { QueryError } from './errors.js'
import type { Document, Filter, FindOptions, ScanOptions, ScanPage, StoreCursor, WithId } from './types.js'

interface Finds<T extends Document> { find: (filter: Filter, options: FindOptions) => StoreCursor<WithId<T>> }

/**
 * A bounded scan (SharedReads.scan) as two queries any engine answers: the
 * window's `examine`-th document, then the page up to it. Each query walks
 * the order's index and stops at the bound, so neither reads past the window.
 */
export async function scanByQueries<T extends Document> (reads: Finds<T>, window: Filter, options: ScanOptions<T>): Promise<ScanPage<T>> {
  if (!Number.isSafeInteger(options.examine) || options.examine < 1) throw new QueryError('options.examine', 'A scan examines at least one document')
  const [last] = await reads.find(window, { sort: options.sort, skip: options.examine - 1, limit: 1 }).toArray()
  const docs = await reads.find(options.query(last ?? null), { sort: options.sort, skip: options.skip, limit: options.limit }).toArray()
  return { docs, last: last ?? null }
}
