import type { Collection, Db, Document as MongoDocument, Sort } from 'mongodb'
import type { Document, Filter, TextCountOptions, TextHit, TextIndex, TextIndexSpec, TextQuery, TextSearchOptions, WithId } from '../types.js'
import { bestSnippet } from '../text-search.js'
import { validateCount, validateFilter } from '../semantics/index.js'
import { portableQuery } from './portable.js'
import { translate } from './translate.js'

/** The one text index a MongoDB collection may hold, under this name; listIndexes leaves it out of the port's indexes. */
export const TEXT_INDEX_NAME = 'plinth_text'
/** Hits read per round when `within` must check their parents. */
const WITHIN_BATCH = 500

/**
 * The MongoDB engine's text index: a text index (language `none`, the
 * spec's weights), which the server keeps in step with every write, and
 * `$text` ANDed with the filter in one find sorted by `textScore`. MongoDB
 * matches whole words only, so the last word is not taken as a prefix here;
 * snippets are cut from the stored text (text-search.ts, `snippetOf`).
 */
export class MongoTextIndex<T extends Document> implements TextIndex<T> {
  private spec: TextIndexSpec | null = null

  constructor (private readonly raw: Collection<any>, private readonly db: Db, private readonly limit: { maxTimeMS: number }) {}

  private get name (): string { return this.raw.collectionName }

  async ensure (spec: TextIndexSpec): Promise<void> {
    this.spec = spec
    try {
      const existing = (await this.raw.listIndexes().toArray().catch(() => [])).find((index: MongoDocument) => index.name === TEXT_INDEX_NAME)
      if (existing !== undefined && JSON.stringify(existing.weights) === JSON.stringify(spec.fields)) return
      if (existing !== undefined) await this.raw.dropIndex(TEXT_INDEX_NAME)
      await this.raw.createIndex(Object.fromEntries(Object.keys(spec.fields).map((field) => [field, 'text'])), { name: TEXT_INDEX_NAME, weights: spec.fields, default_language: 'none' })
    } catch (error) { translate(error, this.name) }
  }

  async rebuild (): Promise<number> {
    const spec = this.spec
    if (spec === null) return 0
    try {
      await this.raw.dropIndex(TEXT_INDEX_NAME).catch(() => {})
      this.spec = null
      await this.ensure(spec)
      return await this.raw.countDocuments({}, this.limit)
    } catch (error) { translate(error, this.name) }
  }

  private query (query: TextQuery, filter: Filter): MongoDocument {
    return { $and: [{ $text: { $search: query.terms.map((term) => `"${term}"`).join(' '), $caseSensitive: false, $diacriticSensitive: false } }, portableQuery(filter)] }
  }

  private check (filter: Filter, options: TextSearchOptions): void {
    validateFilter(filter)
    if (options.within !== undefined) validateFilter(options.within.filter)
    validateCount(options.skip, 'options.skip')
    validateCount(options.limit, 'options.limit')
  }

  async search (query: TextQuery, filter: Filter, options: TextSearchOptions = {}): Promise<Array<TextHit<T>>> {
    this.check(filter, options)
    if (query.terms.length === 0) return []
    const skip = options.skip ?? 0
    const limit = options.limit ?? 0
    const sort: Sort = { _score: { $meta: 'textScore' }, _id: 1 }
    const projection = { _score: { $meta: 'textScore' } }
    try {
      if (options.within === undefined) {
        const docs = await this.raw.find(this.query(query, filter), { projection, sort, skip, limit, ...this.limit }).toArray()
        return docs.map((doc) => this.hit(doc, query))
      }
      const within = options.within
      const parents = this.db.collection(within.collection)
      const hits: Array<TextHit<T>> = []
      let skipped = 0
      const cursor = this.raw.find(this.query(query, filter), { projection, sort, batchSize: WITHIN_BATCH, ...this.limit })
      let batch: MongoDocument[] = []
      const flush = async (): Promise<boolean> => {
        const ids = [...new Set(batch.map((doc) => doc[within.field]).filter((id) => typeof id === 'string'))]
        const found = new Map((await parents.find({ $and: [{ _id: { $in: ids } }, portableQuery(within.filter)] }, this.limit).toArray()).map((parent: MongoDocument) => [parent._id as string, parent]))
        for (const doc of batch) {
          const parent = found.get(doc[within.field])
          if (parent === undefined) continue
          if (skipped < skip) { skipped++; continue }
          hits.push({ ...this.hit(doc, query), parent: parent as WithId<Document> })
          if (limit !== 0 && hits.length === limit) return true
        }
        batch = []
        return false
      }
      for await (const doc of cursor) {
        batch.push(doc)
        if (batch.length === WITHIN_BATCH && await flush()) return hits
      }
      await flush()
      return hits
    } catch (error) { translate(error, this.name, 'query') }
  }

  async count (query: TextQuery, filter: Filter, options: TextCountOptions = {}): Promise<number> {
    this.check(filter, options)
    validateCount(options.cap, 'options.cap')
    if (query.terms.length === 0) return 0
    const cap = options.cap ?? 0
    if (options.within !== undefined) return await this.countWithin(query, filter, options.within, cap)
    try {
      return await this.raw.countDocuments(this.query(query, filter), { ...this.limit, ...(cap === 0 ? {} : { limit: cap }) })
    } catch (error) { translate(error, this.name, 'query') }
  }

  /**
   * A count under `within`: unranked, reading only the field that names each
   * match's parent, and the ids of the parents that match, a batch at a time
   * until the cap.
   */
  private async countWithin (query: TextQuery, filter: Filter, within: NonNullable<TextSearchOptions['within']>, cap: number): Promise<number> {
    const parents = this.db.collection(within.collection)
    let count = 0
    try {
      const cursor = this.raw.find(this.query(query, filter), { projection: { [within.field]: 1 }, batchSize: WITHIN_BATCH, ...this.limit })
      let batch: MongoDocument[] = []
      const flush = async (): Promise<boolean> => {
        const ids = [...new Set(batch.map((doc) => doc[within.field]).filter((id) => typeof id === 'string'))]
        const found = new Set((await parents.find({ $and: [{ _id: { $in: ids } }, portableQuery(within.filter)] }, { projection: { _id: 1 }, ...this.limit }).toArray()).map((parent: MongoDocument) => parent._id as string))
        for (const doc of batch) {
          if (!found.has(doc[within.field])) continue
          count++
          if (cap !== 0 && count === cap) return true
        }
        batch = []
        return false
      }
      for await (const doc of cursor) {
        batch.push(doc)
        if (batch.length === WITHIN_BATCH && await flush()) return count
      }
      await flush()
      return count
    } catch (error) { translate(error, this.name, 'query') }
  }

  private hit (stored: MongoDocument, query: TextQuery): TextHit<T> {
    const { _score: score, ...doc } = stored
    const snippet = bestSnippet(doc, this.spec?.fields ?? {}, query)
    return { doc: doc as WithId<T>, score: Number(score), snippet }
  }
}
