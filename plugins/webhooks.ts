import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { sealedWebhookSecrets } from '../services/webhooks/subscriptions.js'
import { systemClock } from '../services/platform/clock.js'
import { Cursors } from '../services/collections/query.js'
import { newId } from '../services/platform/ids.js'
import {
  buildWebhooks, WEBHOOK_DELIVER_JOB, WEBHOOK_PRUNE_EVERY_MS, WEBHOOK_PRUNE_JOB, WEBHOOK_SWEEP_EVERY_MS, WEBHOOK_SWEEP_JOB, type Webhooks
} from '../services/webhooks/index.js'
import { webhookSchemas } from '../schemas/webhooks.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The one outbound webhook engine; families register as sources on it and publish from their outboxes (docs/webhooks.md). */
    webhooks: Webhooks
  }
}

/**
 * Outbound webhooks: builds the engine on the app's store, secret box and
 * job queue, runs its jobs (each delivery, the outbox sweep every minute,
 * the daily prune) and takes a deleted project's webhooks with it. The
 * families' plugins, registered after this one, register their sources.
 */
async function webhooksPlugin (app: FastifyInstance): Promise<void> {
  app.resealer.register(sealedWebhookSecrets)
  const webhooks = await buildWebhooks({
    store: app.store,
    clock: systemClock,
    newId,
    secrets: app.secrets,
    cursors: new Cursors(app.deriveSecretKey('webhooks:cursor')),
    jobs: app.jobs,
    config: app.config.webhooks,
    onDisabled: (notice) => { app.log.warn({ projectId: notice.projectId, source: notice.source, webhookId: notice.subscriptionId, reason: notice.reason }, 'webhook disabled after sustained failure') }
  })
  app.registerJobHandler(WEBHOOK_DELIVER_JOB, async (payload, { job }) => await webhooks.deliver(payload, job.leaseUntil === null ? 0 : job.leaseUntil.getTime() - job.updatedAt.getTime()))
  app.registerJobHandler(WEBHOOK_SWEEP_JOB, async () => await webhooks.sweep())
  app.registerJobHandler(WEBHOOK_PRUNE_JOB, async () => await webhooks.prune())
  app.projects.onDelete(async (projectId) => { await webhooks.purgeProject(projectId) })
  // onClose runs after the job worker stopped in preClose: no delivery is still using a kept connection.
  app.addHook('onClose', async () => { webhooks.close() })
  app.addHook('onReady', async () => {
    await app.jobs.schedule(WEBHOOK_SWEEP_JOB, WEBHOOK_SWEEP_EVERY_MS)
    await app.jobs.schedule(WEBHOOK_PRUNE_JOB, WEBHOOK_PRUNE_EVERY_MS)
  })
  for (const schema of webhookSchemas) app.addSchema(schema)
  app.decorate('webhooks', webhooks)
}

export default fp(webhooksPlugin, { name: 'plinth-webhooks', fastify: '5.x', dependencies: ['plinth-config', 'plinth-store', 'plinth-secrets', 'plinth-reseal', 'plinth-jobs', 'plinth-projects'] })
