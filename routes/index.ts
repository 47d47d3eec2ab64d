import type { FastifyInstance } from 'fastify'
import healthRoutes from './health/index.js'
import authRoutes from './auth/index.js'
import permissionRoutes from './permissions/index.js'
import organizationRoutes from './organizations/index.js'
import projectRoutes from './projects/index.js'
import { projectExportRoutes, projectImportRoutes } from './projects/archives.js'
import projectAuthRoutes from './project-auth/index.js'
import collectionDefinitionRoutes from './collections/definitions.js'
import dataRoutes from './data/index.js'
import realtimeRoutes from './realtime/index.js'
import gitRoutes from './git/index.js'
import smartHttpRoutes from './git/smart-http.js'
import dnsRoutes from './dns/index.js'
import hostingRoutes from './hosting/index.js'
import trackerRoutes from './tracker/index.js'
import llmRoutes from './llm/index.js'
import llmUsageRoutes from './llm/usage.js'
import auxiliaryRoutes from './auxiliary/index.js'
import assistantRoutes from './assistant/index.js'
import adminRoutes from './admin/index.js'

/**
 * The one place route families are mounted. A new family is one folder under
 * routes/ and one line here.
 */
export async function registerRoutes (app: FastifyInstance): Promise<void> {
  await app.register(healthRoutes)
  await app.register(authRoutes, { prefix: '/api/auth' })
  await app.register(permissionRoutes, { prefix: '/api/permissions' })
  await app.register(organizationRoutes, { prefix: '/api/organizations' })
  await app.register(projectRoutes, { prefix: '/api/projects' })
  await app.register(projectExportRoutes, { prefix: '/api/projects/:projectId/export' })
  await app.register(projectImportRoutes, { prefix: '/api/organizations/:orgId/projects' })
  await app.register(collectionDefinitionRoutes, { prefix: '/api/projects/:projectId/collections' })
  await app.register(projectAuthRoutes, { prefix: '/api/p/:projectId/auth' })
  await app.register(realtimeRoutes, { prefix: '/api/p/:projectId/realtime' })
  await app.register(dataRoutes, { prefix: '/api/p/:projectId' })
  await app.register(gitRoutes, { prefix: '/api/projects/:projectId/git' })
  await app.register(smartHttpRoutes, { prefix: '/git' })
  await app.register(dnsRoutes, { prefix: '/api/projects/:projectId/dns' })
  await app.register(hostingRoutes, { prefix: '/api/projects/:projectId/backend' })
  await app.register(trackerRoutes, { prefix: '/api/projects/:projectId/tracker' })
  await app.register(auxiliaryRoutes, { prefix: '/api/projects/:projectId/auxiliary' })
  await app.register(assistantRoutes, { prefix: '/api/projects/:projectId/assistant' })
  await app.register(llmRoutes, { prefix: '/api/organizations/:orgId', level: 'organization' })
  await app.register(llmRoutes, { prefix: '/api/projects/:projectId', level: 'project' })
  await app.register(llmUsageRoutes, { prefix: '/api/organizations/:orgId', level: 'organization' })
  await app.register(llmUsageRoutes, { prefix: '/api/projects/:projectId', level: 'project' })
  await app.register(adminRoutes, { prefix: '/api/admin' })
}
