import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import type { Test } from 'tap'
import { ManualClock } from '../../../services/platform/clock.js'
import { Cursors } from '../../../services/collections/query.js'
import { SecretBox } from '../../../services/platform/crypto.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { JobQueue } from '../../../services/jobs/queue.js'
import { openSqliteStore } from '../../../services/store/sqlite/index.js'
import { openMongoStore } from '../../../services/store/mongodb.js'
import type { Store } from '../../../services/store/types.js'
import { parseWebhooksConfig } from '../../../services/webhooks/config.js'
import { buildWebhooks, type Webhooks } from '../../../services/webhooks/index.js'
import { MongoDouble } from '../../fixtures/mongo-double/server.js'
import { tempDir } from '../../helper.js'
import { drainDeliveries, PUBLIC_NAMES, resolver, thingSource } from './fixtures.js'

/** The engines a Store is opened on: the embedded file, and the MongoDB engine over the wire-level double. */
export const STORE_ENGINES = ['sqlite', 'mongodb'] as const
export type StoreEngine = typeof STORE_ENGINES[number]

/**
 * Opens `count` Stores on one set of data, each with its own connection (and,
 * on the embedded engine, its own document cache): what two API processes on
 * one DATA_DIR or one MongoDB database share. Closed when the test ends.
 */
export async function storesOnOneData (t: Test, engine: StoreEngine, clock: ManualClock, count: number): Promise<Store[]> {
  const newId = createIdGenerator(() => clock.nowMs())
  const stores: Store[] = []
  if (engine === 'sqlite') {
    const file = join(tempDir(t, 'plinth-shared-'), 'plinth.db')
    for (let i = 0; i < count; i++) stores.push(openSqliteStore({ file, newId, clock }))
  } else {
    const double = await new MongoDouble().start()
    t.teardown(async () => { await double.stop() })
    for (let i = 0; i < count; i++) stores.push(await openMongoStore({ url: double.url('serverSelectionTimeoutMS=1500'), db: 'shared', newId, clock }))
  }
  t.teardown(async () => { for (const store of stores) await store.close() })
  return stores
}

export interface Instance { webhooks: Webhooks, queue: JobQueue, store: Store, drain: () => Promise<number> }

/**
 * Two webhook engines as two app instances build them, each on its own
 * Store, job queue and subscription lists, over one set of data, with one
 * master key and one clock.
 */
export async function twoInstances (t: Test, engine: StoreEngine, env: Record<string, string> = {}): Promise<{ a: Instance, b: Instance, clock: ManualClock }> {
  const clock = new ManualClock(Date.UTC(2026, 0, 1))
  const key = randomBytes(32)
  const cursorKey = randomBytes(32)
  const instances: Instance[] = []
  for (const store of await storesOnOneData(t, engine, clock, 2)) {
    const newId = createIdGenerator(() => clock.nowMs())
    const queue = new JobQueue({ store, newId })
    await queue.init()
    const webhooks = await buildWebhooks({
      store,
      clock,
      newId,
      secrets: new SecretBox(key),
      cursors: new Cursors(cursorKey),
      jobs: queue,
      config: parseWebhooksConfig({ WEBHOOK_ALLOWED_HOSTS: '127.0.0.1', ...env }),
      random: () => 0.5,
      resolveAll: resolver(PUBLIC_NAMES)
    })
    webhooks.registerSource(thingSource())
    const drain = async (): Promise<number> => await drainDeliveries(webhooks, queue)
    instances.push({ webhooks, queue, store, drain })
  }
  return { a: instances[0], b: instances[1], clock }
}
