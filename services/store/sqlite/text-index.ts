import type { Document, Filter, TextCountOptions, TextHit, TextIndex, TextIndexSpec, TextQuery, TextSearchOptions, WithId } from '../types.js'
import { compileFilter, validateCount } from '../semantics/index.js'
import { bestSnippet, scopeValues, textAt, TEXT_RANK_WINDOW } from '../text-search.js'
import { decodeDocument } from './codec.js'
import type { CollectionMeta, Connection } from './connection.js'
import { quoteIdentifier, quoteLiteral } from './names.js'
import { createTextObjects, dropTextObjects, ftsName, SCOPE_COLUMN, scopeExpression, scopeRowsName, scopeToken, textObjectsCurrent, vocabularyOf } from './text-objects.js'
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

/**
 * FTS5's query syntax for words parseTextQuery made: each a quoted string (letters and digits only), the last a prefix
 * when asked, looked for in the text columns only; with scope values, ANDed with their tokens in the scope column, so
 * FTS5 skips to the scope's rows before anything is ranked or counted.
 */
function matchExpression (query: TextQuery, columns: number, scope: string[] | null): string {
  const words = query.terms.map((term, i) => `"${term.replace(/"/g, '""')}"${query.prefix && i === query.terms.length - 1 ? '*' : ''}`).join(' AND ')
  const inText = `{${Array.from({ length: columns }, (_, i) => `f${i}`).join(' ')}} : (${words})`
  return scope === null ? inText : `{${SCOPE_COLUMN}} : (${scope.map((value) => `"${scopeToken(value)}"`).join(' OR ')}) AND ${inText}`
}

/**
 * The filter's SQL for rows a match found by number: every statement here reads the collection's rows by their
 * number (never through an index of the filter's fields), so each field is read with the fewest JSON calls.
 */
function rowWhere (meta: CollectionMeta, filter: Filter): SqlCondition {
  return compileSqlFilter(filter, filterContext(meta, true))
}

/** Words the vocabulary can count as FTS5's tokenizer splits them: ASCII letters and digits (no diacritics to fold). */
const COUNTABLE = /^[a-z0-9]+$/

/**
 * Words in at most this many rows (of every scope) are matched without the scope's token. Each is then checked for its
 * scope on the row (its JSON parsed, and its parent's), which costs far more than a row of the scope costs the token's
 * walk: a few hundred rows cost what a large project does (bench/README.md), and a scope holding none of them reads
 * them all.
 */
const FEW_MATCHES = 256

/**
 * Several words each in at most this many rows are counted together from the index (FTS5 walking the shortest lists),
 * to learn whether they are few together; a word's own rows are counted up to one past it. Not the ranking window: two
 * words of 1 % of 100,000 items each (1,000 rows) are most often in few rows together.
 */
const COUNTED_ROWS = 2_000

/** Ranked rows the filter's SQL checks at once, doubling up to the max while the window is not full. */
const RANKED_BATCH = 64
const RANKED_BATCH_MAX = 2048
/** A window of a scope is scored by its words alone while their matches in its span are at most this many windows. */
const SCORED_SPAN = 2

export class SqliteTextIndex<T extends Document> implements TextIndex<T> {
  constructor (private readonly connection: Connection, private readonly collection: string) {}

  async ensure (spec: TextIndexSpec): Promise<void> {
    const fields = Object.entries(spec.fields)
    if (fields.length === 0 || fields.some(([path, weight]) => path === '' || path.startsWith('$') || !(weight > 0))) throw new Error(`A text index of ${this.collection} needs fields with positive weights`)
    await this.connection.writing(() => this.connection.write(() => {
      this.connection.ensureCollection(this.collection)
      const stored = this.connection.textSpec(this.collection)
      if (stored !== undefined && JSON.stringify(stored) === JSON.stringify(spec) && textObjectsCurrent(this.connection.db, this.collection, spec)) return
      dropTextObjects(this.connection.db, this.collection)
      this.connection.statement('INSERT OR REPLACE INTO _plinth_text (collection, spec) VALUES (?, ?)').run(this.collection, JSON.stringify(spec))
      createTextObjects(this.connection.db, this.collection, spec)
      this.connection.bumpVersion(this.collection)
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
    return this.run(query, filter, options, options.skip ?? 0, options.limit ?? 0, null)?.hits ?? []
  }

  async count (query: TextQuery, filter: Filter, options: TextCountOptions = {}): Promise<number> {
    validateCount(options.cap, 'options.cap')
    return this.run(query, filter, options, 0, options.cap ?? 0, null, true)?.count ?? 0
  }

  async searchCounted (query: TextQuery, filter: Filter, options: TextSearchOptions & Pick<TextCountOptions, 'cap'> = {}): Promise<{ hits: Array<TextHit<T>>, count: number }> {
    validateCount(options.skip, 'options.skip')
    validateCount(options.limit, 'options.limit')
    validateCount(options.cap, 'options.cap')
    return this.run(query, filter, options, options.skip ?? 0, options.limit ?? 0, options.cap ?? 0) ?? { hits: [], count: 0 }
  }

  /**
   * The FTS5 match (narrowed to the scope's rows first) ranked a window at a time: the newest TEXT_RANK_WINDOW
   * matches by bm25 with the fields' weights (row numbers and scores only, from the index alone), then the filter's
   * SQL (and the parent's, through `within`) over them in rank order a batch at a time until the page is full, then
   * the next older window. Where that SQL is not exact each row is read and the semantics matcher decides. Documents
   * and snippets are read for the page's rows alone. A count needs no ranking: the match joined to the filter, stopped
   * at the cap. A search that also counts (`tally`, the cap or 0 for all) goes on through its last window's rows until
   * the cap, and counts the matches older than that window by the count's statement.
   */
  private run (query: TextQuery, filter: Filter, options: TextSearchOptions, skip: number, limit: number, tally: number | null, counting = false): { hits: Array<TextHit<T>>, count: number } | null {
    const test = compileFilter(filter)
    const parentTest = options.within === undefined ? null : compileFilter(options.within.filter)
    if (query.terms.length === 0) return null
    return this.connection.read(() => {
      const meta = this.connection.collection(this.collection)
      const spec = this.connection.textSpec(this.collection)
      if (meta === undefined || spec === undefined) return null
      const scoped = scopeValues(spec, options.scope)
      // Scope values that hold every row of the index narrow nothing: the words are matched alone, each window found and
      // scored by one statement, where the scope's token would cost a walk of its rows and a second merge of the words.
      // Scope values that hold no row find nothing.
      const rows = scoped === null || scoped.length === 0 ? null : this.scopeRows(meta.table, scoped)
      if (rows?.inScope === 0) return { hits: [], count: 0 }
      const scope = rows !== null && rows.inScope === rows.all ? null : scoped
      const parentMeta: CollectionMeta | undefined = options.within === undefined ? undefined : this.connection.collection(options.within.collection)
      if (options.within !== undefined && parentMeta === undefined) return null
      const fields = Object.keys(spec.fields)
      const fts = quoteIdentifier(ftsName(meta.table))
      const table = quoteIdentifier(meta.table)
      const where = rowWhere(meta, filter)
      const parentWhere = parentMeta === undefined ? null : rowWhere(parentMeta, (options.within as { filter: Filter }).filter)
      if (where.sql === '0' || parentWhere?.sql === '0' || scope?.length === 0) return { hits: [], count: 0 }
      const exact = where.exact && (parentWhere?.exact ?? true)
      const parentId = options.within === undefined ? '' : `c.doc ->> ${quoteLiteral('$."' + options.within.field + '"')}`
      const parentTable = parentMeta === undefined ? '' : quoteIdentifier(parentMeta.table)
      // Words in few rows (of every scope) are ranked alone and the scope is checked on each row: the
      // scope's token in the match costs a walk of the scope's every row (FTS5 skips through its list to each match of
      // the words), several times what two rare words cost in a large project (bench/README.md). All their matches are then
      // one window, so the page and the count are the scoped match's. A count of one word keeps the scoped match:
      // asking the vocabulary again for a common word would cost what a rare word saves; several words
      // together are most often rare, and the first in few rows ends the lookup.
      const most = scope === null || (counting && query.terms.length === 1) ? null : this.mostMatches(query, meta.table, fields.length)
      if (most === 0) return { hits: [], count: 0 }
      const few = scope !== null && most !== null && most <= FEW_MATCHES
      const match = matchExpression(query, fields.length, few ? null : scope)
      // Each row's scope is checked where the match does not hold the scope: for words in few rows, and where the counts
      // said the scope values hold every row (a count gone wrong, say objects an older build made again, then costs
      // speed, never another scope's rows).
      const checkedScope = few ? scope : scope === null ? scoped : null
      const scopeTokens = checkedScope === null ? null : new Set(checkedScope.map(scopeToken))
      const filterParams = [...where.params, ...(parentWhere?.params ?? []), ...(scopeTokens === null ? [] : [JSON.stringify([...scopeTokens])])]
      // Unqualified `doc` in a filter's SQL names the innermost table: the row's own in the outer query, the parent's inside the subqueries.
      const conditions = [`(${where.sql})`]
      if (parentWhere !== null) conditions.push(`EXISTS (SELECT 1 FROM ${parentTable} WHERE id = ${parentId} AND (${parentWhere.sql}))`)
      if (scopeTokens !== null) conditions.push(`${scopeExpression('c.', spec.scope as string)} IN (SELECT value FROM json_each(?))`)
      const rowTest = scopeTokens === null ? test : (doc: Document): boolean => scopeTokens.has(scopeToken(textAt(doc, spec.scope as string))) && test(doc)
      const parentDoc = parentMeta === undefined ? '' : `, (SELECT doc FROM ${parentTable} WHERE id = ${parentId})`
      // The matches below a row number that pass, at most `cap` of them (0: all).
      const countBelow = (below: number, cap: number): number => {
        const from = `${fts} JOIN ${table} c ON c.seq = ${fts}.rowid WHERE ${fts} MATCH ? AND ${fts}.rowid < ? AND ${conditions.join(' AND ')}`
        if (exact) return this.connection.statement(`SELECT count(*) FROM (SELECT 1 FROM ${from} LIMIT ${cap === 0 ? -1 : cap})`).pluck().get(match, below, ...filterParams) as number
        let count = 0
        for (const row of this.connection.statement(`SELECT c.doc${parentDoc} FROM ${from}`).raw().iterate(match, below, ...filterParams) as IterableIterator<Array<string | null>>) {
          if (!this.passes(row, rowTest, parentTest, parentMeta !== undefined)) continue
          if (++count === cap) break
        }
        return count
      }
      if (counting) return { hits: [], count: countBelow(Number.MAX_SAFE_INTEGER, limit) }
      const weights = [...fields.map((field) => spec.fields[field]), ...(spec.scope === undefined ? [] : [0])].join(', ')
      // A window: the newest matches below a row number, from the index alone (FTS5 walks its rows in that order and
      // stops at the LIMIT), then ranked. bm25 is computed for the window's rows only, but it also counts, once a
      // statement, the rows of every phrase of the match, the scope's token too (a big project's every row): a window
      // is scored by the words alone over its span of row numbers, under the scoped match only when that span holds
      // more than SCORED_SPAN windows of the words' matches (a sparse scope among others').
      const newest = this.connection.statement(`SELECT rowid FROM ${fts} WHERE ${fts} MATCH ? AND rowid < ? ORDER BY rowid DESC LIMIT ${TEXT_RANK_WINDOW}`).pluck()
      // Read from the span's top down and left at its bottom: FTS5 scores a prefix's rows in descending order for less
      // than it scores them in a rowid range.
      const scored = this.connection.statement(`SELECT rowid, bm25(${fts}, ${weights}) FROM ${fts} WHERE ${fts} MATCH ? AND rowid <= ? ORDER BY rowid DESC`).raw()
      // With the words alone in the match, one statement finds the window and scores it: the words' postings (for a
      // prefix, the merge of every word it starts) are read once a window, not twice.
      const newestScored = this.connection.statement(`SELECT rowid, bm25(${fts}, ${weights}) FROM ${fts} WHERE ${fts} MATCH ? AND rowid < ? ORDER BY rowid DESC LIMIT ${TEXT_RANK_WINDOW}`).raw()
      const words = scope === null ? match : matchExpression(query, fields.length, null)
      const rank = (below: number): Array<[number, number]> => {
        if (scope === null || few) return (newestScored.all(match, below) as Array<[number, number]>).sort((a, b) => a[1] - b[1] || a[0] - b[0])
        const seqs = newest.all(match, below) as number[]
        if (seqs.length === 0) return []
        const low = seqs[seqs.length - 1]
        const high = seqs[0]
        const window = new Set(seqs)
        let rows: Array<[number, number]> | null = null
        if (scope !== null) {
          // The words' matches in the span are read until they pass SCORED_SPAN windows: then most are another scope's.
          rows = []
          let read = 0
          for (const row of scored.iterate(words, high) as IterableIterator<[number, number]>) {
            if (row[0] < low) break
            if (++read > TEXT_RANK_WINDOW * SCORED_SPAN) { rows = null; break }
            if (window.has(row[0])) rows.push(row)
          }
        }
        if (rows === null) {
          rows = []
          for (const row of scored.iterate(match, high) as IterableIterator<[number, number]>) {
            if (row[0] < low) break
            if (window.has(row[0])) rows.push(row)
          }
        }
        return rows.sort((a, b) => a[1] - b[1] || a[0] - b[0])
      }
      // NOT INDEXED: each row by its number. Left to choose, the planner walked an index of the filter's fields (every
      // row of the project) to find a batch's rows.
      const filtered = this.connection.statement(`SELECT c.seq FROM ${table} c NOT INDEXED WHERE c.seq IN (SELECT value FROM json_each(?)) AND ${conditions.join(' AND ')}`).pluck()
      // A page's row by its number. Snippets are cut from its text (text-search.ts) as on MongoDB: FTS5's snippet()
      // would run the match again for each row, which for a prefix merges the postings of every word it starts.
      const detail = this.connection.statement(`SELECT c.doc${parentDoc} FROM ${table} c WHERE c.seq = ?`).raw()
      const wanted = limit === 0 ? Infinity : skip + limit
      // A tally goes on through the window's rows until its cap (all of them without one).
      const tallied = tally === null ? wanted : Math.max(wanted, tally === 0 ? Infinity : tally)
      const accepted: Array<{ seq: number, score: number, row: Array<string | null> | null }> = []
      let count = 0
      let below = Number.MAX_SAFE_INTEGER
      let exhausted = false
      while (!exhausted && count < wanted) {
        const rows = rank(below)
        exhausted = rows.length < TEXT_RANK_WINDOW
        for (const [seq] of rows) below = Math.min(below, seq)
        for (let start = 0, size = RANKED_BATCH; start < rows.length && count < tallied; size = Math.min(size * 2, RANKED_BATCH_MAX)) {
          // Past the page a tally takes about what it still needs (most ranked rows pass): each row checked is a read.
          const take = count >= wanted ? Math.min(size, Math.max(RANKED_BATCH, tallied - count)) : size
          const batch = rows.slice(start, start + take)
          start += take
          const passed = exact ? new Set(filtered.all(JSON.stringify(batch.map(([seq]) => seq)), ...filterParams) as number[]) : null
          for (const [seq, score] of batch) {
            let row: Array<string | null> | null = null
            if (passed !== null) {
              if (!passed.has(seq)) continue
            } else {
              row = detail.get(seq) as Array<string | null> | undefined ?? null
              if (row === null || !this.passes(row, rowTest, parentTest, parentMeta !== undefined)) continue
            }
            count++
            if (count > skip && count <= wanted) accepted.push({ seq, score: -score, row })
          }
        }
      }
      // The window's rows are all counted (below the cap) and older matches remain: they are counted unranked.
      if (tally !== null && count < tallied && !exhausted) count += countBelow(below, tally === 0 ? 0 : tally - count)
      if (tally !== null && tally !== 0) count = Math.min(count, tally)
      const hits: Array<TextHit<T>> = []
      for (const { seq, score, row } of accepted) {
        const found = row ?? detail.get(seq) as Array<string | null> | undefined
        if (found === undefined) continue
        const doc = decodeDocument(found[0] as string) as WithId<T>
        const parent = parentMeta === undefined || found[1] == null ? undefined : decodeDocument(found[1]) as WithId<Document>
        hits.push({ doc, score, snippet: bestSnippet(doc, spec.fields, query), ...(parent === undefined ? {} : { parent }) })
      }
      return { hits, count }
    })
  }

  /**
   * At most how many rows the words match (each word's rows, or those of the words the last starts when it is a
   * prefix): 0 when a word is in no row. A word's rows are counted from the index up to one past COUNTED_ROWS (FTS5 stops
   * at the LIMIT), a prefix's from the vocabulary (each word it starts, its whole list of rows walked) only when the prefix
   * as a word of its own is in fewer: a common word cost the vocabulary's walk of its every row (~1 ms at 100,000 items,
   * bench/README.md). The words are read until one is in few rows (FEW_MATCHES). Null when a word is one the tokenizer
   * may fold otherwise than parseTextQuery.
   */
  private mostMatches (query: TextQuery, table: string, columns: number): number | null {
    if (!query.terms.every((term) => COUNTABLE.test(term))) return null
    const fts = quoteIdentifier(ftsName(table))
    const upTo = this.connection.statement(`SELECT count(*) FROM (SELECT 1 FROM ${fts} WHERE ${fts} MATCH ? LIMIT ${COUNTED_ROWS + 1})`).pluck()
    let most = Infinity
    for (const [i, term] of query.terms.entries()) {
      let count = upTo.get(matchExpression({ terms: [term], prefix: false }, columns, null)) as number
      if (query.prefix && i === query.terms.length - 1 && count <= COUNTED_ROWS) {
        const vocabulary = vocabularyOf(table)
        this.connection.statement(vocabulary.create).run()
        // Every word a prefix starts sorts from the prefix up to the prefix followed by the highest code point.
        const started = this.connection.statement(`SELECT doc FROM ${vocabulary.name} WHERE term >= ? AND term < ?`).pluck()
        count = 0
        for (const doc of started.iterate(term, term + '\u{10FFFF}') as IterableIterator<number>) {
          count += doc
          if (count > COUNTED_ROWS) break
        }
      }
      most = Math.min(most, count)
      if (most <= FEW_MATCHES) return most
    }
    // Several words each in at most COUNTED_ROWS rows: the rows holding them all, from the index alone (FTS5 walks the
    // shortest lists, a few thousand rows at most).
    if (query.terms.length === 1 || most > COUNTED_ROWS) return most
    return this.connection.statement(`SELECT count(*) FROM (SELECT 1 FROM ${fts} WHERE ${fts} MATCH ? LIMIT ${FEW_MATCHES + 1})`).pluck().get(matchExpression(query, columns, null)) as number
  }

  /** The rows of these scope values and of the whole index (the triggers' count per scope token, text-objects.ts). */
  private scopeRows (table: string, scope: string[]): { inScope: number, all: number } {
    const [inScope, all] = this.connection.statement(`SELECT total(rows) FILTER (WHERE token IN (SELECT value FROM json_each(?))), total(rows) FROM ${quoteIdentifier(scopeRowsName(table))}`).raw().get(JSON.stringify(scope.map(scopeToken))) as [number, number]
    return { inScope, all }
  }

  /** The semantics matcher's verdict on a row read with its parent's document (for a filter no SQL says exactly). */
  private passes (row: Array<string | null>, test: (doc: Document) => boolean, parentTest: ((doc: Document) => boolean) | null, withParent: boolean): boolean {
    if (!test(decodeDocument(row[0] as string))) return false
    if (!withParent || parentTest === null) return true
    return row[1] != null && parentTest(decodeDocument(row[1]))
  }
}
