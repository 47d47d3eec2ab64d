import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { systemClock } from '../services/platform/clock.js'
import { buildRealtimeServices, REALTIME_LEASES_PRUNE_EVERY_MS, REALTIME_LEASES_PRUNE_JOB, type RealtimeServices } from '../services/realtime/index.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Realtime streams of record changes, fed by the record change feed (docs/realtime.md). */
    realtime: RealtimeServices
  }
}

/**
 * Realtime: builds the log and this process's hub, follows the record change
 * feed (so what is written here is logged for every process), reads the
 * shared log every REALTIME_POLL_MS for what other processes wrote, and
 * ends every stream when the server closes.
 */
async function realtimePlugin (app: FastifyInstance): Promise<void> {
  const { feed } = app.auxiliary
  const realtime = await buildRealtimeServices({
    store: app.store,
    clock: systemClock,
    storeClock: app.storeClock,
    findCollection: async (projectId, name) => await app.collections.definitions.find(projectId, name),
    config: app.config.realtime,
    arm: async (projectId) => { await feed.armRealtime(projectId) },
    armed: async (projectId) => await feed.armedForRealtime(projectId)
  })
  feed.onPublish(realtime.published)
  // A user deleted, disabled or signed out everywhere: their streams end now, on every process (the periodic recheck stays as the backstop).
  app.projectAuth.auth.onSessionsEnded(async (projectId, userIds) => {
    await realtime.sessionsEnded(projectId, userIds).catch((error: unknown) => { app.log.error({ err: error, projectId }, 'realtime: ending revoked users\' streams') })
  })
  app.projects.onDelete(async (projectId) => { await realtime.log.purgeProject(projectId) })
  // Leases of a process that died with streams open: they count for nothing once lapsed, and are deleted here.
  app.registerJobHandler(REALTIME_LEASES_PRUNE_JOB, async () => await realtime.leases.prune())
  let timer: NodeJS.Timeout | null = null
  let ticking = false
  app.addHook('onReady', async () => {
    timer = setInterval(() => {
      if (ticking) return
      ticking = true
      realtime.hub.tick().catch((error: unknown) => { app.log.error({ err: error }, 'realtime tick') }).finally(() => { ticking = false })
    }, app.config.realtime.pollMs)
    timer.unref()
    await app.jobs.schedule(REALTIME_LEASES_PRUNE_JOB, REALTIME_LEASES_PRUNE_EVERY_MS)
  })
  app.addHook('preClose', async () => {
    if (timer !== null) clearInterval(timer)
    await realtime.hub.shutdown()
  })
  app.decorate('realtime', realtime)
}

export default fp(realtimePlugin, {
  name: 'plinth-realtime',
  fastify: '5.x',
  dependencies: ['plinth-config', 'plinth-store', 'plinth-jobs', 'plinth-projects', 'plinth-collections', 'plinth-auxiliary', 'plinth-project-auth']
})
