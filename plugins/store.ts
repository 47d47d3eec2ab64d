import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { openStore, type Store } from '../services/store/index.js'

declare module 'fastify' {
  interface FastifyInstance {
    store: Store
  }
}

/** Opens the configured Store engine (waiting for MongoDB to answer, logging each retry) and closes it after the server has drained. */
async function storePlugin (app: FastifyInstance): Promise<void> {
  const store = await openStore(app.config, undefined, (retry) => { app.log.warn(retry, 'waiting for MongoDB (MONGODB_URL) to answer') })
  app.decorate('store', store)
  app.addHook('onClose', async () => { await store.close() })
}

export default fp(storePlugin, { name: 'plinth-store', fastify: '5.x', dependencies: ['plinth-config'] })
