/**
 * The Store port: a documented subset of the official `mongodb` driver's
 * Collection API. Services depend on these types only; the
 * embedded SQLite engine and the MongoDB engine both implement them and are
 * held to the same answers by test/services/store/conformance.
 *
 * Values a document may hold: string (well-formed UTF-16), finite number,
 * boolean, null, valid Date, arrays and plain objects, nested at most 100
 * levels, under names that are not empty, do not start with `$` and hold no
 * `.` or NUL (semantics/documents.ts; anything else is InvalidDocumentError
 * from every engine). `_id` is always a string; when an insert omits it the
 * Store fills it from the one id generator.
 *
 * insertMany, updateMany and deleteMany are all-or-nothing on every engine,
 * and touch at most MAX_WRITE_DOCUMENTS (10,000) documents; larger sets go
 * through `extensions.sweep`, a page at a time. A document must be smaller
 * than 16 MiB as BSON, on both engines.
 */

export type Document = { [key: string]: unknown }
export type WithId<T> = T & { _id: string }

/** A MongoDB query filter restricted to the operators semantics/match.ts accepts. */
export type Filter = { [key: string]: unknown }
/** A MongoDB update document restricted to the operators below (with `$each` inside $push and $addToSet). */
export type Update = { [key: string]: unknown }

export const UPDATE_OPERATORS = [
  '$set', '$unset', '$inc', '$push', '$pull', '$addToSet', '$setOnInsert'
] as const

export type SortDirection = 1 | -1
export type Sort = { [path: string]: SortDirection }
/** Inclusion ({a: 1}) or exclusion ({a: 0}) projection; `_id` may be excluded from an inclusion. */
export type Projection = { [path: string]: 0 | 1 | boolean }

export interface FindOptions {
  sort?: Sort
  skip?: number
  limit?: number
  projection?: Projection
}

export interface CountOptions {
  skip?: number
  limit?: number
}

export interface UpdateOptions {
  upsert?: boolean
}

export interface FindOneAndUpdateOptions {
  upsert?: boolean
  /** Which version to return; MongoDB's default is 'before'. */
  returnDocument?: 'before' | 'after'
  sort?: Sort
  projection?: Projection
}

export interface FindOneAndDeleteOptions {
  sort?: Sort
  projection?: Projection
}

export interface InsertOneResult { acknowledged: boolean, insertedId: string }
export interface InsertManyResult { acknowledged: boolean, insertedCount: number, insertedIds: { [index: number]: string } }
export interface UpdateResult {
  acknowledged: boolean
  matchedCount: number
  modifiedCount: number
  upsertedCount: number
  upsertedId: string | null
}
export interface DeleteResult { acknowledged: boolean, deletedCount: number }

export type IndexKey = { [path: string]: SortDirection }
export interface CreateIndexOptions {
  name?: string
  unique?: boolean
  /**
   * Only documents matching it are indexed (MongoDB's partial index). The
   * Store's subset is one form: `{ <field>: { $gte: '' } }` for one or more
   * of the key's fields, "the field holds a string", which an equality or
   * `$in` on strings implies for both engines' planners; an item's optional
   * reference (null on most documents) then costs no index entry. Not with
   * `unique`.
   */
  partialFilterExpression?: Filter
}
export interface IndexDescription { name: string, key: IndexKey, unique: boolean, partialFilterExpression?: Filter }

/** The cursor subset: what `find()` returns. */
export interface StoreCursor<T> extends AsyncIterable<T> {
  toArray (): Promise<T[]>
}

export interface StoreCollection<T extends Document = Document> {
  readonly collectionName: string
  insertOne (doc: T & { _id?: string }): Promise<InsertOneResult>
  insertMany (docs: Array<T & { _id?: string }>): Promise<InsertManyResult>
  findOne (filter?: Filter, options?: FindOptions): Promise<WithId<T> | null>
  find (filter?: Filter, options?: FindOptions): StoreCursor<WithId<T>>
  countDocuments (filter?: Filter, options?: CountOptions): Promise<number>
  updateOne (filter: Filter, update: Update, options?: UpdateOptions): Promise<UpdateResult>
  updateMany (filter: Filter, update: Update, options?: UpdateOptions): Promise<UpdateResult>
  findOneAndUpdate (filter: Filter, update: Update, options?: FindOneAndUpdateOptions): Promise<WithId<T> | null>
  findOneAndDelete (filter: Filter, options?: FindOneAndDeleteOptions): Promise<WithId<T> | null>
  deleteOne (filter: Filter): Promise<DeleteResult>
  deleteMany (filter: Filter): Promise<DeleteResult>
  createIndex (key: IndexKey, options?: CreateIndexOptions): Promise<string>
  dropIndex (name: string): Promise<void>
  listIndexes (): Promise<IndexDescription[]>
  drop (): Promise<boolean>
}

export type StoreEngineName = 'sqlite' | 'mongodb'

/**
 * Reads of one collection whose caller promises never to change what it
 * gets. An engine may then hand every such reader the same frozen instance of
 * a document for as long as the document is unchanged (the embedded engine
 * does, from its document cache; MongoDB's driver returns fresh documents),
 * so what is derived from it can be remembered by identity (FrozenMemo).
 */
export interface SharedReads<T extends Document = Document> {
  findOne (filter: Filter): Promise<WithId<T> | null>
  find (filter: Filter, options?: Omit<FindOptions, 'projection'>): StoreCursor<WithId<T>>
  /**
   * A bounded scan, for a filter no index serves: of the first `examine`
   * documents matching `window` in `sort` order, those matching `filter`,
   * `skip`ped and `limit`ed; `last` is the `examine`-th of the window, or null
   * when the window holds fewer. The same answer as the two queries of
   * scanByQueries, which every engine may run; the embedded engine answers
   * from documents it has in memory when it can (see selectScan).
   */
  scan (window: Filter, filter: Filter, options: ScanOptions<T>): Promise<ScanPage<T>>
}

export interface ScanOptions<T extends Document = Document> {
  sort: Sort
  examine: number
  skip: number
  limit: number
  /**
   * The page's query for an engine that answers by queries: `filter` within
   * the window, through `last` when the window is full. The caller builds it
   * (it knows how its order is written as a range); it must select exactly
   * what `window` and `filter` together select, up to and including `last`.
   */
  query: (last: WithId<T> | null) => Filter
}

export interface ScanPage<T extends Document = Document> { docs: Array<WithId<T>>, last: WithId<T> | null }

/**
 * Writes over any number of documents, in pages of the Store's sweep page
 * size, each page its own all-or-nothing write: not atomic as a whole, but
 * never past a transaction's bounds, and each can be run again to finish what
 * an interrupted run left (services/store/sweep.ts).
 */
export interface PagedWrites {
  /** The number of documents deleted. */
  deleteMany (filter: Filter): Promise<number>
  /** The number of documents modified. */
  updateMany (filter: Filter, update: Update): Promise<number>
  /** Deletes the documents page by page, then the collection; true when there was one. */
  drop (): Promise<boolean>
}

/**
 * Everything Plinth adds to the driver's shape, kept in one place so the rest
 * of the port stays exactly the driver's subset. Every engine implements it;
 * for MongoDB it is plain driver calls.
 */
export interface StoreExtensions {
  shared<T extends Document = Document> (collection: string): SharedReads<T>
  /** Internal sweeps over a collection: deletes, updates and drops that may touch any number of documents. */
  sweep (collection: string): PagedWrites
  /**
   * The time as the Store tells it, for what every node must judge alike
   * (job leases and run times, how long retired files are kept): on MongoDB
   * the primary's clock, on the embedded engine the process's (one machine).
   */
  now (): Promise<Date>
  /** The collection's full-text index (`TextIndex`, below): kept in step with every write by the engine. */
  text<T extends Document = Document> (collection: string): TextIndex<T>
}

export interface Store {
  readonly engine: StoreEngineName
  collection<T extends Document = Document> (name: string): StoreCollection<T>
  listCollections (): Promise<string[]>
  dropCollection (name: string): Promise<boolean>
  readonly extensions: StoreExtensions
  /** Resolves when the engine answers; rejects otherwise (readiness probe). */
  ping (): Promise<void>
  close (): Promise<void>
}

/**
 * The Store's text index (`store.extensions.text(collection)`): weighted
 * fields of a collection's documents, kept in step with every write by the
 * engine itself (SQLite FTS5 fed by triggers inside the writing transaction;
 * a MongoDB text index), searched under an ordinary Store filter that the
 * engine applies inside the same query, so a page is never short for what a
 * filter took away. Words come from `parseTextQuery` (text-search.ts).
 */
export interface TextIndexSpec {
  /** Top-level or dotted string fields and their weights (a higher weight ranks a match there higher). */
  fields: Record<string, number>
  /**
   * A string field that partitions the collection (a tenant, a project): a
   * search given `scope` values matches within those partitions before it
   * ranks or counts, so a small partition's search costs its own matches.
   */
  scope?: string
}

/**
 * The words to find, as `parseTextQuery` makes them: letters and digits only,
 * so nothing a user types reaches either engine's query syntax. Every word
 * must occur; the last may also be the start of a word (`prefix`).
 */
export interface TextQuery { terms: string[], prefix: boolean }

/** A stretch of a field around what matched; `highlights` are [start, end) offsets of the matched words in `text`. */
export interface Snippet { field: string, text: string, highlights: Array<[number, number]> }

export interface TextHit<T extends Document> {
  doc: WithId<T>
  /** Higher is better; comparable within one query of one collection. */
  score: number
  snippet: Snippet
  /** With `within`: the document the hit lies in. */
  parent?: WithId<Document>
}

export interface TextSearchOptions {
  skip?: number
  limit?: number
  /**
   * Only documents whose spec's `scope` field is one of these strings, applied inside the match (required when the
   * spec declares a scope). It narrows, never widens: the filter still decides.
   */
  scope?: string[]
  /** Only documents whose `field` names the `_id` of a document of `collection` matching `filter` (a comment's work item). */
  within?: { collection: string, field: string, filter: Filter }
}

export interface TextCountOptions extends Pick<TextSearchOptions, 'within' | 'scope'> {
  cap?: number
}

export interface TextIndex<T extends Document = Document> {
  /** Declares the index (idempotent); documents already stored are indexed when it is new. */
  ensure (spec: TextIndexSpec): Promise<void>
  /**
   * Matches of `query` that also match `filter`, best first, skipped and limited inside the engine's query. Best
   * first among at most TEXT_RANK_WINDOW matches at a time (text-search.ts): the newest window of the matches is
   * ranked, then the next older one, so a common word's cost is bounded by the window, not by its matches.
   */
  search (query: TextQuery, filter: Filter, options?: TextSearchOptions): Promise<Array<TextHit<T>>>
  /**
   * How many documents `search` would find without skip and limit; with
   * `cap`, at most `cap` (the engine stops counting there: a facet over a
   * common word need not visit every match).
   */
  count (query: TextQuery, filter: Filter, options?: TextCountOptions): Promise<number>
  /**
   * What `search` and `count` (with `cap`) would answer, from one walk of the match where the engine can: the rows
   * ranked and filtered for the page are counted as they pass, so a facet beside a page costs a few rows more than the
   * page, not a second match.
   */
  searchCounted (query: TextQuery, filter: Filter, options?: TextSearchOptions & Pick<TextCountOptions, 'cap'>): Promise<{ hits: Array<TextHit<T>>, count: number }>
  /** Indexes every stored document again (after a restore or a change of spec); the number of documents indexed. */
  rebuild (): Promise<number>
}
