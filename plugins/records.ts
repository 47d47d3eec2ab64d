import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { systemClock } from '../services/platform/clock.js'
import { newId } from '../services/platform/ids.js'
import { Cursors } from '../services/collections/query.js'
import { Records } from '../services/collections/records.js'
import { recordSchemas } from '../schemas/records.js'

declare module 'fastify' {
  interface FastifyInstance {
    records: Records
  }
}

/** The records of every project's collections, under each collection's definition and rules. */
async function recordsPlugin (app: FastifyInstance): Promise<void> {
  const records = new Records(app.store, {
    clock: systemClock,
    newId,
    cursors: new Cursors(app.deriveSecretKey('records:cursor')),
    findCollection: (projectId, name) => app.collections.definitions.find(projectId, name),
    writes: app.collections.writes
  })
  for (const schema of recordSchemas) app.addSchema(schema)
  app.decorate('records', records)
}

export default fp(recordsPlugin, { name: 'plinth-records', fastify: '5.x', dependencies: ['plinth-store', 'plinth-secrets', 'plinth-collections'] })
