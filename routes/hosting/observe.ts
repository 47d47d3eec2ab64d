import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppParams, HostingResponses, HOSTING_LIMITS, TimelineQuery, UsageQuery } from '../../schemas/hosting.js'
import { ok } from '../replies.js'

/** A container app's metrics, timeline and usage. */
const observeRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { releases, timeline, traffic, driver } = app.hosting
  const tags = ['hosting']
  app.routeDefaults({ parent: 'app', permission: 'hosting.read' })

  app.get('/:appId/metrics', {
    schema: {
      operationId: 'getHostingAppMetrics',
      tags,
      summary: 'Requests, 4xx, 5xx and latency percentiles per app and instance, with CPU and memory',
      description: 'Counted by the gateway of this node since `since`; latencies over the most recent requests; ' +
        'CPU and memory as the driver reports them for the live deployment\'s instances (null where it cannot).',
      params: AppParams,
      response: HostingResponses.metrics
    }
  }, async (request) => {
    const record = request.scope.app
    const running = record.liveDeploymentId === null ? [] : await releases.live(record.liveDeploymentId)
    const stats = async (id: string) => await driver.stats(id).catch(() => null)
    const instances = await Promise.all(running.map(async (instance) => ({ id: instance._id, stats: await stats(instance._id) })))
    return ok(await traffic.metrics(record._id, instances))
  })

  app.get('/:appId/timeline', {
    schema: {
      operationId: 'getHostingAppTimeline',
      tags,
      summary: 'What happened to the app, newest first',
      description: 'State changes, deployments, scaling, suspensions, secrets (names only), hostnames and certificates; ' +
        `at most ${HOSTING_LIMITS.timelinePageMax}.`,
      params: AppParams,
      querystring: TimelineQuery,
      response: HostingResponses.timeline
    }
  }, async (request) => ok(await timeline.list(request.scope.app._id, request.query.limit ?? 50)))

  app.get('/:appId/usage', {
    schema: {
      operationId: 'getHostingAppUsage',
      tags,
      summary: 'Instance-seconds, build-seconds, requests and egress bytes by hour',
      description: 'Hours with any use, oldest first, over the last `hours` (24 unless given); ' +
        'counted in memory and written about once a minute.',
      params: AppParams,
      querystring: UsageQuery,
      response: HostingResponses.usage
    }
  }, async (request) => ok(await traffic.usageRows(request.scope.app._id, request.query.hours ?? 24)))
}

export default observeRoutes
