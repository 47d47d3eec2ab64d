import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../config.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Store } from './types.js'
import { openSqliteStore } from './sqlite/index.js'
import { openMongoStore } from './mongodb.js'
import type { ConnectOptions } from './mongo/connect.js'

export type * from './types.js'
export { DuplicateKeyError, QueryError, InvalidUpdateError } from './errors.js'

type StoreConfig = Pick<Config, 'dataDir' | 'mongodbUrl' | 'mongodbDb'> & Partial<Pick<Config, 'mongodbQueryTimeoutMs' | 'mongodbConnectTimeoutSeconds' | 'storeSweepPageSize' | 'storeBusyTimeoutMs'>>

/** What the opener hears of the engine's troubles that it logs rather than throws. */
export interface StoreEvents {
  /** Each failed attempt to reach MongoDB at start. */
  onRetry?: ConnectOptions['onRetry']
  /** SQLite's checkpointer thread failed: SQLite checkpoints inside commits again (services/store/sqlite/checkpointer.ts). */
  onCheckpointError?: (error: Error) => void
}

/** MongoDB when MONGODB_URL is set, otherwise the embedded SQLite file in DATA_DIR. */
export async function openStore (config: StoreConfig, newId?: IdGenerator, { onRetry, onCheckpointError }: StoreEvents = {}): Promise<Store> {
  const sweep = config.storeSweepPageSize === undefined ? {} : { sweepPageSize: config.storeSweepPageSize }
  if (config.mongodbUrl !== null) {
    return await openMongoStore({
      url: config.mongodbUrl,
      db: config.mongodbDb,
      ...(config.mongodbQueryTimeoutMs === undefined ? {} : { queryTimeoutMs: config.mongodbQueryTimeoutMs }),
      ...(config.mongodbConnectTimeoutSeconds === undefined ? {} : { connectTimeoutMs: config.mongodbConnectTimeoutSeconds * 1000 }),
      ...(newId === undefined ? {} : { newId }),
      ...(onRetry === undefined ? {} : { onRetry }),
      ...sweep
    })
  }
  mkdirSync(config.dataDir, { recursive: true })
  const busy = config.storeBusyTimeoutMs === undefined ? {} : { busyTimeoutMs: config.storeBusyTimeoutMs }
  const events = onCheckpointError === undefined ? {} : { onCheckpointError }
  return openSqliteStore({ file: join(config.dataDir, 'plinth.db'), ...(newId === undefined ? {} : { newId }), ...sweep, ...busy, ...events })
}
