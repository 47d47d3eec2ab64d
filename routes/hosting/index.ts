import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { hostingErrors } from '../../services/hosting/errors.js'
import appRoutes from './apps.js'
import deploymentRoutes from './deployments.js'
import sourceUploadRoutes from './source-uploads.js'
import secretRoutes from './secrets.js'
import observeRoutes from './observe.js'
import logRoutes from './logs.js'
import hostnameRoutes from './hostnames.js'

/**
 * `/api/projects/:projectId/backend/…`: container apps, static apps, their
 * deployments, secrets, logs and metrics. Every route acts in the project as
 * a platform user; under `:appId` the app (`app` or `staticApp`) is the parent.
 */
const hostingRoutes: FastifyPluginAsyncTypebox = async (app) => {
  app.routeDefaults({ auth: 'platform', parent: 'project', errors: [hostingErrors.disabled] })
  if (!app.hosting.enabled) app.addHook('onRequest', async () => { throw hostingErrors.disabled() })
  await app.register(appRoutes)
  for (const [prefix, kind] of [['/apps', 'container'], ['/static-apps', 'static']] as const) {
    await app.register(deploymentRoutes, { prefix, kind })
    await app.register(sourceUploadRoutes, { prefix, kind })
    for (const alias of ['hostnames', 'domains'] as const) await app.register(hostnameRoutes, { prefix, kind, alias })
  }
  await app.register(secretRoutes, { prefix: '/apps' })
  await app.register(observeRoutes, { prefix: '/apps' })
  await app.register(logRoutes, { prefix: '/apps' })
}

export default hostingRoutes
