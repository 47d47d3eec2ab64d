import type { Collection, Db, Document as MongoDocument } from 'mongodb'
import type { Document, Filter, TextCountOptions, TextHit, TextIndex, TextIndexSpec, TextQuery, TextSearchOptions, WithId } from '../types.js'
import { bestSnippet, scopeValues, TEXT_RANK_WINDOW } from '../text-search.js'
import { validateCount, validateFilter } from '../semantics/index.js'
import { portableQuery } from './portable.js'
import { translate } from './translate.js'

/** The one text index a MongoDB collection may hold, under this name; listIndexes leaves it out of the port's indexes. */
export const TEXT_INDEX_NAME = 'plinth_text'
/** Hits read per round when `within` must check their parents. */
const WITHIN_BATCH = 500

type Ranked = { _id: string, _score: number }

/**
 * The MongoDB engine's text index: a text index (language `none`, the
 * spec's weights), which the server keeps in step with every write. With a
 * `scope`, the scope field is the index's first key: MongoDB then needs it
 * as an equality, so each scope value is its own query and their windows
 * are merged. A search ranks as the embedded engine does: the newest
 * TEXT_RANK_WINDOW matches (by `_id`), the filter over them, sorted by
 * `textScore`, then the next older window. MongoDB matches whole words
 * only, so the last word is not taken as a prefix here; snippets are cut
 * from the stored text (text-search.ts, `snippetOf`).
 */
export class MongoTextIndex<T extends Document> implements TextIndex<T> {
  /** `specs` is the store's, shared by every instance for the collection, so a search made after `ensure` knows the scope. */
  constructor (private readonly raw: Collection<any>, private readonly db: Db, private readonly limit: { maxTimeMS: number }, private readonly specs: Map<string, TextIndexSpec>) {}

  private get name (): string { return this.raw.collectionName }

  async ensure (spec: TextIndexSpec): Promise<void> {
    try {
      const existing = await this.stored()
      this.specs.set(this.name, spec)
      if (existing !== null && JSON.stringify(existing.fields) === JSON.stringify(spec.fields) && existing.scope === spec.scope) return
      if (existing !== null) await this.raw.dropIndex(TEXT_INDEX_NAME)
      const key: Record<string, 1 | 'text'> = { ...(spec.scope === undefined ? {} : { [spec.scope]: 1 }), ...Object.fromEntries(Object.keys(spec.fields).map((field) => [field, 'text' as const])) }
      await this.raw.createIndex(key, { name: TEXT_INDEX_NAME, weights: spec.fields, default_language: 'none' })
    } catch (error) { translate(error, this.name) }
  }

  async rebuild (): Promise<number> {
    const spec = this.specs.get(this.name) ?? await this.stored()
    if (spec === null) return 0
    try {
      await this.raw.dropIndex(TEXT_INDEX_NAME).catch(() => {})
      await this.ensure(spec)
      return await this.raw.countDocuments({}, this.limit)
    } catch (error) { translate(error, this.name) }
  }

  /** The spec as the server holds it: the weights, and the key before the text part as the scope. */
  private async stored (): Promise<TextIndexSpec | null> {
    const index = (await this.raw.listIndexes().toArray().catch(() => [])).find((candidate: MongoDocument) => candidate.name === TEXT_INDEX_NAME)
    if (index === undefined) return null
    const scope = Object.keys(index.key as MongoDocument).find((field) => field !== '_fts' && field !== '_ftsx')
    return { fields: index.weights as Record<string, number>, ...(scope === undefined ? {} : { scope }) }
  }

  private async spec (): Promise<TextIndexSpec> {
    const known = this.specs.get(this.name) ?? await this.stored()
    if (known !== null) this.specs.set(this.name, known)
    return known ?? { fields: {} }
  }

  /** One query a scope value (the scope's equality, which the index needs), or one without a scope. */
  private parts (query: TextQuery, spec: TextIndexSpec, scope: string[] | null): MongoDocument[] {
    const text = { $text: { $search: query.terms.map((term) => `"${term}"`).join(' '), $caseSensitive: false, $diacriticSensitive: false } }
    return scope === null ? [text] : scope.map((value) => ({ ...text, [spec.scope as string]: value }))
  }

  private check (filter: Filter, options: TextSearchOptions): void {
    validateFilter(filter)
    if (options.within !== undefined) validateFilter(options.within.filter)
    validateCount(options.skip, 'options.skip')
    validateCount(options.limit, 'options.limit')
  }

  async search (query: TextQuery, filter: Filter, options: TextSearchOptions = {}): Promise<Array<TextHit<T>>> {
    this.check(filter, options)
    const spec = await this.spec()
    const scope = scopeValues(spec, options.scope)
    if (query.terms.length === 0 || scope?.length === 0) return []
    const skip = options.skip ?? 0
    const wanted = options.limit === undefined || options.limit === 0 ? Infinity : skip + options.limit
    const parts = this.parts(query, spec, scope)
    const hits: Array<TextHit<T>> = []
    let count = 0
    try {
      for (let below: string | null = null, exhausted = false; !exhausted && count < wanted;) {
        // The window: each part's newest matches below `below`, merged newest first, the newest TEXT_RANK_WINDOW kept.
        const newest = (await Promise.all(parts.map(async (part) => await this.raw.aggregate([
          { $match: below === null ? part : { ...part, _id: { $lt: below } } },
          { $sort: { _id: -1 } },
          { $limit: TEXT_RANK_WINDOW },
          { $project: { _id: 1, _score: { $meta: 'textScore' } } }
        ], this.limit).toArray() as Ranked[]))).flat().sort((a, b) => a._id < b._id ? 1 : a._id > b._id ? -1 : 0)
        const window = newest.slice(0, TEXT_RANK_WINDOW)
        if (window.length === 0) break
        exhausted = newest.length < TEXT_RANK_WINDOW
        below = window[window.length - 1]._id
        const score = new Map(window.map((row) => [row._id, row._score]))
        const docs = (await this.raw.find({ $and: [{ _id: { $in: window.map((row) => row._id) } }, portableQuery(filter)] }, this.limit).toArray())
          .sort((a, b) => (score.get(b._id) as number) - (score.get(a._id) as number) || (a._id < b._id ? -1 : a._id > b._id ? 1 : 0))
        for (let start = 0; start < docs.length && count < wanted; start += WITHIN_BATCH) {
          const batch = docs.slice(start, start + WITHIN_BATCH)
          const parents = options.within === undefined ? null : await this.parents(batch, options.within)
          for (const doc of batch) {
            const parent = parents?.get(doc[(options.within as { field: string } | undefined)?.field ?? ''])
            if (parents !== null && parent === undefined) continue
            count++
            if (count > skip && count <= wanted) hits.push({ ...this.hit(doc, score.get(doc._id) as number, spec, query), ...(parent === undefined ? {} : { parent: parent as WithId<Document> }) })
          }
        }
      }
      return hits
    } catch (error) { translate(error, this.name, 'query') }
  }

  /** The parents of a batch of hits that match `within`'s filter, by id. */
  private async parents (batch: MongoDocument[], within: NonNullable<TextSearchOptions['within']>, projection?: MongoDocument): Promise<Map<unknown, MongoDocument>> {
    const ids = [...new Set(batch.map((doc) => doc[within.field]).filter((id) => typeof id === 'string'))]
    const found = await this.db.collection(within.collection).find({ $and: [{ _id: { $in: ids } }, portableQuery(within.filter)] }, { ...(projection === undefined ? {} : { projection }), ...this.limit }).toArray()
    return new Map(found.map((parent: MongoDocument) => [parent._id, parent]))
  }

  async count (query: TextQuery, filter: Filter, options: TextCountOptions = {}): Promise<number> {
    this.check(filter, options)
    validateCount(options.cap, 'options.cap')
    const spec = await this.spec()
    const scope = scopeValues(spec, options.scope)
    if (query.terms.length === 0 || scope?.length === 0) return 0
    const cap = options.cap ?? 0
    let count = 0
    try {
      for (const part of this.parts(query, spec, scope)) {
        const left = cap === 0 ? 0 : cap - count
        const where = { $and: [part, portableQuery(filter)] }
        count += options.within === undefined
          ? await this.raw.countDocuments(where, { ...this.limit, ...(left === 0 ? {} : { limit: left }) })
          : await this.countWithin(where, options.within, left)
        if (cap !== 0 && count >= cap) return cap
      }
      return count
    } catch (error) { translate(error, this.name, 'query') }
  }

  /** MongoDB's text search and count are separate queries either way (a count reads no score). */
  async searchCounted (query: TextQuery, filter: Filter, options: TextSearchOptions & Pick<TextCountOptions, 'cap'> = {}): Promise<{ hits: Array<TextHit<T>>, count: number }> {
    const { cap, ...search } = options
    return { hits: await this.search(query, filter, search), count: await this.count(query, filter, { scope: options.scope, within: options.within, cap }) }
  }

  /** A count under `within`: unranked, reading only the field that names each match's parent, and the ids of the parents that match, a batch at a time until the cap. */
  private async countWithin (where: MongoDocument, within: NonNullable<TextSearchOptions['within']>, cap: number): Promise<number> {
    let count = 0
    const cursor = this.raw.find(where, { projection: { [within.field]: 1 }, batchSize: WITHIN_BATCH, ...this.limit })
    let batch: MongoDocument[] = []
    const flush = async (): Promise<boolean> => {
      const found = await this.parents(batch, within, { _id: 1 })
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
  }

  private hit (doc: MongoDocument, score: number, spec: TextIndexSpec, query: TextQuery): TextHit<T> {
    return { doc: doc as WithId<T>, score: Number(score), snippet: bestSnippet(doc, spec.fields, query) }
  }
}
