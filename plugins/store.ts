import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { checkReadiness, type Readiness } from '../services/health/readiness.js'
import { openStore, type Store } from '../services/store/index.js'
import { StoreClock } from '../services/store/store-clock.js'

declare module 'fastify' {
  interface FastifyInstance {
    store: Store
    /** The Store's time as a synchronous clock (services/store/store-clock.ts), for what every node must judge alike. */
    storeClock: StoreClock
    /** Whether the store answers, for the readiness probe (503 `storeUnavailable` when not). */
    readiness: () => Promise<Readiness>
  }
}

/** Opens the configured Store engine (waiting for MongoDB to answer, logging each retry), answers whether it is ready, and closes it after the server has drained. */
async function storePlugin (app: FastifyInstance): Promise<void> {
  const store = await openStore(app.config, undefined, (retry) => { app.log.warn(retry, 'waiting for MongoDB (MONGODB_URL) to answer') })
  app.decorate('store', store)
  app.decorate('readiness', async () => await checkReadiness(store))
  app.addHook('onClose', async () => { await store.close() })
  const storeClock = new StoreClock(store)
  await storeClock.sync()
  app.decorate('storeClock', storeClock)
}

export default fp(storePlugin, { name: 'plinth-store', fastify: '5.x', dependencies: ['plinth-config'] })
