import { InvalidUpdateError, QueryError } from '../errors.js'
import type {
  CountOptions, CreateIndexOptions, DeleteResult, Document, Filter, FindOneAndDeleteOptions, FindOneAndUpdateOptions,
  FindOptions, IndexDescription, IndexKey, InsertManyResult, InsertOneResult, Projection, ScanOptions, ScanPage, SharedReads, Sort, StoreCollection,
  StoreCursor, Update, UpdateOptions, UpdateResult, WithId
} from '../types.js'
import { MAX_WRITE_DOCUMENTS, checkDocumentBounds, checkWriteCount, compileFilter, compileProjection, compileUpdate, upsertSeed, validateDocument, validateSort } from '../semantics/index.js'
import { isPlainObject } from '../semantics/values.js'
import type { IdGenerator } from '../../platform/ids.js'
import { decodeDocument, encodeDocument } from './codec.js'
import type { CollectionMeta, Connection } from './connection.js'
import { SqliteCursor } from './cursor.js'
import { checkArrayKeys, checkParallelArrays, createIndex, dropIndex, duplicateKeyError, isUniqueViolation, listIndexes, needsArrayWork, trackArrays } from './indexes.js'
import { quoteIdentifier } from './names.js'
import { FrozenMemo } from '../../cache/frozen-memo.js'
import { scanByQueries } from '../scan.js'
import { filterShape, flattenAnd, rememberValidShape, shapeValidated, type FilterShape } from './plans.js'
import { countMatches, selectDocuments, selectMatches, selectScan, validateCount, whereOf, type DocumentTest, type Match, type Selection } from './query.js'

interface PreparedInsert { id: string, json: string, doc: Document }
interface UpdateRun { result: UpdateResult, before: Document | null, after: Document | null }

const unprojected = (doc: Document): Document => doc

function projector (projection: Projection | undefined): (doc: Document) => Document {
  // Decoded rows are private copies already; only a real projection needs to copy.
  return projection === undefined || Object.keys(projection).length === 0 ? unprojected : compileProjection(projection)
}

/**
 * The semantics matcher for a filter, validating it now. A top-level equality
 * filter whose shape (field names, value types) was validated before cannot
 * fail validation, so its matcher is compiled only if a row needs re-checking,
 * which an exact SQL translation makes unnecessary.
 */
function filterTest (filter: Filter, shape: FilterShape | null = filterShape(filter)): DocumentTest {
  if (shape === null) return compileFilter(filter)
  if (!shapeValidated(shape)) {
    const test = compileFilter(filter)
    rememberValidShape(shape)
    return test
  }
  let test: DocumentTest | undefined
  return (doc) => (test ??= compileFilter(filter))(doc)
}

// A frozen sort (as shared sort plans are) cannot change, so once it passed validation it is not parsed again.
const validSorts = new FrozenMemo((sort: Sort) => { validateSort(sort); return true })

function checkSort (sort: Sort | undefined): void {
  if (sort !== undefined) validSorts.get(sort)
}

const NO_OPTIONS: FindOptions = Object.freeze({})

function onlyId (filter: Filter): boolean {
  for (const key in filter) if (key !== '_id') return false
  return true
}

function isNoSuchTable (error: unknown): boolean {
  return error instanceof Error && error.message.startsWith('no such table')
}

/**
 * One collection of the embedded engine. Every method runs synchronously on
 * the connection: reads inside a read transaction (one snapshot of catalogue
 * and data), writes inside BEGIN IMMEDIATE, so each call is atomic with
 * respect to other calls and to other processes sharing the file.
 */
export class SqliteCollection<T extends Document = Document> implements StoreCollection<T> {
  /** The Store extension: the same reads, handing out the document cache's frozen instances. */
  readonly shared: SharedReads<T> = {
    findOne: async (filter) => this.findFirst(filter, NO_OPTIONS, true),
    find: (filter, options = {}) => new SqliteCursor(this.planFind(filter, options, true)),
    scan: async (window, filter, options) => this.scanFromMemory(window, filter, options) ?? await scanByQueries(this.shared, window, options)
  }

  constructor (readonly collectionName: string, private readonly connection: Connection, private readonly newId: IdGenerator) {}

  private meta (): CollectionMeta | undefined {
    return this.connection.collection(this.collectionName)
  }

  private prepare (doc: Document, path: string): PreparedInsert {
    const assigned = isPlainObject(doc) && doc._id === undefined ? this.newId() : undefined
    validateDocument(doc, path, assigned)
    const id = assigned ?? doc._id as string
    return { id, json: encodeDocument(doc, id, path), doc }
  }

  /** Inside a write transaction: unique checks MongoDB makes per array element, the row, then multikey tracking. */
  private insertPrepared (prepared: PreparedInsert): void {
    let meta = this.connection.ensureCollection(this.collectionName)
    if (meta.indexes.length > 0) {
      checkParallelArrays(meta, prepared.doc)
      checkArrayKeys(this.connection, meta, prepared.doc, null)
    }
    try {
      this.connection.statement(`INSERT INTO ${quoteIdentifier(meta.table)} (id, doc) VALUES (?, ?)`).run(prepared.id, prepared.json)
    } catch (error) {
      throw duplicateKeyError(error, meta, { ...prepared.doc, _id: prepared.id }) ?? error
    }
    meta = this.meta() as CollectionMeta
    if (meta.multikey.size > 0) trackArrays(this.connection, meta, prepared.doc)
  }

  private replace (meta: CollectionMeta, match: Match, next: Document): void {
    if (next._id !== match.doc._id) throw new InvalidUpdateError('update._id', "Performing an update on the path '_id' would modify the immutable field '_id'")
    // MongoDB refuses an update whose result outgrows a document; so does this engine, which applies updates itself.
    checkDocumentBounds(next, 'update')
    const json = encodeDocument(next, match.doc._id as string, 'update')
    if (meta.indexes.length > 0) {
      checkParallelArrays(meta, next)
      checkArrayKeys(this.connection, meta, next, match.seq)
    }
    try {
      this.connection.statement(`UPDATE ${quoteIdentifier(meta.table)} SET doc = ? WHERE seq = ?`).run(json, match.seq)
    } catch (error) {
      throw duplicateKeyError(error, meta, next) ?? error
    }
    const current = this.meta() as CollectionMeta
    if (current.multikey.size > 0) trackArrays(this.connection, current, next)
  }

  /**
   * The common insert, inside the turn's group transaction (whose catalogue
   * is fresh). False when it needs the full path: array keys to check, a
   * collection to create, or a duplicate key to report against a fresh
   * catalogue.
   */
  private insertFast (prepared: PreparedInsert): boolean {
    const meta = this.meta()
    if (meta === undefined || needsArrayWork(meta, prepared.doc)) return false
    // needsArrayWork found no array along any array-free indexed path: with no multikey path either, no index can fork.
    if (meta.indexes.length > 0 && anyMultikey(meta)) checkParallelArrays(meta, prepared.doc)
    try {
      this.connection.statement(`INSERT INTO ${quoteIdentifier(meta.table)} (id, doc) VALUES (?, ?)`).run(prepared.id, prepared.json)
      return true
    } catch (error) {
      if (isUniqueViolation(error) || isNoSuchTable(error)) return false
      throw error
    }
  }

  /**
   * A write call's work, in the turn's group commit (Connection.groupWrite) or,
   * inside an explicit transaction, in it; answered once committed.
   */
  private async grouped<R> (fn: () => R): Promise<R> {
    const group = await this.connection.writing(() => this.connection.groupWrite(fn, this.collectionName))
    if (group === null) return await this.connection.writing(() => this.connection.write(fn, this.collectionName))
    await group.committed
    return group.result
  }

  async insertOne (doc: T & { _id?: string }): Promise<InsertOneResult> {
    const prepared = this.prepare(doc, 'document')
    const committed = await this.connection.writing(() => this.connection.groupInsert(() => this.insertFast(prepared), this.collectionName))
    if (committed === null) await this.connection.writing(() => { this.connection.write(() => { this.insertPrepared(prepared) }, this.collectionName) })
    else await committed
    return { acknowledged: true, insertedId: prepared.id }
  }

  /** All or nothing: unlike MongoDB's ordered insertMany, a failure leaves none of the documents inserted. */
  async insertMany (docs: Array<T & { _id?: string }>): Promise<InsertManyResult> {
    if (!Array.isArray(docs)) throw new QueryError('documents', 'insertMany takes an array of documents')
    checkWriteCount(docs.length, 'insertMany')
    const prepared = docs.map((doc, i) => this.prepare(doc, `documents[${i}]`))
    await this.grouped(() => { for (const one of prepared) this.insertPrepared(one) })
    const insertedIds: Record<number, string> = {}
    prepared.forEach((one, i) => { insertedIds[i] = one.id })
    return { acknowledged: true, insertedCount: prepared.length, insertedIds }
  }

  async findOne (filter: Filter = {}, options: FindOptions = {}): Promise<WithId<T> | null> {
    return this.findFirst(filter, options, false)
  }

  private findFirst (filter: Filter, options: FindOptions, shared: boolean): WithId<T> | null {
    if (typeof filter._id === 'string' && onlyId(filter) && validateCount(options.skip, 'options.skip') === 0) {
      return this.findById(filter._id, options.projection, shared)
    }
    const [first] = this.planFind(filter, { ...options, limit: 1 }, shared)()
    return first ?? null
  }

  /** The hot path: a primary-key lookup needs neither the matcher nor, when it was read before in this state of the file, SQLite. */
  private findById (id: string, projection: Projection | undefined, shared: boolean): WithId<T> | null {
    const project = projector(projection)
    const connection = this.connection
    connection.beginTurn()
    const meta = this.meta()
    if (meta === undefined) return null
    const cached = connection.cachedDocument(this.collectionName, id, shared)
    if (cached !== undefined) return project(cached) as WithId<T>
    let row: [seq: number, json: string] | undefined
    try {
      row = connection.statement(`SELECT seq, doc FROM ${quoteIdentifier(meta.table)} WHERE id = ?`).raw().get(id) as [number, string] | undefined
    } catch (error) {
      if (isNoSuchTable(error)) return null
      throw error
    }
    return row === undefined ? null : project(connection.rowDocument(this.collectionName, id, row[0], row[1], shared)) as WithId<T>
  }

  /** Validates now (as the driver's find does) and returns the query to run later. */
  private planFind (asked: Filter, options: FindOptions, shared: boolean): () => Array<WithId<T>> {
    const filter = flattenAnd(asked)
    const shape = filterShape(filter)
    const test = filterTest(filter, shape)
    checkSort(options.sort)
    const project = projector(options.projection)
    const skip = validateCount(options.skip, 'options.skip')
    const limit = validateCount(options.limit, 'options.limit')
    return () => {
      return this.readMatches(filter, test, { sort: options.sort, skip, limit, shared, shape }, project)
    }
  }

  private readMatches (filter: Filter, test: DocumentTest, selection: Selection, project: (doc: Document) => Document): Array<WithId<T>> {
    return this.connection.read(() => {
      const meta = this.meta()
      if (meta === undefined) return []
      const docs = selectDocuments(this.connection, meta, filter, test, selection) as Array<WithId<T>>
      return project === unprojected ? docs : docs.map((doc) => project(doc) as WithId<T>)
    })
  }

  /** The scan answered from cached documents (selectScan), after validating what the queries would; null when it must be queried. */
  private scanFromMemory (window: Filter, filter: Filter, options: ScanOptions<T>): ScanPage<T> | null {
    filterTest(window)
    const test = filterTest(filter)
    checkSort(options.sort)
    const plan = { window, test, sort: options.sort, examine: validateCount(options.examine, 'options.examine'), skip: validateCount(options.skip, 'options.skip'), limit: validateCount(options.limit, 'options.limit') }
    if (plan.examine === 0) return null
    return this.connection.read(() => {
      const meta = this.meta()
      if (meta === undefined) return { docs: [], last: null }
      return selectScan(this.connection, meta, plan) as ScanPage<T> | null
    })
  }

  find (filter: Filter = {}, options: FindOptions = {}): StoreCursor<WithId<T>> {
    return new SqliteCursor(this.planFind(filter, options, false))
  }

  async countDocuments (filter: Filter = {}, options: CountOptions = {}): Promise<number> {
    const test = filterTest(filter)
    const skip = validateCount(options.skip, 'options.skip')
    const limit = validateCount(options.limit, 'options.limit')
    return this.connection.read(() => {
      const meta = this.meta()
      return meta === undefined ? 0 : countMatches(this.connection, meta, filter, test, skip, limit)
    })
  }

  private async runUpdate (filter: Filter, update: Update, many: boolean, upsert: boolean, sort?: Sort): Promise<UpdateRun> {
    const test = filterTest(filter)
    const apply = compileUpdate(update)
    checkSort(sort)
    const seed = upsert ? upsertSeed(filter, update) : null
    return await this.grouped(() => {
      let meta = this.meta()
      const matches = meta === undefined ? [] : selectMatches(this.connection, meta, filter, test, { sort, limit: many ? MAX_WRITE_DOCUMENTS + 1 : 1 })
      if (many) checkWriteCount(matches.length, 'updateMany')
      let modifiedCount = 0
      let after: Document | null = null
      for (const match of matches) {
        const outcome = apply(match.doc, { isInsert: false })
        after = outcome.doc
        if (!outcome.modified) continue
        this.replace(meta as CollectionMeta, match, outcome.doc)
        meta = this.meta()
        modifiedCount++
      }
      const result: UpdateResult = { acknowledged: true, matchedCount: matches.length, modifiedCount, upsertedCount: 0, upsertedId: null }
      if (matches.length > 0 || seed === null) return { result, before: matches[0]?.doc ?? null, after }
      const inserted = apply(seed, { isInsert: true }).doc
      const prepared = this.prepare(inserted, 'upsert')
      this.insertPrepared(prepared)
      return { result: { ...result, upsertedCount: 1, upsertedId: prepared.id }, before: null, after: decodeDocument(prepared.json) }
    })
  }

  async updateOne (filter: Filter, update: Update, options: UpdateOptions = {}): Promise<UpdateResult> {
    return (await this.runUpdate(filter, update, false, options.upsert === true)).result
  }

  /** All or nothing: a unique violation on any document rolls back the whole update. */
  async updateMany (filter: Filter, update: Update, options: UpdateOptions = {}): Promise<UpdateResult> {
    return (await this.runUpdate(filter, update, true, options.upsert === true)).result
  }

  async findOneAndUpdate (filter: Filter, update: Update, options: FindOneAndUpdateOptions = {}): Promise<WithId<T> | null> {
    const project = projector(options.projection)
    if (options.returnDocument !== undefined && options.returnDocument !== 'before' && options.returnDocument !== 'after') {
      throw new QueryError('options.returnDocument', "returnDocument must be 'before' or 'after'")
    }
    const run = await this.runUpdate(filter, update, false, options.upsert === true, options.sort)
    const chosen = options.returnDocument === 'after' ? run.after : run.before
    return chosen === null ? null : project(chosen) as WithId<T>
  }

  private async runDelete (filter: Filter, many: boolean, sort?: Sort): Promise<Match[] | number> {
    const test = filterTest(filter)
    checkSort(sort)
    return await this.grouped(() => {
      const meta = this.meta()
      if (meta === undefined) return 0
      const table = quoteIdentifier(meta.table)
      if (many) {
        const where = whereOf(meta, filter)
        if (where.exact) {
          // One past the bound is deleted at most; past it the transaction rolls back.
          const deleted = this.connection.statement(`DELETE FROM ${table} WHERE seq IN (SELECT seq FROM ${table} WHERE ${where.sql} LIMIT ${MAX_WRITE_DOCUMENTS + 1})`).run(...where.params).changes
          checkWriteCount(deleted, 'deleteMany')
          return deleted
        }
      }
      const matches = selectMatches(this.connection, meta, filter, test, { sort, limit: many ? MAX_WRITE_DOCUMENTS + 1 : 1 })
      if (many) checkWriteCount(matches.length, 'deleteMany')
      const remove = this.connection.statement(`DELETE FROM ${table} WHERE seq = ?`)
      for (const match of matches) remove.run(match.seq)
      return matches
    })
  }

  async findOneAndDelete (filter: Filter, options: FindOneAndDeleteOptions = {}): Promise<WithId<T> | null> {
    const project = projector(options.projection)
    const removed = await this.runDelete(filter, false, options.sort)
    return typeof removed === 'number' || removed.length === 0 ? null : project(removed[0].doc) as WithId<T>
  }

  async deleteOne (filter: Filter): Promise<DeleteResult> {
    const removed = await this.runDelete(filter, false)
    return { acknowledged: true, deletedCount: typeof removed === 'number' ? removed : removed.length }
  }

  async deleteMany (filter: Filter): Promise<DeleteResult> {
    const removed = await this.runDelete(filter, true)
    return { acknowledged: true, deletedCount: typeof removed === 'number' ? removed : removed.length }
  }

  async createIndex (key: IndexKey, options: CreateIndexOptions = {}): Promise<string> {
    return await this.connection.writing(() => createIndex(this.connection, this.collectionName, key, options))
  }

  async dropIndex (name: string): Promise<void> {
    await this.connection.writing(() => { dropIndex(this.connection, this.collectionName, name) })
  }

  async listIndexes (): Promise<IndexDescription[]> {
    return this.connection.read(() => listIndexes(this.meta()))
  }

  async drop (): Promise<boolean> {
    return await this.connection.writing(() => this.connection.write(() => this.connection.dropCollection(this.collectionName), this.collectionName))
  }
}

function anyMultikey (meta: CollectionMeta): boolean {
  for (const multikey of meta.multikey.values()) if (multikey) return true
  return false
}
