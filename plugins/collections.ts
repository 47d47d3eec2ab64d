import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { systemClock } from '../services/platform/clock.js'
import { CollectionDefinitions } from '../services/collections/definitions.js'
import { WriteGate } from '../services/collections/write-gate.js'
import { collectionSchemas } from '../schemas/collection-definitions.js'

export interface CollectionServices {
  definitions: CollectionDefinitions
  /** Shared with every writer of records, so definition changes and record writes of a collection do not overlap. */
  writes: WriteGate
}

declare module 'fastify' {
  interface FastifyInstance {
    collections: CollectionServices
  }
}

/** Collection definitions of every project, and the shared schemas of the definition contract. */
async function collectionsPlugin (app: FastifyInstance): Promise<void> {
  const writes = new WriteGate()
  const definitions = new CollectionDefinitions(app.store, { clock: systemClock, writes })
  for (const schema of collectionSchemas) app.addSchema(schema)
  await definitions.init(app.log)
  app.projects.onDelete(async (projectId) => { await definitions.dropAllForProject(projectId) })
  app.projects.onAuthEnabled(async (projectId) => { await definitions.ensureUsersCollection(projectId) })
  app.decorate('collections', { definitions, writes })
}

export default fp(collectionsPlugin, { name: 'plinth-collections', fastify: '5.x', dependencies: ['plinth-store', 'plinth-projects'] })
