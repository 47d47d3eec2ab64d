import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import zoneRoutes from './zones.js'
import recordRoutes from './records.js'
import providerRoutes from './providers.js'
import gatewayRoutes from './gateway.js'

/**
 * `/api/projects/:projectId/dns/…`: zones, their records, providers and
 * gateway instructions. Every route acts in the project as a platform user;
 * each names its permission, and a narrower parent where it has one.
 */
const dnsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.routeDefaults({ auth: 'platform', parent: 'project' })
  await app.register(providerRoutes, { prefix: '/providers' })
  await app.register(zoneRoutes, { prefix: '/zones' })
  await app.register(recordRoutes, { prefix: '/records' })
  await app.register(gatewayRoutes, { prefix: '/gateway-instructions' })
}

export default dnsRoutes
