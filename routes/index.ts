import type { FastifyInstance } from 'fastify'
import healthRoutes from './health/index.js'
import authRoutes from './auth/index.js'

/**
 * The one place route families are mounted. A new family is one folder under
 * routes/ and one line here.
 */
export async function registerRoutes (app: FastifyInstance): Promise<void> {
  await app.register(healthRoutes)
  await app.register(authRoutes, { prefix: '/api/auth' })
}
