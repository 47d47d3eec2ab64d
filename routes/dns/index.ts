import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import zoneRoutes from './zones.js'
import recordRoutes from './records.js'
import providerRoutes from './providers.js'
import gatewayRoutes from './gateway.js'

/** `/api/projects/:projectId/dns/…`: zones, their records, providers and gateway instructions. */
const dnsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  await app.register(providerRoutes, { prefix: '/providers' })
  await app.register(zoneRoutes, { prefix: '/zones' })
  await app.register(recordRoutes, { prefix: '/records' })
  await app.register(gatewayRoutes, { prefix: '/gateway-instructions' })
}

export default dnsRoutes
