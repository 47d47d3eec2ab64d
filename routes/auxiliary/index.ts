import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import scheduleRoutes from './schedules.js'
import webhookRoutes from './webhooks.js'
import variableRoutes from './variables.js'

/**
 * `/api/projects/:projectId/auxiliary/…`: the project's automation and
 * configuration (docs/auxiliary.md). Every route acts in the project as a
 * platform user; reads need `auxiliary.read`, changes `auxiliary.manage`.
 */
const auxiliaryRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.routeDefaults({ auth: 'platform', parent: 'project' })
  await app.register(webhookRoutes, { prefix: '/webhooks' })
  await app.register(variableRoutes, { prefix: '/variables' })
  await app.register(scheduleRoutes, { prefix: '/schedules' })
}

export default auxiliaryRoutes
