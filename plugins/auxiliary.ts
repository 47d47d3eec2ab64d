import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { systemClock } from '../services/platform/clock.js'
import { newId } from '../services/platform/ids.js'
import { buildAuxiliaryServices, type AuxiliaryServices } from '../services/auxiliary/index.js'
import { RECORD_CHANGE_SETTLE_MS, RECORD_FEED_SETTLE_JOB } from '../services/auxiliary/record-feed.js'
import { webhookErrors } from '../services/webhooks/errors.js'
import type { SubscriptionRecord } from '../services/webhooks/index.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The auxiliary area: record webhooks on the record change feed (docs/auxiliary.md). */
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
 * project, and takes a deleted project's feed with it.
 */
async function auxiliaryPlugin (app: FastifyInstance): Promise<void> {
  const auxiliary = await buildAuxiliaryServices({
    store: app.store,
    clock: systemClock,
    newId,
    webhooks: app.webhooks,
    findCollection: async (projectId, name) => await app.collections.definitions.find(projectId, name)
  })
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
  app.projects.onDelete(async (projectId) => { await auxiliary.feed.purgeProject(projectId) })
  // After a restart, what a killed process left pending goes out as soon as it is old enough to be
  // nobody's write under way, instead of at the engine's next sweep (up to a minute later).
  app.registerJobHandler(RECORD_FEED_SETTLE_JOB, async () => await auxiliary.feed.republish())
  app.addHook('onReady', async () => {
    await app.jobs.enqueue(RECORD_FEED_SETTLE_JOB, {}, { delayMs: RECORD_CHANGE_SETTLE_MS + 1000 })
  })
  app.decorate('auxiliary', auxiliary)
}

export default fp(auxiliaryPlugin, {
  name: 'plinth-auxiliary',
  fastify: '5.x',
  dependencies: ['plinth-store', 'plinth-projects', 'plinth-permissions', 'plinth-webhooks', 'plinth-collections', 'plinth-records']
})
