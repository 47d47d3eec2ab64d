import { MongoServerError, type ClientSession, type Collection, type FindCursor } from 'mongodb'
import type {
  CountOptions, CreateIndexOptions, DeleteResult, Document, Filter, FindOneAndDeleteOptions, FindOneAndUpdateOptions,
  FindOptions, IndexDescription, IndexKey, InsertManyResult, InsertOneResult, StoreCollection, StoreCursor, Update, UpdateOptions,
  UpdateResult, WithId
} from '../types.js'
import { IndexNotFoundError, InvalidIndexError, QueryError } from '../errors.js'
import {
  MAX_WRITE_DOCUMENTS, checkDropIndex, checkWriteCount, existingIndex, indexSpec, upsertSeed, validateCount, validateDocument, validateFilter, validateProjection,
  validateSort, validateUpdate, withoutNegativeZero
} from '../semantics/index.js'
import { isPlainObject } from '../semantics/values.js'
import type { IdGenerator } from '../../platform/ids.js'
import { portableQuery } from './portable.js'
import { translate } from './translate.js'
import { TEXT_INDEX_NAME } from './text-index.js'

/** Runs `work` in one transaction (a session's withTransaction): all of its writes commit, or none. */
export type Transact = <R>(work: (session: ClientSession) => Promise<R>) => Promise<R>

function checkFind (filter: Filter, options: { sort?: FindOptions['sort'], projection?: FindOptions['projection'], skip?: number, limit?: number } = {}): void {
  validateFilter(filter)
  if (options.sort !== undefined) validateSort(options.sort)
  if (options.projection !== undefined) validateProjection(options.projection)
  validateCount(options.skip, 'options.skip')
  validateCount(options.limit, 'options.limit')
}

/** The driver's cursor, with its errors translated as every other call's are. */
class MongoCursor<T> implements StoreCursor<T> {
  constructor (private readonly raw: FindCursor<T>, private readonly collection: string) {}

  async toArray (): Promise<T[]> {
    try {
      return await this.raw.toArray()
    } catch (error) { translate(error, this.collection, 'query') }
  }

  async * [Symbol.asyncIterator] (): AsyncIterator<T> {
    try {
      for await (const doc of this.raw) yield doc
    } catch (error) { translate(error, this.collection, 'query') }
  }
}

/**
 * One collection on the MongoDB engine: the driver's call, after the same
 * validators the embedded engine runs (filters, updates, documents, index
 * specs, counts) and with patterns in their portable form. Writes that may
 * touch several documents run in a transaction, so they are all-or-nothing
 * as on the embedded engine.
 */
export class MongoStoreCollection<T extends Document> implements StoreCollection<T> {
  readonly collectionName: string

  /**
   * Every operation that evaluates a filter carries the server-side time
   * limit: a client's pattern runs on RE2 on the embedded engine but on
   * PCRE here, where a backtracking pattern could hold the server's CPU.
   */
  private readonly limit: { maxTimeMS: number }

  // The driver's generics fight a string `_id`; the port's types are the contract here.
  constructor (private readonly raw: Collection<any>, private readonly newId: IdGenerator, private readonly transact: Transact, queryTimeoutMs: number) {
    this.collectionName = raw.collectionName
    this.limit = { maxTimeMS: queryTimeoutMs }
  }

  /** The document as stored: checked, with our id when it has none (not the driver's ObjectId) and -0 as 0. */
  private prepare (doc: T & { _id?: string }, path: string): T & { _id: string } {
    const assigned = isPlainObject(doc) && doc._id === undefined ? this.newId() : undefined
    validateDocument(doc, path, assigned)
    const stored = withoutNegativeZero(doc)
    return (assigned === undefined ? stored : { ...stored, _id: assigned }) as T & { _id: string }
  }

  async insertOne (doc: T & { _id?: string }): Promise<InsertOneResult> {
    const stored = this.prepare(doc, 'document')
    try {
      await this.raw.insertOne(stored)
    } catch (error) { translate(error, this.collectionName) }
    return { acknowledged: true, insertedId: stored._id }
  }

  async insertMany (docs: Array<T & { _id?: string }>): Promise<InsertManyResult> {
    if (!Array.isArray(docs)) throw new QueryError('documents', 'insertMany takes an array of documents')
    checkWriteCount(docs.length, 'insertMany')
    const stored = docs.map((doc, i) => this.prepare(doc, `documents[${i}]`))
    // The driver refuses an empty batch; the embedded engine acknowledges it, and so does the port.
    if (stored.length > 0) {
      try {
        await this.transact(async (session) => await this.raw.insertMany(stored, { ordered: true, session }))
      } catch (error) { translate(error, this.collectionName) }
    }
    const insertedIds: Record<number, string> = {}
    stored.forEach((doc, index) => { insertedIds[index] = doc._id })
    return { acknowledged: true, insertedCount: stored.length, insertedIds }
  }

  async findOne (filter: Filter = {}, options: FindOptions = {}): Promise<WithId<T> | null> {
    checkFind(filter, options)
    try {
      return await this.raw.findOne(portableQuery(filter), { ...options, ...this.limit }) as WithId<T> | null
    } catch (error) { translate(error, this.collectionName, 'query') }
  }

  find (filter: Filter = {}, options: FindOptions = {}): StoreCursor<WithId<T>> {
    checkFind(filter, options)
    return new MongoCursor(this.raw.find(portableQuery(filter), { ...options, ...this.limit }), this.collectionName) as StoreCursor<WithId<T>>
  }

  async countDocuments (filter: Filter = {}, options: CountOptions = {}): Promise<number> {
    validateFilter(filter)
    const skip = validateCount(options.skip, 'options.skip')
    const limit = validateCount(options.limit, 'options.limit')
    // The count pipeline refuses `$limit: 0`; like find's, a zero limit means none.
    const counted = { ...(skip > 0 ? { skip } : {}), ...(limit > 0 ? { limit } : {}), ...this.limit }
    try {
      return await this.raw.countDocuments(portableQuery(filter), counted)
    } catch (error) { translate(error, this.collectionName, 'query') }
  }

  /** An upsert's new document needs our id, not the driver's ObjectId, and is held to the document rules. */
  private upsertUpdate (filter: Filter, update: Update): Update {
    const seed = upsertSeed(filter, update)
    validateDocument(seed, 'upsert')
    if (seed._id !== undefined) return update
    const setOnInsert = (update.$setOnInsert ?? {}) as Record<string, unknown>
    return { ...update, $setOnInsert: { _id: this.newId(), ...setOnInsert } }
  }

  private async update (many: boolean, filter: Filter, update: Update, options: UpdateOptions): Promise<UpdateResult> {
    validateFilter(filter)
    validateUpdate(update)
    const upsert = options.upsert === true
    const effective = portableQuery(upsert ? this.upsertUpdate(filter, update) : update, 'update')
    const query = portableQuery(filter)
    try {
      const result = many
        ? await this.transact(async (session) => {
          await this.checkCount(query, session, 'updateMany')
          return await this.raw.updateMany(query, effective, { upsert, session, ...this.limit })
        })
        : await this.raw.updateOne(query, effective, { upsert, ...this.limit })
      return {
        acknowledged: true,
        matchedCount: result.matchedCount,
        modifiedCount: result.modifiedCount,
        upsertedCount: result.upsertedCount,
        upsertedId: result.upsertedId === null ? null : String(result.upsertedId)
      }
    } catch (error) { translate(error, this.collectionName, 'update') }
  }

  /** Inside the write's transaction: refused, before anything changes, when it would touch more than MAX_WRITE_DOCUMENTS. */
  private async checkCount (query: Filter, session: ClientSession, operation: 'updateMany' | 'deleteMany'): Promise<void> {
    checkWriteCount(await this.raw.countDocuments(query, { limit: MAX_WRITE_DOCUMENTS + 1, session, ...this.limit }), operation)
  }

  async updateOne (filter: Filter, update: Update, options: UpdateOptions = {}): Promise<UpdateResult> {
    return await this.update(false, filter, update, options)
  }

  async updateMany (filter: Filter, update: Update, options: UpdateOptions = {}): Promise<UpdateResult> {
    return await this.update(true, filter, update, options)
  }

  async findOneAndUpdate (filter: Filter, update: Update, options: FindOneAndUpdateOptions = {}): Promise<WithId<T> | null> {
    checkFind(filter, options)
    validateUpdate(update)
    if (options.returnDocument !== undefined && options.returnDocument !== 'before' && options.returnDocument !== 'after') {
      throw new QueryError('options.returnDocument', "returnDocument must be 'before' or 'after'")
    }
    const upsert = options.upsert === true
    const effective = portableQuery(upsert ? this.upsertUpdate(filter, update) : update, 'update')
    try {
      return await this.raw.findOneAndUpdate(portableQuery(filter), effective, {
        upsert,
        ...this.limit,
        returnDocument: options.returnDocument ?? 'before',
        ...(options.sort === undefined ? {} : { sort: options.sort }),
        ...(options.projection === undefined ? {} : { projection: options.projection })
      }) as WithId<T> | null
    } catch (error) { translate(error, this.collectionName, 'update') }
  }

  async findOneAndDelete (filter: Filter, options: FindOneAndDeleteOptions = {}): Promise<WithId<T> | null> {
    checkFind(filter, options)
    try {
      return await this.raw.findOneAndDelete(portableQuery(filter), { ...options, ...this.limit }) as WithId<T> | null
    } catch (error) { translate(error, this.collectionName, 'query') }
  }

  async deleteOne (filter: Filter): Promise<DeleteResult> {
    validateFilter(filter)
    try {
      const result = await this.raw.deleteOne(portableQuery(filter), this.limit)
      return { acknowledged: true, deletedCount: result.deletedCount }
    } catch (error) { translate(error, this.collectionName, 'query') }
  }

  async deleteMany (filter: Filter): Promise<DeleteResult> {
    validateFilter(filter)
    const query = portableQuery(filter)
    try {
      const result = await this.transact(async (session) => {
        await this.checkCount(query, session, 'deleteMany')
        return await this.raw.deleteMany(query, { session, ...this.limit })
      })
      return { acknowledged: true, deletedCount: result.deletedCount }
    } catch (error) { translate(error, this.collectionName, 'query') }
  }

  async createIndex (key: IndexKey, options: CreateIndexOptions = {}): Promise<string> {
    const spec = indexSpec(key, options)
    // Checked against the indexes there now, so conflicts and the count limit are refused as the embedded engine refuses them.
    const same = existingIndex(await this.listIndexes(), spec)
    if (same !== null) return same
    try {
      return await this.raw.createIndex(spec.key, { unique: spec.unique, name: spec.name, ...(spec.partial === null ? {} : { partialFilterExpression: spec.partial }) })
    } catch (error) {
      // Parallel arrays refuse the index here, not a document (as the embedded engine says).
      if (error instanceof MongoServerError && error.code === 171) throw new InvalidIndexError(`Cannot build index '${spec.name}': a document holds parallel arrays`)
      translate(error, this.collectionName)
    }
  }

  async dropIndex (name: string): Promise<void> {
    checkDropIndex(name)
    try {
      await this.raw.dropIndex(name)
    } catch (error) {
      if (isMissingNamespace(error)) throw new IndexNotFoundError(name)
      translate(error, this.collectionName)
    }
  }

  async listIndexes (): Promise<IndexDescription[]> {
    try {
      const indexes = await this.raw.listIndexes().toArray()
      // The text index is the text extension's (mongo/text-index.ts), not one of the port's indexes.
      return indexes.filter((index) => index.name !== TEXT_INDEX_NAME).map((index) => ({
        name: String(index.name),
        key: index.key as IndexKey,
        unique: index.unique === true || index.name === '_id_',
        ...(index.partialFilterExpression === undefined ? {} : { partialFilterExpression: index.partialFilterExpression as Filter })
      }))
    } catch (error) {
      if (isMissingNamespace(error)) return []
      translate(error, this.collectionName)
    }
  }

  /** True when the collection existed; a missing one is no error (servers before 7.0 answer NamespaceNotFound, later ones ok). */
  async drop (): Promise<boolean> {
    try {
      const [existing] = await this.raw.db.listCollections({ name: this.collectionName }, { nameOnly: true }).toArray()
      if (existing === undefined) return false
      return await this.raw.drop()
    } catch (error) {
      if (isMissingNamespace(error)) return false
      translate(error, this.collectionName)
    }
  }
}

function isMissingNamespace (error: unknown): boolean {
  return typeof error === 'object' && error !== null && (error as { code?: unknown }).code === 26
}
