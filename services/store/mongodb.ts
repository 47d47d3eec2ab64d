import { MongoClient, MongoServerError, type Collection, type Db } from 'mongodb'
import type {
  CountOptions, CreateIndexOptions, DeleteResult, Document, Filter, FindOneAndDeleteOptions, FindOneAndUpdateOptions,
  FindOptions, IndexDescription, IndexKey, InsertManyResult, InsertOneResult, Store, StoreCollection, StoreCursor,
  StoreExtensions, Update, UpdateOptions, UpdateResult, WithId
} from './types.js'
import { DuplicateKeyError, InvalidUpdateError } from './errors.js'
import { seedFromFilter, validateFilter, validateProjection, validateSort, validateUpdate } from './semantics/index.js'
import { newId as defaultNewId, type IdGenerator } from '../ids.js'

/**
 * The production engine: the official driver passed through. Filters and
 * updates are validated against the same whitelist as the embedded engine, so
 * a query that works on one engine works on the other.
 */

// Server error codes that mean "this update cannot apply to that document".
const UPDATE_TYPE_ERRORS = new Set([2, 14, 28, 54, 56])

function translate (error: unknown, collection: string): never {
  if (error instanceof MongoServerError) {
    if (error.code === 11000 || error.code === 11001) {
      const keyValue = (error.keyValue ?? {}) as Record<string, unknown>
      const index = /index: (\S+)/.exec(error.message)?.[1] ?? 'unknown'
      throw new DuplicateKeyError(collection, index, keyValue)
    }
    if (typeof error.code === 'number' && UPDATE_TYPE_ERRORS.has(error.code)) {
      throw new InvalidUpdateError('update', error.message)
    }
  }
  throw error
}

function checkFind (filter: Filter, options: { sort?: FindOptions['sort'], projection?: FindOptions['projection'] } = {}): void {
  validateFilter(filter)
  if (options.sort !== undefined) validateSort(options.sort)
  if (options.projection !== undefined) validateProjection(options.projection)
}

class MongoStoreCollection<T extends Document> implements StoreCollection<T> {
  readonly collectionName: string
  // The driver's generics fight a string `_id`; the port's types are the contract here.
  private readonly raw: Collection<any>

  constructor (raw: Collection<any>, private readonly newId: IdGenerator) {
    this.raw = raw
    this.collectionName = raw.collectionName
  }

  private withId (doc: T & { _id?: string }): T & { _id: string } {
    return (doc._id === undefined ? { ...doc, _id: this.newId() } : doc) as T & { _id: string }
  }

  async insertOne (doc: T & { _id?: string }): Promise<InsertOneResult> {
    const stored = this.withId(doc)
    try {
      await this.raw.insertOne(stored)
    } catch (error) { translate(error, this.collectionName) }
    return { acknowledged: true, insertedId: stored._id }
  }

  async insertMany (docs: Array<T & { _id?: string }>): Promise<InsertManyResult> {
    const stored = docs.map((doc) => this.withId(doc))
    try {
      await this.raw.insertMany(stored, { ordered: true })
    } catch (error) { translate(error, this.collectionName) }
    const insertedIds: Record<number, string> = {}
    stored.forEach((doc, index) => { insertedIds[index] = doc._id })
    return { acknowledged: true, insertedCount: stored.length, insertedIds }
  }

  async findOne (filter: Filter = {}, options: FindOptions = {}): Promise<WithId<T> | null> {
    checkFind(filter, options)
    return await this.raw.findOne(filter, options) as WithId<T> | null
  }

  find (filter: Filter = {}, options: FindOptions = {}): StoreCursor<WithId<T>> {
    checkFind(filter, options)
    return this.raw.find(filter, options) as unknown as StoreCursor<WithId<T>>
  }

  async countDocuments (filter: Filter = {}, options: CountOptions = {}): Promise<number> {
    validateFilter(filter)
    return await this.raw.countDocuments(filter, options)
  }

  private async update (many: boolean, filter: Filter, update: Update, options: UpdateOptions): Promise<UpdateResult> {
    validateFilter(filter)
    validateUpdate(update)
    // An upsert's new document needs our id, not the driver's ObjectId.
    const effective = options.upsert === true ? withUpsertId(filter, update, this.newId()) : update
    try {
      const result = many
        ? await this.raw.updateMany(filter, effective, { upsert: options.upsert === true })
        : await this.raw.updateOne(filter, effective, { upsert: options.upsert === true })
      return {
        acknowledged: true,
        matchedCount: result.matchedCount,
        modifiedCount: result.modifiedCount,
        upsertedCount: result.upsertedCount,
        upsertedId: result.upsertedId === null ? null : String(result.upsertedId)
      }
    } catch (error) { translate(error, this.collectionName) }
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
    const effective = options.upsert === true ? withUpsertId(filter, update, this.newId()) : update
    try {
      return await this.raw.findOneAndUpdate(filter, effective, {
        upsert: options.upsert === true,
        returnDocument: options.returnDocument ?? 'before',
        ...(options.sort === undefined ? {} : { sort: options.sort }),
        ...(options.projection === undefined ? {} : { projection: options.projection })
      }) as WithId<T> | null
    } catch (error) { translate(error, this.collectionName) }
  }

  async findOneAndDelete (filter: Filter, options: FindOneAndDeleteOptions = {}): Promise<WithId<T> | null> {
    checkFind(filter, options)
    return await this.raw.findOneAndDelete(filter, options) as WithId<T> | null
  }

  async deleteOne (filter: Filter): Promise<DeleteResult> {
    validateFilter(filter)
    const result = await this.raw.deleteOne(filter)
    return { acknowledged: true, deletedCount: result.deletedCount }
  }

  async deleteMany (filter: Filter): Promise<DeleteResult> {
    validateFilter(filter)
    const result = await this.raw.deleteMany(filter)
    return { acknowledged: true, deletedCount: result.deletedCount }
  }

  async createIndex (key: IndexKey, options: CreateIndexOptions = {}): Promise<string> {
    try {
      return await this.raw.createIndex(key, { unique: options.unique === true, ...(options.name === undefined ? {} : { name: options.name }) })
    } catch (error) { translate(error, this.collectionName) }
  }

  async dropIndex (name: string): Promise<void> {
    await this.raw.dropIndex(name)
  }

  async listIndexes (): Promise<IndexDescription[]> {
    try {
      const indexes = await this.raw.listIndexes().toArray()
      return indexes.map((index) => ({ name: String(index.name), key: index.key as IndexKey, unique: index.unique === true || index.name === '_id_' }))
    } catch (error) {
      if (error instanceof MongoServerError && error.code === 26) return [] // namespace does not exist yet
      throw error
    }
  }

  async drop (): Promise<boolean> {
    try {
      return await this.raw.drop()
    } catch (error) {
      if (error instanceof MongoServerError && error.code === 26) return false
      throw error
    }
  }
}

function withUpsertId (filter: Filter, update: Update, id: string): Update {
  if (seedFromFilter(filter)._id !== undefined) return update
  const setOnInsert = (update.$setOnInsert ?? {}) as Record<string, unknown>
  return { ...update, $setOnInsert: { _id: id, ...setOnInsert } }
}

class MongoStore implements Store {
  readonly engine = 'mongodb' as const
  private closed = false
  // The driver always returns fresh documents, so a shared read is an ordinary one.
  readonly extensions: StoreExtensions = {
    shared: (name) => this.collection(name),
    now: async () => await this.serverTime()
  }

  constructor (private readonly client: MongoClient, private readonly db: Db, private readonly newId: IdGenerator) {}

  get database (): Db { return this.db }

  collection<T extends Document = Document> (name: string): StoreCollection<T> {
    return new MongoStoreCollection<T>(this.db.collection(name), this.newId)
  }

  async listCollections (): Promise<string[]> {
    const collections = await this.db.listCollections({}, { nameOnly: true }).toArray()
    return collections.map((c) => c.name).filter((name) => !name.startsWith('system.')).sort()
  }

  async dropCollection (name: string): Promise<boolean> {
    return await this.collection(name).drop()
  }

  /** One round trip: `hello` reports the clock of the server it ran on, the primary by default. */
  private async serverTime (): Promise<Date> {
    const reply = await this.db.command({ hello: 1 })
    if (!(reply.localTime instanceof Date)) throw new Error('The MongoDB server did not report its time (hello.localTime)')
    return reply.localTime
  }

  async ping (): Promise<void> {
    await this.db.command({ ping: 1 })
  }

  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.client.close()
  }
}

export async function openMongoStore (options: { url: string, db: string, newId?: IdGenerator }): Promise<Store> {
  const client = new MongoClient(options.url, { serverSelectionTimeoutMS: 5000, ignoreUndefined: true })
  await client.connect()
  return new MongoStore(client, client.db(options.db), options.newId ?? defaultNewId)
}

/** The driver's Db behind a MongoDB-engine Store, so GridFS shares its connection; null for any other engine. */
export function mongoDatabase (store: Store): Db | null {
  return store instanceof MongoStore ? store.database : null
}
