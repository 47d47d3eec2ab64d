import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { HealthResponses, ReadyResponses } from '../../schemas/health.js'
import { checkReadiness } from '../../services/health.js'

const healthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/healthz', {
    config: { auth: 'none' },
    schema: { operationId: 'getHealth', tags: ['health'], summary: 'Liveness: the process answers', description: 'The process is up. For liveness probes.', response: HealthResponses }
  }, async () => ({ success: true as const, data: { status: 'ok' as const, uptimeSeconds: Math.round(process.uptime()) } }))

  app.get('/readyz', {
    config: { auth: 'none' },
    schema: { operationId: 'getReadiness', tags: ['health'], summary: 'Readiness: the Store answers', description: 'The store answers (503 otherwise). For readiness probes and load balancers.', response: ReadyResponses }
  }, async () => ({ success: true as const, data: await checkReadiness(app.store) }))
}

export default healthRoutes
