import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { systemClock } from '../services/clock.js'
import { Cursors } from '../services/collections/query.js'
import { newId } from '../services/ids.js'
import { buildAuxiliaryServices, type AuxiliaryServices } from '../services/auxiliary/index.js'
import { RECORD_CHANGE_SETTLE_MS, RECORD_FEED_SETTLE_JOB } from '../services/auxiliary/record-feed.js'
import { webhookErrors } from '../services/webhooks/errors.js'
import type { SubscriptionRecord } from '../services/webhooks/index.js'
import { variableSchemas } from '../schemas/auxiliary-variables.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The auxiliary area: record webhooks on the record change feed, project variables (docs/auxiliary.md). */
    auxiliary: AuxiliaryServices
  }
}

declare module './permissions.js' {
  interface ParentKinds { recordWebhook: SubscriptionRecord }
}

function webhookIdIn (request: FastifyRequest): string {
  return (request.params as { webhookId: string }).webhookId
}

/**
 * The auxiliary area: builds its services, registers record webhooks as the
 * engine's `records` source and feeds it from every record write of an armed
 * project, hands hosting the project variables its deployments take, and
 * takes a deleted project's feed and variables with it.
 */
async function auxiliaryPlugin (app: FastifyInstance): Promise<void> {
  const auxiliary = await buildAuxiliaryServices({
    store: app.store,
    clock: systemClock,
    newId,
    webhooks: app.webhooks,
    findCollection: async (projectId, name) => await app.collections.definitions.find(projectId, name),
    box: app.secrets,
    cursors: new Cursors(app.deriveSecretKey('auxiliary:cursor')),
    variablesChanged: async (projectId, change) => {
      // The change is made; a timeline that cannot be written is logged, not the change's failure.
      await app.hosting.projectEnvironment.changed(projectId, change).catch((error: unknown) => { app.log.error({ err: error }, 'auxiliary variables') })
    }
  })
  for (const schema of variableSchemas) app.addSchema(schema)
  app.hosting.projectEnvironment.use(auxiliary.variables)
  app.webhooks.registerSource(auxiliary.recordWebhooks.source)
  app.records.useChangeFeed(auxiliary.feed)
  app.registerParent('recordWebhook', {
    within: 'project',
    errors: [webhookErrors.webhookNotFound],
    load: async (request, { scope }) => {
      const webhook = await auxiliary.recordWebhooks.find(scope.project.id, webhookIdIn(request))
      if (webhook === null) throw webhookErrors.webhookNotFound()
      return { value: webhook }
    }
  })
  app.projects.onDelete(async (projectId) => {
    await auxiliary.feed.purgeProject(projectId)
    await auxiliary.variables.deleteAllForProject(projectId)
  })
  // After a restart, what a killed process left pending goes out as soon as it is old enough to be
  // nobody's write under way, instead of at the engine's next sweep (up to a minute later).
  app.registerJobHandler(RECORD_FEED_SETTLE_JOB, async () => await auxiliary.feed.republish())
  app.addHook('onReady', async () => {
    await app.jobs.enqueue(RECORD_FEED_SETTLE_JOB, {}, { delayMs: RECORD_CHANGE_SETTLE_MS + 1000 })
  })
  // Writes acknowledged before the close are published now rather than by the next start's sweep.
  app.addHook('preClose', async () => { await auxiliary.feed.settled() })
  app.decorate('auxiliary', auxiliary)
}

export default fp(auxiliaryPlugin, {
  name: 'plinth-auxiliary',
  fastify: '5.x',
  dependencies: ['plinth-store', 'plinth-projects', 'plinth-permissions', 'plinth-webhooks', 'plinth-collections', 'plinth-records', 'plinth-secrets', 'plinth-hosting']
})
