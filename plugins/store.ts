import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { checkReadiness, type Readiness } from '../services/health/readiness.js'
import { openStore, type Store } from '../services/store/index.js'
import { StoreClock } from '../services/store/store-clock.js'
import { timedStore, type StoreObserver } from '../services/store/timed.js'

declare module 'fastify' {
  interface FastifyInstance {
    store: Store
    /** The Store's time as a synchronous clock (services/store/store-clock.ts), for what every node must judge alike. */
    storeClock: StoreClock
    /** Whether the store answers, for the readiness probe (503 `storeUnavailable` when not). */
    readiness: () => Promise<Readiness>
    /** Where the Store's operation timings go (the metrics plugin); null when metrics are off, and the Store then runs untimed. */
    observeStore: ((observer: StoreObserver) => void) | null
  }
}

/** Opens the configured Store engine (waiting for MongoDB to answer, logging each retry and a failed SQLite checkpointer), answers whether it is ready, and closes it after the server has drained. */
async function storePlugin (app: FastifyInstance): Promise<void> {
  const opened = await openStore(app.config, undefined, {
    onRetry: (retry) => { app.log.warn(retry, 'waiting for MongoDB (MONGODB_URL) to answer') },
    onCheckpointError: (error) => { app.log.error({ err: error }, 'the SQLite checkpointer thread failed: checkpoints run inside commits from now on') }
  })
  // Timed only when metrics are on: the Store is the hottest code, and without metrics nothing wraps it.
  const { token, listen } = app.config.metrics
  let observer: StoreObserver | null = null
  const store = token === null && listen === null ? opened : timedStore(opened, (operation, seconds) => { observer?.(operation, seconds) })
  app.decorate('store', store)
  app.decorate('observeStore', store === opened ? null : (next: StoreObserver) => { observer = next })
  app.decorate('readiness', async () => await checkReadiness(store))
  app.addHook('onClose', async () => { await store.close() })
  const storeClock = new StoreClock(store)
  await storeClock.sync()
  app.decorate('storeClock', storeClock)
}

export default fp(storePlugin, { name: 'plinth-store', fastify: '5.x', dependencies: ['plinth-config'] })
