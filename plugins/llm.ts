import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { systemClock } from '../services/platform/clock.js'
import { newId } from '../services/platform/ids.js'
import { buildLlmServices, type LlmServices } from '../services/llm/index.js'
import { sealedLlmKeys } from '../services/llm/credentials.js'
import { llmSchemas } from '../schemas/llm.js'
import { llmUsageSchemas } from '../schemas/llm-usage.js'
import { Cursors } from '../services/collections/query.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** LLM credentials, settings and their one resolution, for the routes and the assistant (docs/llm.md). */
    llm: LlmServices
  }
}

/**
 * LLM configuration: builds the family's services on the app's store and
 * secret box, takes a deleted project's or organization's credentials and
 * settings with it, and declares its sealed keys for the re-seal job.
 */
async function llmPlugin (app: FastifyInstance): Promise<void> {
  const llm = await buildLlmServices({ store: app.store, clock: systemClock, newId, secrets: app.secrets, config: app.config.llm, cursors: new Cursors(app.deriveSecretKey('llm:cursor')) })
  for (const schema of [...llmSchemas, ...llmUsageSchemas]) app.addSchema(schema)
  app.projects.onDelete(async (projectId) => {
    await llm.credentials.deleteAllForProject(projectId)
    await llm.settings.deleteAllForProject(projectId)
    await llm.usage.deleteAllForProject(projectId)
  })
  app.orgs.organizations.onPurge(async (orgId) => {
    await llm.credentials.deleteAllForOrganization(orgId)
    await llm.settings.deleteAllForOrganization(orgId)
    await llm.usage.deleteAllForOrganization(orgId)
  })
  app.resealer.register(sealedLlmKeys)
  app.decorate('llm', llm)
}

export default fp(llmPlugin, { name: 'plinth-llm', fastify: '5.x', dependencies: ['plinth-config', 'plinth-store', 'plinth-secrets', 'plinth-reseal', 'plinth-projects', 'plinth-orgs'] })
