import type { Document, Filter, Sort } from '../types.js'
import type { CollectionMeta, Connection } from './connection.js'
import { quoteIdentifier } from './names.js'
import { KeyRank } from './paths.js'
import { cachedWhere, flattenAnd, statementText, type WhereClause } from './plans.js'
import type { DocumentTest, OrderPlan } from './query.js'

/**
 * Pages read as row numbers first (query.ts selectDocuments, selectScan): from
 * the index alone, the documents then taken from the cache or read by row
 * number, and a shared page remembered as its row numbers.
 */

/** The table as a statement reads it: through the index the order plan names, if any. */
export function source (meta: CollectionMeta, order: OrderPlan | null): string {
  const table = quoteIdentifier(meta.table)
  return order?.index == null ? table : `${table} INDEXED BY ${quoteIdentifier(order.index)}`
}

/**
 * LIMIT is inlined (a validated integer, never a filter value): SQLite's
 * planner reads a bound LIMIT, so rebinding it re-prepares the statement on
 * every call, which costs more than the lookup itself.
 */
export function limitClause (limit: number): string {
  return `LIMIT ${limit === 0 ? -1 : limit}`
}

/**
 * At most this many documents of a scan's window are read from the table and
 * cached by one scan. A window with more not cached is answered by queries
 * instead (scanByQueries: the page's filter runs in SQL, which reads rows far
 * more cheaply than they are parsed and frozen), while this many of them are
 * cached on the way, so a window asked for again is soon answered from memory
 * and a window passed through once costs little more than the queries.
 */
export const SCAN_READS = 64
/**
 * A larger window (a deep offset page examines offset + maxExamined records)
 * is always queried: a quarter of the 4,096 documents the cache keeps, it
 * would not stay cached, and reading its row numbers first would be wasted.
 */
export const SCAN_WINDOW_MAX = 1024
export const SCAN_LIMIT_STEP = 128

/**
 * A shared page of at most this many rows is remembered as its row numbers
 * (DocumentCache.page) for as long as its collection is unchanged, so the
 * same page asked for again walks no index and runs no matcher.
 */
export const PAGE_MEMO_LIMIT = 1000

/**
 * What names a page: the SQL filter and its values (exact, so they alone
 * decide which rows match), the order, the index walked, skip and limit.
 */
export function pageKey (where: WhereClause, order: OrderPlan, skip: number, limit: number): string | null {
  let values = ''
  for (const param of where.params) {
    // Each value as SQLite binds it, its type spelled out, so no two values write alike; an unexpected kind is not kept.
    if (typeof param === 'string') values += `s${JSON.stringify(param)},`
    else if (typeof param === 'number' || typeof param === 'bigint') values += `n${String(param)},`
    else if (param === null) values += 'z,'
    else if (Buffer.isBuffer(param)) values += `x${param.toString('hex')},`
    else return null
  }
  // A cached clause by its name (SQL never starts with \u0001, so a name and a text cannot be taken for each other).
  return `${order.sql}|${order.index}|${skip}|${limit}|${where.name ?? where.sql}|${values}`
}

/** The documents of rows `seqs`, in that order: from the cache, the rest read in one statement. */
export function documentsOfRows (connection: Connection, meta: CollectionMeta, seqs: readonly number[], shared: boolean): Document[] {
  const docs = new Array<Document>(seqs.length)
  let missing: number[] | null = null
  for (let i = 0; i < seqs.length; i++) {
    const doc = connection.cachedRow(meta.name, seqs[i], shared)
    if (doc === undefined) (missing ??= []).push(i)
    else docs[i] = doc
  }
  if (missing !== null) readRows(connection, meta, seqs, missing, docs, shared)
  return docs
}

/**
 * The row numbers of the rows `where` selects, in `order`, read from the
 * index alone; null when the order ranks the sort field and a row holds an
 * object there, which only the semantics order.
 */
export function orderedRows (connection: Connection, meta: CollectionMeta, where: WhereClause, order: OrderPlan, limit: number, skip: number): number[] | null {
  if (order.rank === null) {
    const sql = statementText(where, `rows|${order.sql}|${order.index}|${limit}`, () => `SELECT seq FROM ${source(meta, order)} WHERE ${where.sql} ORDER BY ${order.sql} ${limitClause(limit)} OFFSET ?`)
    return connection.statement(sql).pluck().all(...where.params, skip) as number[]
  }
  // One plucked column, null for a row holding an object there: a row array per row cost more than the walk itself.
  const sql = statementText(where, `ranked|${order.sql}|${order.index}|${limit}`, () => `SELECT iif(${order.rank} = ${KeyRank.Object}, NULL, seq) FROM ${source(meta, order)} WHERE ${where.sql} ORDER BY ${order.sql} ${limitClause(limit)} OFFSET ?`)
  const seqs = connection.statement(sql).pluck().all(...where.params, skip) as Array<number | null>
  return seqs.includes(null) ? null : seqs as number[]
}

/**
 * A shared page through the index the order names, walked on the index's
 * own conditions alone (the pinned fields before the sort field, and any
 * range on the sort field: a keyset cursor) so SQLite reads the row numbers
 * from the index without parsing a document; the documents come from the
 * cache and the semantics matcher picks the page. SQL evaluating the rest of
 * the filter parses each row it passes. Null, for the SQL page instead, when the walk's SQL
 * is not exact, a row holds an object under the sort field, the walk passes
 * SCAN_WINDOW_MAX rows, or more than SCAN_READS of its documents are not
 * cached (that many are cached on the way, so a page asked for again is soon
 * walked from memory).
 */
export function walkIndex (connection: Connection, meta: CollectionMeta, filter: Filter, test: DocumentTest, order: OrderPlan, sort: Sort, skip: number, limit: number): { docs: Document[], seqs: number[] } | null {
  const index = meta.indexes.find((candidate) => candidate.sqlName === order.index)
  const [field] = Object.keys(sort)
  if (index === undefined || limit === 0) return null
  // Flattened when it can be, so the walk's clause has a shape and is compiled once per shape, not per page.
  const where = cachedWhere(meta, flattenAnd(walkFilter(filter, index.fields.slice(0, index.fields.indexOf(field)), field)))
  if (!where.exact) return null
  if (where.sql === '0') return { docs: [], seqs: [] }
  const docs: Document[] = []
  const picked: number[] = []
  let skipped = 0
  let examined = 0
  let reads = 0
  for (let batch = SCAN_LIMIT_STEP; ; batch = Math.min(batch * 2, SCAN_WINDOW_MAX)) {
    const seqs = orderedRows(connection, meta, where, order, batch, examined)
    if (seqs === null) return null
    const window = new Array<Document | undefined>(seqs.length)
    const missing = connection.cachedSharedRows(meta.name, seqs, window)
    reads += missing.length
    if (reads > SCAN_READS) {
      readRows(connection, meta, seqs, missing.slice(0, Math.max(0, SCAN_READS - reads + missing.length)), window, true)
      return null
    }
    if (missing.length > 0) readRows(connection, meta, seqs, missing, window, true)
    for (let i = 0; i < seqs.length; i++) {
      const doc = window[i] as Document
      if (!test(doc)) continue
      if (skipped < skip) { skipped++; continue }
      docs.push(doc)
      picked.push(seqs[i])
      if (docs.length === limit) return { docs, seqs: picked }
    }
    examined += seqs.length
    if (seqs.length < batch) return { docs, seqs: picked }
    if (examined >= SCAN_WINDOW_MAX) return null
  }
}

/** The parts of a filter (through `$and`s) on the given pinned fields and on the sort field: what an index walk can decide alone. */
function walkFilter (filter: Filter, pinned: readonly string[], sortField: string, parts: Filter[] = []): Filter {
  for (const key of Object.keys(filter)) {
    if (key === '$and') for (const branch of filter.$and as Filter[]) walkFilter(branch, pinned, sortField, parts)
    else if (key === sortField || pinned.includes(key)) parts.push({ [key]: filter[key] })
  }
  return { $and: parts }
}

/** Fills `docs[i]` for each `i` in `missing` with the document of row `seqs[i]`, read in one statement and offered to the cache. */
export function readRows (connection: Connection, meta: CollectionMeta, seqs: readonly number[], missing: number[], docs: Array<Document | undefined>, shared: boolean): void {
  const read = connection.statement(`SELECT seq, id, doc FROM ${quoteIdentifier(meta.table)} WHERE seq IN (SELECT value FROM json_each(?))`).raw()
  const stored = new Map<number, [id: string, json: string]>()
  for (const [seq, id, json] of read.all(JSON.stringify(missing.map((i) => seqs[i]))) as Array<[number, string, string]>) stored.set(seq, [id, json])
  for (const i of missing) {
    const [id, json] = stored.get(seqs[i]) as [string, string]
    docs[i] = connection.rowDocument(meta.name, id, seqs[i], json, shared)
  }
}
