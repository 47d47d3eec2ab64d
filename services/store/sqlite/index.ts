import type { Document, Store, StoreCollection, StoreExtensions } from '../types.js'
import { newId as defaultNewId, type IdGenerator } from '../../platform/ids.js'
import { systemClock, type Clock } from '../../platform/clock.js'
import { SqliteCollection } from './collection.js'
import { Connection } from './connection.js'
import { SqliteTextIndex } from './text-index.js'
import { validateCollectionName } from '../semantics/names.js'
import { DEFAULT_SWEEP_PAGE_SIZE, pagedWrites } from '../sweep.js'

export interface SqliteStoreOptions {
  /** A file path (DATA_DIR/plinth.db) or ':memory:'. */
  file: string
  newId?: IdGenerator
  /** What `extensions.now()` answers; tests pass a manual clock. */
  clock?: Clock
  /** Documents per page of `extensions.sweep` (STORE_SWEEP_PAGE_SIZE). */
  sweepPageSize?: number
  /** How long a write waits for the file's write lock before StoreBusyError (STORE_BUSY_TIMEOUT_MS). */
  busyTimeoutMs?: number
  /** Hears why the file's checkpointer thread failed (checkpointer.ts); SQLite checkpoints inside commits from then on. */
  onCheckpointError?: (error: Error) => void
}

/**
 * The embedded engine: one SQLite file in WAL mode, one table of
 * JSON documents per collection, MongoDB's semantics for the Store subset.
 * Several processes may open the same file.
 */
class SqliteStore implements Store {
  readonly engine = 'sqlite' as const
  private readonly collections = new Map<string, SqliteCollection<any>>()
  readonly extensions: StoreExtensions = {
    shared: <T extends Document>(name: string) => this.engineCollection<T>(name).shared,
    sweep: (name: string) => pagedWrites(this.engineCollection(name), this.sweepPageSize, async () => await this.dropCollection(name)),
    now: async () => this.clock.now(),
    text: <T extends Document>(name: string) => {
      validateCollectionName(name)
      return new SqliteTextIndex<T>(this.connection, name)
    }
  }

  constructor (private readonly connection: Connection, private readonly newId: IdGenerator, private readonly clock: Clock, private readonly sweepPageSize: number) {}

  collection<T extends Document = Document> (name: string): StoreCollection<T> {
    return this.engineCollection<T>(name)
  }

  private engineCollection<T extends Document> (name: string): SqliteCollection<T> {
    let collection = this.collections.get(name)
    if (collection === undefined) {
      validateCollectionName(name)
      collection = new SqliteCollection<T>(name, this.connection, this.newId)
      this.collections.set(name, collection)
    }
    return collection
  }

  async listCollections (): Promise<string[]> {
    return this.connection.read(() => this.connection.collectionNames()).sort()
  }

  async dropCollection (name: string): Promise<boolean> {
    validateCollectionName(name)
    return await this.connection.writing(() => this.connection.write(() => this.connection.dropCollection(name), name))
  }

  async ping (): Promise<void> {
    this.connection.statement('SELECT 1').get()
  }

  async close (): Promise<void> {
    await this.connection.close()
  }
}

export function openSqliteStore (options: SqliteStoreOptions): Store {
  const connection = new Connection(options.file, {
    ...(options.busyTimeoutMs === undefined ? {} : { busyTimeoutMs: options.busyTimeoutMs }),
    ...(options.onCheckpointError === undefined ? {} : { checkpoints: { onError: options.onCheckpointError } })
  })
  return new SqliteStore(connection, options.newId ?? defaultNewId, options.clock ?? systemClock, options.sweepPageSize ?? DEFAULT_SWEEP_PAGE_SIZE)
}
