import { MongoError, type ClientSession, type Db, type MongoClient } from 'mongodb'
import type { Document, SharedReads, Store, StoreCollection, StoreExtensions, TextIndexSpec } from './types.js'
import { StoreUnavailableError } from './errors.js'
import { newId as defaultNewId, type IdGenerator } from '../platform/ids.js'
import { DEFAULT_QUERY_TIMEOUT_MS } from '../platform/server-config.js'
import type { Clock } from '../platform/clock.js'
import { MongoStoreCollection, type Transact } from './mongo/collection.js'
import { connectWhenReachable, type ConnectOptions } from './mongo/connect.js'
import { translate } from './mongo/translate.js'
import { MongoTextIndex } from './mongo/text-index.js'
import { validateCollectionName } from './semantics/names.js'
import { scanByQueries } from './scan.js'
import { untimed } from './timed.js'
import { DEFAULT_SWEEP_PAGE_SIZE, pagedWrites } from './sweep.js'

const TRANSACTION_ATTEMPTS = 3

async function commit (session: ClientSession): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await session.commitTransaction()
      return
    } catch (error) {
      if (attempt < TRANSACTION_ATTEMPTS && error instanceof MongoError && error.hasErrorLabel('UnknownTransactionCommitResult')) continue
      throw error
    }
  }
}

/**
 * The production engine: the official driver, behind the same validators as
 * the embedded engine (services/store/semantics), with multi-document writes
 * in transactions, so what the conformance suite proves on SQLite holds here.
 * Every driver call goes through the one error translation (mongo/translate.ts).
 */
class MongoStore implements Store {
  readonly engine = 'mongodb' as const
  private closed = false
  /** Each collection's text index spec, for the text index instances `extensions.text` makes. */
  private readonly textSpecs = new Map<string, TextIndexSpec>()
  // The driver always returns fresh documents, so a shared read is an ordinary one.
  readonly extensions: StoreExtensions = {
    shared: (name) => this.sharedReads(name),
    sweep: (name) => pagedWrites(this.collection(name), this.sweepPageSize, async () => await this.dropCollection(name)),
    now: async () => await this.serverTime(),
    text: <T extends Document>(name: string) => {
      validateCollectionName(name)
      return new MongoTextIndex<T>(this.db.collection(name), this.db, { maxTimeMS: this.options.queryTimeoutMs }, this.textSpecs)
    }
  }

  constructor (
    private readonly client: MongoClient,
    private readonly db: Db,
    private readonly options: { newId: IdGenerator, queryTimeoutMs: number, sweepPageSize: number, clock: Clock | null }
  ) {}

  get database (): Db { return this.db }

  private get sweepPageSize (): number { return this.options.sweepPageSize }

  private sharedReads<T extends Document> (name: string): SharedReads<T> {
    const collection = this.collection<T>(name)
    return {
      findOne: async (filter) => await collection.findOne(filter),
      find: (filter, options) => collection.find(filter, options),
      scan: async (window, _filter, options) => await scanByQueries(collection, window, options)
    }
  }

  /**
   * Runs `work` in one transaction, tried again (from the start) at most
   * TRANSACTION_ATTEMPTS times on an error the server labels transient (an
   * election, a write conflict); a commit whose outcome is unknown is
   * committed again. The driver's withTransaction would keep retrying for
   * 120 s, holding a request that long in an outage; past these attempts the
   * error is translated (a 503 with Retry-After), and each attempt already
   * waits up to the server-selection timeout for a primary.
   */
  private readonly transact: Transact = async (work) => {
    const session = this.client.startSession()
    try {
      for (let attempt = 1; ; attempt++) {
        session.startTransaction()
        try {
          const result = await work(session)
          await commit(session)
          return result
        } catch (error) {
          if (session.inTransaction()) await session.abortTransaction().catch(() => {})
          if (attempt < TRANSACTION_ATTEMPTS && error instanceof MongoError && error.hasErrorLabel('TransientTransactionError')) continue
          throw error
        }
      }
    } finally {
      await session.endSession()
    }
  }

  collection<T extends Document = Document> (name: string): StoreCollection<T> {
    validateCollectionName(name)
    return new MongoStoreCollection<T>(this.db.collection(name), this.options.newId, this.transact, this.options.queryTimeoutMs)
  }

  async listCollections (): Promise<string[]> {
    try {
      const collections = await this.db.listCollections({}, { nameOnly: true }).toArray()
      return collections.map((c) => c.name).filter((name) => !name.startsWith('system.')).sort()
    } catch (error) { translate(error, '', 'query') }
  }

  async dropCollection (name: string): Promise<boolean> {
    return await this.collection(name).drop()
  }

  /**
   * One round trip: `hello` reports the clock of the server it ran on, the
   * primary on a replica set. On a sharded cluster it is the clock of the
   * mongos the driver picked, so every mongos is assumed to keep NTP time
   * (docs/store.md). Tests may pass a clock, which is answered instead.
   */
  private async serverTime (): Promise<Date> {
    if (this.options.clock !== null) return this.options.clock.now()
    let reply: Document
    try {
      reply = await this.db.command({ hello: 1 })
    } catch (error) { translate(error, '', 'query') }
    if (!(reply.localTime instanceof Date)) throw new Error('The MongoDB server did not report its time (hello.localTime)')
    return reply.localTime
  }

  async ping (): Promise<void> {
    if (this.closed) throw new StoreUnavailableError()
    try {
      await this.db.command({ ping: 1 })
    } catch (error) { translate(error, '', 'query') }
  }

  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.client.close()
  }
}

export interface MongoStoreOptions extends ConnectOptions {
  url: string
  db: string
  newId?: IdGenerator
  queryTimeoutMs?: number
  /** Documents per page of `extensions.sweep` (STORE_SWEEP_PAGE_SIZE). */
  sweepPageSize?: number
  /** Answered by `extensions.now()` instead of the server's clock: for tests that move time. */
  clock?: Clock
}

/**
 * Connects once the deployment answers (waiting up to `connectTimeoutMs`,
 * logging each retry) and checks it can serve Plinth (a replica set or a
 * sharded cluster, MongoDB ≥ 5.0); refuses otherwise (mongo/connect.ts).
 */
export async function openMongoStore (options: MongoStoreOptions): Promise<Store> {
  const client = await connectWhenReachable(options.url, options)
  return new MongoStore(client, client.db(options.db), {
    newId: options.newId ?? defaultNewId,
    queryTimeoutMs: options.queryTimeoutMs ?? DEFAULT_QUERY_TIMEOUT_MS,
    sweepPageSize: options.sweepPageSize ?? DEFAULT_SWEEP_PAGE_SIZE,
    clock: options.clock ?? null
  })
}

/** The driver's Db behind a MongoDB-engine Store, so GridFS shares its connection; null for any other engine. */
export function mongoDatabase (store: Store): Db | null {
  const engine = untimed(store)
  return engine instanceof MongoStore ? engine.database : null
}
