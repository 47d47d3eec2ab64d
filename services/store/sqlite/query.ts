import type { Document, Filter, Sort } from '../types.js'
import { compareValues, compileSort } from '../semantics/index.js'
import { decodeDocument, decodeValue } from './codec.js'
import type { CollectionMeta, Connection } from './connection.js'
import { quoteIdentifier } from './names.js'
import { KeyRank, addressableSegments, jsonPath, keyRankExpression, keyValueExpression } from './paths.js'
import { orderIndex, pinnedFields, tiesImpossible, typeBracketed } from './access-path.js'
import { PAGE_MEMO_LIMIT, SCAN_LIMIT_STEP, SCAN_READS, SCAN_WINDOW_MAX, documentsOfRows, limitClause, orderedRows, pageKey, readRows, source, walkIndex } from './page-reads.js'
import { cachedWhere, statementText, type FilterShape, type WhereClause } from './plans.js'

/** A stored document and its row, so writes can address exactly what was read. */
export interface Match { seq: number, doc: Document }

/** The compiled semantics filter: the final word on whether a document matches. */
export type DocumentTest = (doc: Document) => boolean

export interface Selection {
  sort?: Sort
  skip?: number
  limit?: number
  /** Cached documents may be handed out as their shared frozen instance (StoreExtensions.shared). */
  shared?: boolean
  /** The filter's shape (plans.filterShape), when the caller worked it out already. */
  shape?: FilterShape | null
}

// Above this many kept documents a full sort beats keeping a sorted window.
const TOP_K_WINDOW = 1000

export { validateCount } from '../semantics/options.js'
export { SCAN_READS, SCAN_WINDOW_MAX } from './page-reads.js'

export interface OrderPlan {
  sql: string
  /** The sort field's key rank, selected when a block of objects must be re-sorted by the semantics. */
  rank: string | null
  /** The index SQL must walk (`INDEXED BY`, access-path.ts), or null for SQLite's own choice. */
  index: string | null
}

/**
 * SQL may only order rows where its order is provably MongoDB's: no sort is
 * insertion order (the rowid); `_id` is a string compared bytewise by both;
 * and one field that an index stores as (rank, value) and that holds no array
 * in any document sorts like BSON, except that objects compare as JSON text,
 * so a run of objects is re-sorted by the semantics. Ties go to `_id`, unless
 * the filter makes ties impossible. With a filter and a limit, an index that
 * gives this order under the filter's equalities is named (access-path.ts).
 */
export function planOrder (meta: CollectionMeta, sort: Sort | undefined, filter?: Filter, limit = 0): OrderPlan | null {
  const fields = sort === undefined ? [] : Object.keys(sort)
  if (sort === undefined || fields.length === 0) return { sql: 'seq', rank: null, index: null }
  if (fields.length === 1 && fields[0] === '_id') return { sql: sort._id === -1 ? 'id DESC' : 'id', rank: null, index: null }
  const [field, tieBreak] = fields
  if (fields.length > 2 || (tieBreak !== undefined && tieBreak !== '_id') || field === '_id' || meta.multikey.get(field) !== false) return null
  const segments = field.split('.')
  const direction = sort[field] === -1 ? ' DESC' : ''
  const rank = keyRankExpression(segments)
  const strings = new Set<string>()
  const pinned = filter === undefined ? null : pinnedFields(meta, filter, new Set(), strings)
  const ties = pinned === null || !tiesImpossible(meta, pinned, [field])
  const index = pinned === null || limit === 0 ? null : orderIndex(meta, pinned, sort, ties, strings)
  // A term the filter holds constant is left out: SQLite does not see that an expression column compared by equality
  // is constant, and sorts every row of a range the index already gives in order (a keyset page's `createdAt < t`).
  const terms: string[] = []
  if (filter === undefined || !typeBracketed(filter, field)) terms.push(`${rank}${direction}`)
  if (!ties || pinned === null || !pinned.has(field)) terms.push(`${keyValueExpression(segments)}${direction}`)
  if (ties) terms.push(`id${sort._id === -1 ? ' DESC' : ''}`)
  return { sql: terms.join(', '), rank, index }
}

function compileOrder (sort: Sort): (a: Match, b: Match) => number {
  const compare = compileSort(sort)
  // Ties are broken by _id so that skip/limit pages are stable.
  return (a, b) => compare(a.doc, b.doc) || compareValues(a.doc._id, b.doc._id)
}

export function whereOf (meta: CollectionMeta, filter: Filter, shape?: FilterShape | null): WhereClause {
  return cachedWhere(meta, filter, shape)
}

type Row = [seq: number, json: string, rank?: number]

/** Rows in SQL order, with each run of objects (rank Object) re-sorted by the semantics. */
function * inSortOrder (rows: Iterable<Row>, sort: Sort | undefined): Iterable<Match | Row> {
  let block: Match[] = []
  for (const row of rows) {
    if (row[2] === KeyRank.Object) { block.push({ seq: row[0], doc: decodeDocument(row[1]) }); continue }
    if (block.length > 0) { yield * block.sort(compileOrder(sort as Sort)); block = [] }
    yield row
  }
  if (block.length > 0) yield * block.sort(compileOrder(sort as Sort))
}

/**
 * The documents matching `filter`, ordered, skipped and limited. SQLite
 * narrows the candidates; the semantics matcher decides unless the SQL
 * translation is exact; rows are parsed only as far as the answer needs.
 */
export function selectMatches (connection: Connection, meta: CollectionMeta, filter: Filter, test: DocumentTest, selection: Selection = {}): Match[] {
  const where = whereOf(meta, filter, selection.shape)
  if (where.sql === '0') return []
  const skip = selection.skip ?? 0
  const limit = selection.limit ?? 0
  const table = quoteIdentifier(meta.table)
  const order = planOrder(meta, selection.sort, filter, limit)
  const from = source(meta, order)
  const matcher = where.exact ? null : test
  if (order !== null && order.rank === null && matcher === null) {
    const sql = statementText(where, `page|${order.sql}|${order.index}|${limit}`, () => `SELECT seq, doc FROM ${from} WHERE ${where.sql} ORDER BY ${order.sql} ${limitClause(limit)} OFFSET ?`)
    const rows = connection.statement(sql).raw().all(...where.params, skip) as Row[]
    return rows.map(([seq, json]) => ({ seq, doc: decodeDocument(json) }))
  }
  if (order !== null) {
    const columns = order.rank === null ? 'seq, doc' : `seq, doc, ${order.rank}`
    const rows = connection.statement(statementText(where, `ordered|${columns}|${order.sql}|${order.index}`, () => `SELECT ${columns} FROM ${from} WHERE ${where.sql} ORDER BY ${order.sql}`)).raw()
      .iterate(...where.params) as IterableIterator<Row>
    const found: Match[] = []
    let skipped = 0
    for (const item of order.rank === null ? rows : inSortOrder(rows, selection.sort)) {
      const seq = Array.isArray(item) ? item[0] : item.seq
      const json = Array.isArray(item) ? item[1] : ''
      let doc = Array.isArray(item) ? null : item.doc
      if (matcher !== null) {
        doc ??= decodeDocument(json)
        if (!matcher(doc)) continue
      }
      if (skipped < skip) { skipped++; continue }
      found.push({ seq, doc: doc ?? decodeDocument(json) })
      if (found.length === limit) break
    }
    return found
  }
  const compare = compileOrder(selection.sort as Sort)
  const window = limit === 0 ? Infinity : skip + limit
  const heads = sortHeads(selection.sort as Sort)
  if (matcher === null && heads !== null && window <= TOP_K_WINDOW) {
    // Rank candidates on the sorted fields alone; parse whole documents only for the page.
    const columns = heads.map((head) => `doc -> ${jsonPath([head])}`).join(', ')
    const rows = connection.statement(`SELECT seq, id${columns === '' ? '' : ', ' + columns} FROM ${table} WHERE ${where.sql}`).raw()
      .iterate(...where.params) as IterableIterator<unknown[]>
    const page = keepFirst(mapRows(rows, (row) => ({ seq: row[0] as number, doc: sortFields(row, heads) })), compare, window).slice(skip)
    const read = connection.statement(`SELECT doc FROM ${table} WHERE seq = ?`).pluck()
    return page.map((match) => ({ seq: match.seq, doc: decodeDocument(read.get(match.seq) as string) }))
  }
  const rows = connection.statement(statementText(where, 'all', () => `SELECT seq, doc FROM ${table} WHERE ${where.sql}`)).raw().iterate(...where.params) as IterableIterator<Row>
  const candidates = mapRows(rows, ([seq, json]) => {
    const doc = decodeDocument(json)
    return matcher === null || matcher(doc) ? { seq, doc } : null
  })
  return keepFirst(candidates, compare, window).slice(skip, limit === 0 ? undefined : skip + limit)
}

/**
 * The documents matching `filter` for a read (a write needs the rows too:
 * selectMatches). A page whose filter and order SQL answers exactly is read
 * as row numbers first, from the index alone, and only documents not already
 * cached in this state of the file are read from the table; the rest go
 * through selectMatches.
 */
export function selectDocuments (connection: Connection, meta: CollectionMeta, filter: Filter, test: DocumentTest, selection: Selection = {}): Document[] {
  const where = whereOf(meta, filter, selection.shape)
  const order = planOrder(meta, selection.sort, filter, selection.limit ?? 0)
  if (!connection.readsCachedDocuments() || !where.exact || order === null) {
    return selectMatches(connection, meta, filter, test, selection).map((match) => match.doc)
  }
  if (where.sql === '0') return []
  const shared = selection.shared === true
  const skip = selection.skip ?? 0
  const limit = selection.limit ?? 0
  const key = shared && limit > 0 && limit <= PAGE_MEMO_LIMIT ? pageKey(where, order, skip, limit) : null
  const known = key === null ? undefined : connection.cachedPage(meta.name, key)
  if (known !== undefined) return documentsOfRows(connection, meta, known, true)
  if (order.index !== null && shared) {
    const walked = walkIndex(connection, meta, filter, test, order, selection.sort as Sort, skip, limit)
    if (walked !== null) {
      if (key !== null) connection.rememberPage(meta.name, key, walked.seqs)
      return walked.docs
    }
  }
  const seqs = orderedRows(connection, meta, where, order, limit, skip)
  // SQL's order is the semantics' unless the page holds objects under the sort field (they compare as JSON text there).
  if (seqs === null) return selectMatches(connection, meta, filter, test, selection).map((match) => match.doc)
  if (key !== null) connection.rememberPage(meta.name, key, seqs)
  return documentsOfRows(connection, meta, seqs, shared)
}

export interface ScanPlan { window: Filter, test: DocumentTest, sort?: Sort, examine: number, skip: number, limit: number }

/**
 * A bounded scan (SharedReads.scan) answered from the document cache: the
 * window's row numbers come from the order's index alone, its documents from
 * the cache (the few missing are read), and the semantics matcher, the final
 * word on a match, picks the page, so the page's filter never reads the table.
 * Null when the caller must run the queries: outside a turn, for a window too
 * large to cache, when SQL cannot order or select the window exactly, or when
 * too much of it is not cached.
 */
export function selectScan (connection: Connection, meta: CollectionMeta, plan: ScanPlan): { docs: Document[], last: Document | null } | null {
  if (!connection.readsCachedDocuments() || plan.examine > SCAN_WINDOW_MAX) return null
  const where = whereOf(meta, plan.window)
  const order = planOrder(meta, plan.sort, plan.window, plan.examine)
  if (!where.exact || order === null) return null
  // The window's size is rounded up in the SQL (LIMIT is inlined): offset pages would otherwise each prepare a statement.
  const rows = where.sql === '0' ? [] : orderedRows(connection, meta, where, order, Math.ceil(plan.examine / SCAN_LIMIT_STEP) * SCAN_LIMIT_STEP, 0)
  if (rows === null) return null
  const seqs = rows.slice(0, plan.examine)
  const window = new Array<Document | undefined>(seqs.length)
  const missing = connection.cachedSharedRows(meta.name, seqs, window)
  if (missing.length > SCAN_READS) {
    readRows(connection, meta, seqs, missing.slice(0, SCAN_READS), window, true)
    return null
  }
  if (missing.length > 0) readRows(connection, meta, seqs, missing, window, true)
  const docs: Document[] = []
  let skipped = 0
  for (const doc of window as Document[]) {
    if (!plan.test(doc)) continue
    if (skipped < plan.skip) { skipped++; continue }
    docs.push(doc)
    if (docs.length === plan.limit) break
  }
  return { docs, last: seqs.length === plan.examine ? window[plan.examine - 1] as Document : null }
}

function * mapRows<R> (rows: Iterable<R>, map: (row: R) => Match | null): Iterable<Match> {
  for (const row of rows) {
    const match = map(row)
    if (match !== null) yield match
  }
}

/** The first `window` matches in sort order, keeping a sorted window rather than sorting everything. */
function keepFirst (matches: Iterable<Match>, compare: (a: Match, b: Match) => number, window: number): Match[] {
  const kept: Match[] = []
  if (window > TOP_K_WINDOW) {
    for (const match of matches) kept.push(match)
    return kept.sort(compare)
  }
  for (const match of matches) {
    if (kept.length === window && compare(match, kept[kept.length - 1]) >= 0) continue
    kept.splice(insertionPoint(kept, match, compare), 0, match)
    if (kept.length > window) kept.pop()
  }
  return kept
}

/** The distinct top-level fields a sort reads, or null when one cannot be named in a JSON path. */
function sortHeads (sort: Sort): string[] | null {
  const heads = [...new Set(Object.keys(sort).map((path) => path.split('.')[0]))].filter((head) => head !== '_id')
  return heads.every((head) => addressableSegments(head) !== null) ? heads : null
}

/** A stand-in document holding only `_id` and the sorted fields, which is all the sort looks at. */
function sortFields (row: unknown[], heads: string[]): Document {
  const doc: Document = { _id: row[1] }
  heads.forEach((head, i) => {
    const json = row[i + 2]
    if (typeof json === 'string') doc[head] = decodeValue(json)
  })
  return doc
}

function insertionPoint (sorted: Match[], match: Match, compare: (a: Match, b: Match) => number): number {
  let low = 0
  let high = sorted.length
  while (low < high) {
    const middle = (low + high) >>> 1
    if (compare(sorted[middle], match) <= 0) low = middle + 1
    else high = middle
  }
  return low
}

export function countMatches (connection: Connection, meta: CollectionMeta, filter: Filter, test: DocumentTest, skip: number, limit: number): number {
  const where = whereOf(meta, filter)
  if (where.sql === '0') return 0
  const table = quoteIdentifier(meta.table)
  if (where.exact) {
    const sql = statementText(where, `count|${limit}`, () => `SELECT count(*) FROM (SELECT 1 FROM ${table} WHERE ${where.sql} ${limitClause(limit)} OFFSET ?)`)
    return connection.statement(sql).pluck().get(...where.params, skip) as number
  }
  const rows = connection.statement(statementText(where, 'docs', () => `SELECT doc FROM ${table} WHERE ${where.sql}`)).pluck().iterate(...where.params) as IterableIterator<string>
  let count = 0
  for (const json of rows) {
    if (!test(decodeDocument(json))) continue
    count++
    if (limit !== 0 && count === skip + limit) break
  }
  return Math.max(0, count - skip)
}
