import { MongoClient, MongoServerError, type Db } from 'mongodb'
import type { Document, SharedReads, Store, StoreCollection, StoreExtensions } from './types.js'
import { StoreUnavailableError } from './errors.js'
import { newId as defaultNewId, type IdGenerator } from '../ids.js'
import { ConfigError, DEFAULT_QUERY_TIMEOUT_MS } from '../config.js'
import { MongoStoreCollection, type Transact } from './mongo/collection.js'
import { clientOptions, deploymentProblem, type HelloAnswer } from './mongo/deployment.js'
import { translate } from './mongo/translate.js'
import { scanByQueries } from './scan.js'

/**
 * The production engine: the official driver, behind the same validators as
 * the embedded engine (services/store/semantics), with multi-document writes
 * in transactions, so what the conformance suite proves on SQLite holds here.
 */
class MongoStore implements Store {
  readonly engine = 'mongodb' as const
  private closed = false
  // The driver always returns fresh documents, so a shared read is an ordinary one.
  readonly extensions: StoreExtensions = {
    shared: (name) => this.sharedReads(name),
    now: async () => await this.serverTime()
  }

  constructor (private readonly client: MongoClient, private readonly db: Db, private readonly newId: IdGenerator, private readonly queryTimeoutMs: number) {}

  get database (): Db { return this.db }

  private sharedReads<T extends Document> (name: string): SharedReads<T> {
    const collection = this.collection<T>(name)
    return {
      findOne: async (filter) => await collection.findOne(filter),
      find: (filter, options) => collection.find(filter, options),
      scan: async (window, _filter, options) => await scanByQueries(collection, window, options)
    }
  }

  private readonly transact: Transact = async (work) => {
    const session = this.client.startSession()
    try {
      let result: Awaited<ReturnType<typeof work>> | undefined
      // withTransaction retries the work on transient errors (an election, a write conflict) and commits once.
      await session.withTransaction(async () => { result = await work(session) })
      return result as Awaited<ReturnType<typeof work>>
    } finally {
      await session.endSession()
    }
  }

  collection<T extends Document = Document> (name: string): StoreCollection<T> {
    return new MongoStoreCollection<T>(this.db.collection(name), this.newId, this.transact, this.queryTimeoutMs)
  }

  async listCollections (): Promise<string[]> {
    try {
      const collections = await this.db.listCollections({}, { nameOnly: true }).toArray()
      return collections.map((c) => c.name).filter((name) => !name.startsWith('system.')).sort()
    } catch (error) { translate(error, '') }
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
    if (this.closed) throw new StoreUnavailableError()
    try {
      await this.db.command({ ping: 1 })
    } catch (error) { translate(error, '') }
  }

  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.client.close()
  }
}

/** Connects and checks the deployment can serve Plinth (a replica set or sharded cluster, MongoDB ≥ 5.0); refuses otherwise. */
export async function openMongoStore (options: { url: string, db: string, newId?: IdGenerator, queryTimeoutMs?: number }): Promise<Store> {
  const client = new MongoClient(options.url, clientOptions(options.url))
  await client.connect()
  try {
    const hello = await client.db('admin').command({ hello: 1 }).catch((error: unknown) => {
      // Servers before 4.4.2 do not know `hello`.
      if (error instanceof MongoServerError && error.code === 59) return { maxWireVersion: 0 }
      throw error
    })
    const problem = deploymentProblem(hello as HelloAnswer)
    // A configuration error: the server prints it and exits with EX_CONFIG, as for a malformed variable.
    if (problem !== null) throw new ConfigError('MONGODB_URL', problem)
  } catch (error) {
    await client.close()
    throw error
  }
  return new MongoStore(client, client.db(options.db), options.newId ?? defaultNewId, options.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS)
}

/** The driver's Db behind a MongoDB-engine Store, so GridFS shares its connection; null for any other engine. */
export function mongoDatabase (store: Store): Db | null {
  return store instanceof MongoStore ? store.database : null
}
