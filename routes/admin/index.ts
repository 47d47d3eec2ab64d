import type { FastifyPluginAsync } from 'fastify'
import backupRoutes from './backups.js'

/** `/api/admin/…`: the deployment's own operations, for platform administrators (PLATFORM_ADMINS) only. */
const adminRoutes: FastifyPluginAsync = async (app) => {
  app.routeDefaults({ auth: 'platformAdmin' })
  await app.register(backupRoutes, { prefix: '/backups' })
}

export default adminRoutes
