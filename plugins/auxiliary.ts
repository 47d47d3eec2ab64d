import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { sealedVariables } from '../services/auxiliary/variables.js'
import { systemClock } from '../services/platform/clock.js'
import { Cursors } from '../services/collections/query.js'
import { newId } from '../services/platform/ids.js'
import { buildAuxiliaryServices, type AuxiliaryServices } from '../services/auxiliary/index.js'
import { RECORD_CHANGE_SETTLE_MS, RECORD_FEED_SETTLE_JOB } from '../services/auxiliary/record-feed.js'
import { auxiliaryErrors } from '../services/auxiliary/errors.js'
import { SCHEDULE_SLOT_JOB, SCHEDULES_TICK_EVERY_MS, SCHEDULES_TICK_JOB, sealedScheduleSecrets, type ScheduleRecord, type SlotPayload } from '../services/auxiliary/schedules.js'
import type { RunRecord } from '../services/auxiliary/schedule-runs.js'
import { webhookErrors } from '../services/webhooks/errors.js'
import type { SubscriptionRecord } from '../services/webhooks/index.js'
import { variableSchemas } from '../schemas/auxiliary-variables.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The auxiliary area: record webhooks on the record change feed, schedules, project variables (docs/auxiliary.md). */
    auxiliary: AuxiliaryServices
  }
}

declare module './permissions.js' {
  interface ParentKinds { recordWebhook: SubscriptionRecord, schedule: ScheduleRecord, scheduleRun: RunRecord }
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
  app.resealer.register(sealedVariables)
  app.resealer.register(sealedScheduleSecrets)
  const auxiliary = await buildAuxiliaryServices({
    store: app.store,
    clock: systemClock,
    newId,
    webhooks: app.webhooks,
    findCollection: async (projectId, name) => await app.collections.definitions.find(projectId, name),
    secrets: app.secrets,
    cursors: new Cursors(app.deriveSecretKey('auxiliary:cursor')),
    jobs: app.jobs,
    records: app.records,
    permissionsOf: async (projectId, userId) => {
      const project = await app.projects.findById(projectId)
      const access = project === null ? null : await app.orgs.resolver.access(project.orgId, { userId }, projectId)
      return access?.permissions ?? null
    },
    allowedHosts: app.config.webhooks.allowedHosts,
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
  app.registerParent('schedule', {
    within: 'project',
    errors: [auxiliaryErrors.scheduleNotFound],
    load: async (request, { scope }) => {
      const schedule = await auxiliary.schedules.find(scope.project.id, (request.params as { scheduleId: string }).scheduleId)
      if (schedule === null) throw auxiliaryErrors.scheduleNotFound()
      return { value: schedule }
    }
  })
  app.registerParent('scheduleRun', {
    within: 'schedule',
    errors: [auxiliaryErrors.scheduleRunNotFound],
    load: async (request, { scope }) => {
      const run = await auxiliary.scheduleRuns.find(scope.schedule._id, (request.params as { runId: string }).runId)
      if (run === null) throw auxiliaryErrors.scheduleRunNotFound()
      return { value: run }
    }
  })
  app.projects.onDelete(async (projectId) => {
    await auxiliary.feed.purgeProject(projectId)
    await auxiliary.schedules.purgeProject(projectId)
    await auxiliary.scheduleRuns.purgeProject(projectId)
    await auxiliary.variables.deleteAllForProject(projectId)
  })
  // The tick is one recurring job for the deployment; each slot it hands over is a job keyed by that slot.
  app.registerJobHandler(SCHEDULES_TICK_JOB, async () => await auxiliary.schedules.tick())
  app.registerJobHandler(SCHEDULE_SLOT_JOB, async (payload) => {
    const run = await auxiliary.scheduleRuns.runSlot(payload as SlotPayload)
    return run === null ? null : { runId: run._id, status: run.status }
  })
  // After a restart, what a killed process left pending goes out as soon as it is old enough to be
  // nobody's write under way, instead of at the engine's next sweep (up to a minute later).
  app.registerJobHandler(RECORD_FEED_SETTLE_JOB, async () => await auxiliary.feed.republish())
  app.addHook('onReady', async () => {
    await app.jobs.enqueue(RECORD_FEED_SETTLE_JOB, {}, { delayMs: RECORD_CHANGE_SETTLE_MS + 1000 })
    await app.jobs.schedule(SCHEDULES_TICK_JOB, SCHEDULES_TICK_EVERY_MS)
  })
  // Writes acknowledged before the close are published now rather than by the next start's sweep.
  app.addHook('preClose', async () => { await auxiliary.feed.settled() })
  app.decorate('auxiliary', auxiliary)
}

export default fp(auxiliaryPlugin, {
  name: 'plinth-auxiliary',
  fastify: '5.x',
  dependencies: ['plinth-config', 'plinth-store', 'plinth-secrets', 'plinth-reseal', 'plinth-jobs', 'plinth-orgs', 'plinth-projects', 'plinth-permissions', 'plinth-webhooks', 'plinth-collections', 'plinth-records', 'plinth-hosting']
})
