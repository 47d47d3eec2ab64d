import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { checkReadiness, type Readiness } from '../services/health.js'
import { openStore, type Store } from '../services/store/index.js'

declare module 'fastify' {
  interface FastifyInstance {
    store: Store
    /** Whether the store answers, for the readiness probe (503 `storeUnavailable` when not). */
    readiness: () => Promise<Readiness>
  }
}

/** Opens the configured Store engine, answers whether it is ready, and closes it after the server has drained. */
async function storePlugin (app: FastifyInstance): Promise<void> {
  const store = await openStore(app.config)
  app.decorate('store', store)
  app.decorate('readiness', async () => await checkReadiness(store))
  app.addHook('onClose', async () => { await store.close() })
}

export default fp(storePlugin, { name: 'plinth-store', fastify: '5.x', dependencies: ['plinth-config'] })
