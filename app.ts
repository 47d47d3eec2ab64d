import Fastify, { type FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { Config } from './services/config.js'
import { fastifyOptions, type PlinthServerOptions } from './options.js'
import configPlugin from './plugins/config.js'
import errorsPlugin from './plugins/errors.js'
import metricsPlugin from './plugins/metrics.js'
import auditPlugin from './plugins/audit.js'
import storePlugin from './plugins/store.js'
import swaggerPlugin from './plugins/swagger.js'
import secretsPlugin from './plugins/secrets.js'
import jobsPlugin from './plugins/jobs.js'
import resealPlugin from './plugins/reseal.js'
import webhooksPlugin from './plugins/webhooks.js'
import authPlugin from './plugins/auth.js'
import projectsPlugin from './plugins/projects.js'
import orgsPlugin from './plugins/orgs.js'
import permissionsPlugin from './plugins/permissions.js'
import collectionsPlugin from './plugins/collections.js'
import recordsPlugin from './plugins/records.js'
import projectAuthPlugin from './plugins/project-auth.js'
import dataCallerPlugin from './plugins/data-caller.js'
import filesPlugin from './plugins/files.js'
import gitPlugin from './plugins/git.js'
import gitMergeRequestsPlugin from './plugins/git-merge-requests.js'
import projectArchivesPlugin from './plugins/project-archives.js'
import dnsPlugin from './plugins/dns.js'
import llmPlugin from './plugins/llm.js'
import auxiliaryPlugin from './plugins/auxiliary.js'
import realtimePlugin from './plugins/realtime.js'
import realtimeWebSocketPlugin from './plugins/realtime-websocket.js'
import assistantPlugin from './plugins/assistant.js'
import hostingPlugin from './plugins/hosting.js'
import trackerPlugin from './plugins/tracker.js'
import toolsPlugin from './plugins/tools.js'
import corsPlugin from './plugins/cors.js'
import backupsPlugin from './plugins/backups.js'
import routeAuthPlugin from './plugins/route-auth.js'
import fastJsonPlugin from './plugins/fast-json.js'
import consolePlugin from './plugins/console.js'
import { registerRoutes } from './routes/index.js'

/**
 * The app as a plugin: cross-cutting plugins first, then the route families.
 * A plugin's `dependencies` name only plugins above it, and it reads no
 * decorator of a plugin below it; wiring that must flow the other way goes
 * through a hook list of the earlier plugin (`projects.onDelete`).
 * Not encapsulated, so its decorators, shared schemas and error handler reach
 * whatever is registered beside it (tests' probe routes, bench fixtures).
 */
async function plinthApp (app: FastifyInstance, options: { config: Config }): Promise<void> {
  await app.register(configPlugin, { config: options.config })
  await app.register(errorsPlugin)
  await app.register(swaggerPlugin)
  await app.register(secretsPlugin)
  await app.register(storePlugin)
  await app.register(jobsPlugin)
  await app.register(resealPlugin)
  await app.register(metricsPlugin)
  await app.register(authPlugin)
  await app.register(projectsPlugin)
  await app.register(webhooksPlugin)
  await app.register(orgsPlugin)
  await app.register(permissionsPlugin)
  await app.register(collectionsPlugin)
  await app.register(recordsPlugin)
  await app.register(projectAuthPlugin)
  await app.register(dataCallerPlugin)
  await app.register(filesPlugin)
  await app.register(gitPlugin)
  await app.register(gitMergeRequestsPlugin)
  await app.register(dnsPlugin)
  await app.register(hostingPlugin)
  await app.register(projectArchivesPlugin)
  await app.register(trackerPlugin)
  await app.register(toolsPlugin)
  await app.register(llmPlugin)
  await app.register(auxiliaryPlugin)
  await app.register(realtimeWebSocketPlugin)
  await app.register(realtimePlugin)
  await app.register(assistantPlugin)
  await app.register(backupsPlugin)
  await app.register(corsPlugin)
  await app.register(routeAuthPlugin)
  await app.register(auditPlugin)
  await app.register(fastJsonPlugin)
  await app.register(consolePlugin)
  await registerRoutes(app)
}

export const plinth = fp(plinthApp, { name: 'plinth', fastify: '5.x' })

/** The one app factory, used by the server, the tests, the benchmarks and the OpenAPI generator. */
export async function buildApp (config: Config, overrides: Partial<PlinthServerOptions> = {}) {
  const app = Fastify(fastifyOptions(config, overrides)).withTypeProvider<TypeBoxTypeProvider>()
  await app.register(plinth, { config })
  return app
}
