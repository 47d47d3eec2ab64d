import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Config } from '../config.js'
import type { IdGenerator } from '../ids.js'
import type { Store } from './types.js'
import { openSqliteStore } from './sqlite/index.js'
import { openMongoStore } from './mongodb.js'

export type * from './types.js'
export { DuplicateKeyError, QueryError, InvalidUpdateError } from './errors.js'

/** MongoDB when MONGODB_URL is set, otherwise the embedded SQLite file in DATA_DIR. */
export async function openStore (config: Pick<Config, 'dataDir' | 'mongodbUrl' | 'mongodbDb'> & Partial<Pick<Config, 'mongodbQueryTimeoutMs'>>, newId?: IdGenerator): Promise<Store> {
  if (config.mongodbUrl !== null) {
    return await openMongoStore({
      url: config.mongodbUrl,
      db: config.mongodbDb,
      ...(config.mongodbQueryTimeoutMs === undefined ? {} : { queryTimeoutMs: config.mongodbQueryTimeoutMs }),
      ...(newId === undefined ? {} : { newId })
    })
  }
  mkdirSync(config.dataDir, { recursive: true })
  return openSqliteStore({ file: join(config.dataDir, 'plinth.db'), ...(newId === undefined ? {} : { newId }) })
}
