import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { HealthResponses } from '../../schemas/health.js'
import { commonErrors } from '../../services/platform/errors.js'
import { ok } from '../replies.js'

const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const tags = ['health']

  app.get('/healthz', {
    config: { auth: 'none' },
    schema: {
      operationId: 'getHealth',
      tags,
      summary: 'Liveness: the process answers',
      description: 'The process is up. For liveness probes.',
      response: HealthResponses.live
    }
  }, async () => ok({ status: 'ok' as const, uptimeSeconds: Math.round(process.uptime()) }))

  app.get('/readyz', {
    config: { auth: 'none', errors: [commonErrors.storeUnavailable] },
    schema: {
      operationId: 'getReadiness',
      tags,
      summary: 'Readiness: the Store answers',
      description: 'The store answers. For readiness probes and load balancers.',
      response: HealthResponses.ready
    }
  }, async () => ok(await app.readiness()))
}

export default healthRoutes
