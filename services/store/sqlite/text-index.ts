import type { Document, Filter, Snippet, TextCountOptions, TextHit, TextIndex, TextIndexSpec, TextQuery, TextSearchOptions, WithId } from '../types.js'
import { compileFilter, validateCount } from '../semantics/index.js'
import { decodeDocument } from './codec.js'
import type { CollectionMeta, Connection } from './connection.js'
import { quoteIdentifier, quoteLiteral } from './names.js'
import { createTextObjects, dropTextObjects, ftsName } from './text-objects.js'
import { whereOf } from './query.js'

/**
 * The embedded engine's text index: an FTS5 table whose content is a view of
 * the collection's table (external content, so the text is stored once), fed
 * by triggers on that table. A trigger runs inside the statement that wrote
 * the row, so the index changes in the same transaction as the document, for
 * every write path and every process sharing the file. The spec is kept in
 * `_plinth_text`, so a dropped and re-created collection gets its index back.
 */

const OPEN = '\uE000'
const CLOSE = '\uE001'

/** FTS5's query syntax for words parseTextQuery made: each a quoted string (letters and digits only), the last a prefix when asked. */
function matchExpression (query: TextQuery): string {
  return query.terms.map((term, i) => `"${term.replace(/"/g, '""')}"${query.prefix && i === query.terms.length - 1 ? '*' : ''}`).join(' AND ')
}

/** FTS5's snippet with our markers, as text and highlight offsets. */
function toSnippet (field: string, marked: string): Snippet {
  const highlights: Array<[number, number]> = []
  let text = ''
  let start = -1
  for (const char of marked) {
    if (char === OPEN) start = text.length
    else if (char === CLOSE) { if (start >= 0) highlights.push([start, text.length]); start = -1 } else text += char
  }
  return { field, text, highlights }
}

type Row = [seq: number, json: string, rank: number, ...rest: Array<string | null>]

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
   * count stops at `limit`, the cap). A first ranking of row numbers alone,
   * then documents and snippets for the window, measured slower (the FTS5
   * cursor re-runs the match per row). Where the SQL is not exact the
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
      const where = whereOf(meta, filter)
      const parentWhere = parentMeta === undefined ? null : whereOf(parentMeta, (options.within as { filter: Filter }).filter)
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
      const snippets = fields.map((_, i) => `snippet(${fts}, ${i}, '${OPEN}', '${CLOSE}', '…', 16)`).join(', ')
      const parentDoc = parentMeta === undefined ? '' : `, (SELECT doc FROM ${parentTable} WHERE id = ${parentId})`
      const columns = `c.seq, c.doc, bm25(${fts}, ${weights}) AS score${parentDoc}, ${snippets}`
      const window = exact && !counting ? ` LIMIT ${bound} OFFSET ${skip}` : ''
      const rows = this.connection.statement(`SELECT ${columns} FROM ${from} ORDER BY score${window}`).raw().iterate(...params) as IterableIterator<Row>
      const hits: Array<TextHit<T>> = []
      let count = 0
      for (const row of rows) {
        const doc = decodeDocument(row[1]) as WithId<T>
        const parent = parentMeta === undefined ? undefined : (row[3] === null ? null : decodeDocument(row[3] as string) as WithId<Document>)
        if (!exact && (!test(doc) || (parentTest !== null && (parent == null || !parentTest(parent))))) continue
        count++
        if (counting) {
          if (limit !== 0 && count === limit) break
          continue
        }
        if (!exact && count <= skip) continue
        const marked = row.slice(parentMeta === undefined ? 3 : 4) as Array<string | null>
        // The highest-weighted field that holds a match: what the snippet shows.
        const order = fields.map((field, i) => ({ field, i })).sort((a, b) => spec.fields[b.field] - spec.fields[a.field])
        const best = order.find(({ i }) => marked[i]?.includes(OPEN) === true) ?? order[0]
        hits.push({ doc, score: -row[2], snippet: toSnippet(best.field, marked[best.i] ?? ''), ...(parent == null ? {} : { parent }) })
        if (!exact && limit !== 0 && hits.length === limit) break
      }
      return { hits, count }
    })
  }
}
