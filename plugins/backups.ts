import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { Cursors } from '../services/collections/query.js'
import { systemClock } from '../services/platform/clock.js'
import { newId } from '../services/platform/ids.js'
import { BACKUP_JOB, BACKUP_SCHEDULED_JOB, buildBackups, type Backups } from '../services/backup/index.js'
import { backupSchemas } from '../schemas/backups.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Backups of the deployment, for platform administrators (docs/operations.md, "Backups"). */
    backups: Backups
  }
}

/**
 * Backups through the API: the service on the app's store and queue, its
 * jobs on the long lane (an archive of a large deployment takes minutes),
 * and the recurring job when BACKUP_SCHEDULE is set, one for the deployment.
 */
async function backupsPlugin (app: FastifyInstance): Promise<void> {
  const { config } = app
  for (const schema of backupSchemas) app.addSchema(schema)
  const backups = await buildBackups({
    store: app.store,
    clock: systemClock,
    storeClock: app.storeClock,
    newId,
    cursors: new Cursors(app.deriveSecretKey('backups:cursor')),
    config: config.backup,
    sources: { dataDir: config.dataDir, reposDir: config.git.reposDir, hostingDir: config.hosting.dir, engine: config.mongodbUrl === null ? 'sqlite' : 'mongodb' },
    enqueue: async (type, payload) => await app.jobs.enqueue(type, payload)
  })
  app.decorate('backups', backups)
  app.registerJobHandler(BACKUP_JOB, async (payload, { signal }) => await backups.run(String(payload.backupId), signal), { lane: 'long' })
  app.registerJobHandler(BACKUP_SCHEDULED_JOB, async () => await backups.runScheduled(), { lane: 'long' })
  const every = config.backup.schedule
  app.addHook('onReady', async () => {
    if (every === null) await app.jobs.unschedule(BACKUP_SCHEDULED_JOB)
    else await app.jobs.schedule(BACKUP_SCHEDULED_JOB, every)
  })
}

export default fp(backupsPlugin, { name: 'plinth-backups', fastify: '5.x', dependencies: ['plinth-config', 'plinth-store', 'plinth-secrets', 'plinth-jobs'] })
