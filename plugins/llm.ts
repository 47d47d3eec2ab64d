import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { systemClock } from '../services/platform/clock.js'
import { newId } from '../services/platform/ids.js'
import { buildLlmServices, LLM_RESEAL_EVERY_MS, LLM_RESEAL_JOB, type LlmServices } from '../services/llm/index.js'
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
 * settings with it, and re-seals keys left under a retired master key.
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
  app.registerJobHandler(LLM_RESEAL_JOB, async () => {
    const count = await llm.credentials.reseal()
    if (count > 0) app.log.info({ count }, 'LLM keys re-sealed under the current master key')
  })
  app.addHook('onReady', async () => {
    await app.jobs.schedule(LLM_RESEAL_JOB, LLM_RESEAL_EVERY_MS)
    // Started with a retired key, a node re-seals now rather than at the next scheduled run.
    if (app.config.retiredMasterKeys.length > 0) await app.jobs.enqueue(LLM_RESEAL_JOB)
  })
  app.decorate('llm', llm)
}

export default fp(llmPlugin, { name: 'plinth-llm', fastify: '5.x', dependencies: ['plinth-config', 'plinth-store', 'plinth-secrets', 'plinth-jobs', 'plinth-projects', 'plinth-orgs'] })
