import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppParams, HostingResponses, HOSTING_LIMITS, TimelineQuery, UsageQuery } from '../../schemas/hosting.js'

/** A container app's metrics, timeline and usage. */
const observeRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { apps, releases, timeline, traffic, driver } = app.hosting
  const tags = ['hosting']
  const find = async (params: { projectId: string, appId: string }) => await apps.get(params.projectId, params.appId, 'container')

  app.get('/:appId/metrics', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.read'),
    schema: { operationId: 'getHostingAppMetrics', tags, summary: 'Requests, 4xx, 5xx and latency percentiles per app and instance, with CPU and memory', description: 'Needs `hosting.read`. Counted by the gateway of this node since `since`; latencies over the most recent requests; CPU and memory as the driver reports them for the live deployment\'s instances (null where it cannot).', params: AppParams, response: HostingResponses.metrics }
  }, async (request) => {
    const record = await find(request.params)
    const running = record.liveDeploymentId === null ? [] : await releases.live(record.liveDeploymentId)
    const instances = await Promise.all(running.map(async (instance) => ({ id: instance._id, stats: await driver.stats(instance._id).catch(() => null) })))
    return { success: true as const, data: await traffic.metrics(record._id, instances) }
  })

  app.get('/:appId/timeline', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.read'),
    schema: { operationId: 'getHostingAppTimeline', tags, summary: 'What happened to the app, newest first', description: `Needs \`hosting.read\`. State changes, deployments, scaling, suspensions, secrets (names only), hostnames and certificates; at most ${HOSTING_LIMITS.timelinePageMax}.`, params: AppParams, querystring: TimelineQuery, response: HostingResponses.timeline }
  }, async (request) => ({ success: true as const, data: await timeline.list((await find(request.params))._id, request.query.limit ?? 50) }))

  app.get('/:appId/usage', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('hosting.read'),
    schema: { operationId: 'getHostingAppUsage', tags, summary: 'Instance-seconds, build-seconds, requests and egress bytes by hour', description: 'Needs `hosting.read`. Hours with any use, oldest first, over the last `hours` (24 unless given); counted in memory and written about once a minute.', params: AppParams, querystring: UsageQuery, response: HostingResponses.usage }
  }, async (request) => ({ success: true as const, data: await traffic.usageRows((await find(request.params))._id, request.query.hours ?? 24) }))
}

export default observeRoutes
