import type { Document, Filter, TextCountOptions, TextHit, TextIndex, TextIndexSpec, TextQuery, TextSearchOptions, WithId } from '../types.js'
import { compileFilter, validateCount } from '../semantics/index.js'
import { bestSnippet } from '../text-search.js'
import { decodeDocument } from './codec.js'
import type { CollectionMeta, Connection } from './connection.js'
import { quoteIdentifier, quoteLiteral } from './names.js'
import { createTextObjects, dropTextObjects, ftsName } from './text-objects.js'
import { filterContext } from './indexes.js'
import { compileSqlFilter, type SqlCondition } from './sql-filter.js'

/**
 * The embedded engine's text index: an FTS5 table whose content is a view of
 * the collection's table (external content, so the text is stored once), fed
 * by triggers on that table. A trigger runs inside the statement that wrote
 * the row, so the index changes in the same transaction as the document, for
 * every write path and every process sharing the file. The spec is kept in
 * `_plinth_text`, so a dropped and re-created collection gets its index back.
 */

/** FTS5's query syntax for words parseTextQuery made: each a quoted string (letters and digits only), the last a prefix when asked. */
function matchExpression (query: TextQuery): string {
  return query.terms.map((term, i) => `"${term.replace(/"/g, '""')}"${query.prefix && i === query.terms.length - 1 ? '*' : ''}`).join(' AND ')
}

type Row = [seq: number, score: number, ...rest: Array<string | null>]

/**
 * The filter's SQL for rows a match found by number: every statement here reads the collection's rows by their
 * number (never through an index of the filter's fields), so each field is read with the fewest JSON calls.
 */
function rowWhere (meta: CollectionMeta, filter: Filter): SqlCondition {
  return compileSqlFilter(filter, filterContext(meta, true))
}

/** Ranked rows the filter's SQL checks at once, doubling up to the max while the window is not full. */
const RANKED_BATCH = 64
const RANKED_BATCH_MAX = 2048
/**
 * How far down the ranking the index alone is read, in rungs: each rung ranks every match again (bm25 is cheap
 * beside reading a document) and keeps only its rows. Past the last, the filter joins the match instead.
 */
const RANKED_RUNGS = [64, 1024, 16384]

export class SqliteTextIndex<T extends Document> implements TextIndex<T> {
  constructor (private readonly connection: Connection, private readonly collection: string) {}

  async ensure (spec: TextIndexSpec): Promise<void> {
    const fields = Object.entries(spec.fields)
    if (fields.length === 0 || fields.some(([path, weight]) => path === '' || path.startsWith('$') || !(weight > 0))) throw new Error(`A text index of ${this.collection} needs fields with positive weights`)
    await this.connection.writing(() => this.connection.write(() => {
      this.connection.ensureCollection(this.collection)
      const stored = this.connection.textSpec(this.collection)
      if (stored !== undefined && JSON.stringify(stored) === JSON.stringify(spec)) return
      dropTextObjects(this.connection.db, this.collection)
      this.connection.statement('INSERT OR REPLACE INTO _plinth_text (collection, spec) VALUES (?, ?)').run(this.collection, JSON.stringify(spec))
      createTextObjects(this.connection.db, this.collection, spec)
      this.connection.bumpVersion()
    }, this.collection))
  }

  async rebuild (): Promise<number> {
    return await this.connection.writing(() => this.connection.write(() => {
      const spec = this.connection.textSpec(this.collection)
      const meta = this.connection.collection(this.collection)
      if (spec === undefined || meta === undefined) return 0
      dropTextObjects(this.connection.db, this.collection)
      createTextObjects(this.connection.db, this.collection, spec)
      return this.connection.statement(`SELECT count(*) FROM ${quoteIdentifier(meta.table)}`).pluck().get() as number
    }, this.collection))
  }

  async search (query: TextQuery, filter: Filter, options: TextSearchOptions = {}): Promise<Array<TextHit<T>>> {
    validateCount(options.skip, 'options.skip')
    validateCount(options.limit, 'options.limit')
    return this.run(query, filter, options, options.skip ?? 0, options.limit ?? 0)?.hits ?? []
  }

  async count (query: TextQuery, filter: Filter, options: TextCountOptions = {}): Promise<number> {
    validateCount(options.cap, 'options.cap')
    return this.run(query, filter, options, 0, options.cap ?? 0, true)?.count ?? 0
  }

  /**
   * The FTS5 match joined to the collection's rows, the filter's SQL (and
   * the parent's, through `within`) in its WHERE, ordered by bm25 with the
   * fields' weights, limited inside the statement where that SQL is exact (a
   * count stops at `limit`, the cap). The ranking reads row numbers and
   * scores only; documents and snippets are read for the window's rows
   * alone, each by its row number under the same match. Where the SQL is not exact the
   * rows are read in rank order and the semantics matcher decides, so skip,
   * limit and cap still count only what matches.
   */
  private run (query: TextQuery, filter: Filter, options: TextSearchOptions, skip: number, limit: number, counting = false): { hits: Array<TextHit<T>>, count: number } | null {
    const test = compileFilter(filter)
    const parentTest = options.within === undefined ? null : compileFilter(options.within.filter)
    if (query.terms.length === 0) return null
    return this.connection.read(() => {
      const meta = this.connection.collection(this.collection)
      const spec = this.connection.textSpec(this.collection)
      if (meta === undefined || spec === undefined) return null
      const parentMeta: CollectionMeta | undefined = options.within === undefined ? undefined : this.connection.collection(options.within.collection)
      if (options.within !== undefined && parentMeta === undefined) return null
      const fields = Object.keys(spec.fields)
      const fts = quoteIdentifier(ftsName(meta.table))
      const table = quoteIdentifier(meta.table)
      const where = rowWhere(meta, filter)
      const parentWhere = parentMeta === undefined ? null : rowWhere(parentMeta, (options.within as { filter: Filter }).filter)
      if (where.sql === '0' || parentWhere?.sql === '0') return { hits: [], count: 0 }
      const exact = where.exact && (parentWhere?.exact ?? true)
      const parentId = options.within === undefined ? '' : `c.doc ->> ${quoteLiteral('$."' + options.within.field + '"')}`
      const parentTable = parentMeta === undefined ? '' : quoteIdentifier(parentMeta.table)
      // Unqualified `doc` in a filter's SQL names the innermost table: the row's own in the outer query, the parent's inside the subqueries.
      const conditions = [`${fts} MATCH ?`, `(${where.sql})`]
      if (parentWhere !== null) conditions.push(`EXISTS (SELECT 1 FROM ${parentTable} WHERE id = ${parentId} AND (${parentWhere.sql}))`)
      const match = matchExpression(query)
      const params = [match, ...where.params, ...(parentWhere?.params ?? [])]
      const from = `${fts} JOIN ${table} c ON c.seq = ${fts}.rowid WHERE ${conditions.join(' AND ')}`
      const bound = limit === 0 ? -1 : limit
      if (counting && exact) return { hits: [], count: this.connection.statement(`SELECT count(*) FROM (SELECT 1 FROM ${from} LIMIT ${bound})`).pluck().get(...params) as number }
      const weights = fields.map((field) => spec.fields[field]).join(', ')
      const parentDoc = parentMeta === undefined ? '' : `, (SELECT doc FROM ${parentTable} WHERE id = ${parentId})`
      // A window's row by its number. Snippets are cut from its text (text-search.ts) as on MongoDB: FTS5's snippet()
      // would run the match again for each row, which for a prefix merges the postings of every word it starts.
      const detail = this.connection.statement(`SELECT c.doc${parentDoc} FROM ${table} c WHERE c.seq = ?`).raw()
      const accepted: Array<{ seq: number, score: number, doc: WithId<T> | null, parent: WithId<Document> | null | undefined }> = []
      let count = 0
      if (exact) {
        // The match ranked by the index alone, its best rows first (SQLite keeps only the LIMIT's rows in its sorter),
        // then the filter's SQL over them a batch at a time until the window is full: a common word no longer has the
        // filter read every matching document, and no more than a rung's rows are held here at once.
        const kept = ['c.seq IN (SELECT value FROM json_each(?))', `(${where.sql})`, ...conditions.slice(2)].join(' AND ')
        // NOT INDEXED: each row by its number. Left to choose, the planner walked an index of the filter's fields (every
        // row of the project) to find the batch's 64.
        const filtered = this.connection.statement(`SELECT c.seq FROM ${table} c NOT INDEXED WHERE ${kept}`).pluck()
        const wanted = limit === 0 ? Infinity : skip + limit
        let read = 0
        let exhausted = false
        for (const rung of RANKED_RUNGS) {
          const rows = this.connection.statement(`SELECT rowid, bm25(${fts}, ${weights}) AS score FROM ${fts} WHERE ${fts} MATCH ? ORDER BY score, rowid LIMIT ${rung - read} OFFSET ${read}`).raw().all(match) as Array<[number, number]>
          exhausted = rows.length < rung - read
          read = rung
          for (let start = 0, size = RANKED_BATCH; start < rows.length && count < wanted; start += size, size = Math.min(size * 2, RANKED_BATCH_MAX)) {
            const batch = rows.slice(start, start + size)
            const passed = new Set(filtered.all(JSON.stringify(batch.map(([seq]) => seq)), ...where.params, ...(parentWhere?.params ?? [])) as number[])
            for (const [seq, score] of batch) {
              if (!passed.has(seq)) continue
              count++
              if (count > skip && count <= wanted) accepted.push({ seq, score: -score, doc: null, parent: undefined })
            }
          }
          if (exhausted || count >= wanted) break
        }
        if (!exhausted && count < wanted) {
          // Past the last rung, most matches were not the caller's: the filter's SQL joins the match in one statement,
          // which reads every match's document once but ranks and holds only the window's rows.
          count = 0
          accepted.length = 0
          const window = limit === 0 ? -1 : skip + limit
          for (const [seq, score] of this.connection.statement(`SELECT c.seq, bm25(${fts}, ${weights}) AS score FROM ${from} ORDER BY score, c.seq LIMIT ${window}`).raw().iterate(...params) as IterableIterator<[number, number]>) {
            count++
            if (count > skip) accepted.push({ seq, score: -score, doc: null, parent: undefined })
          }
        }
      } else {
        // The matcher decides: documents (and parents) are read with the ranking, in rank order, until the window is full.
        const rows = this.connection.statement(`SELECT c.seq, bm25(${fts}, ${weights}) AS score, c.doc${parentDoc} FROM ${from} ORDER BY score, c.seq`).raw().iterate(...params) as IterableIterator<Row>
        for (const row of rows) {
          const doc = decodeDocument(row[2] as string) as WithId<T>
          const parent = parentMeta === undefined ? undefined : (row[3] === null ? null : decodeDocument(row[3] as string) as WithId<Document>)
          if (!test(doc) || (parentTest !== null && (parent == null || !parentTest(parent)))) continue
          count++
          if (counting) {
            if (limit !== 0 && count === limit) break
            continue
          }
          if (count <= skip) continue
          accepted.push({ seq: row[0], score: -row[1], doc, parent })
          if (limit !== 0 && accepted.length === limit) break
        }
      }
      const hits: Array<TextHit<T>> = []
      for (const { seq, score, doc, parent } of accepted) {
        const found = doc === null ? detail.get(seq) as Array<string | null> | undefined : []
        if (found === undefined) continue
        const ownDoc = doc ?? decodeDocument(found[0] as string) as WithId<T>
        const ownParent = parentMeta === undefined ? undefined : parent !== undefined ? parent : (found[1] == null ? null : decodeDocument(found[1]) as WithId<Document>)
        hits.push({ doc: ownDoc, score, snippet: bestSnippet(ownDoc, spec.fields, query), ...(ownParent == null ? {} : { parent: ownParent }) })
      }
      return { hits, count }
    })
  }
}
