import { createServer, type Server } from 'node:http'
import { once } from 'node:events'
import { timingSafeEqual, createHash } from 'node:crypto'
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { PlatformMetrics } from '../services/metrics/registry.js'
import { commonErrors } from '../services/platform/errors.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** The Prometheus metrics when METRICS_TOKEN or METRICS_LISTEN is set, else null (docs/operations.md, "Metrics"). */
    metrics: { registry: PlatformMetrics, listener: Server | null } | null
  }
}

const digest = (value: string): Buffer => createHash('sha256').update(value).digest()

/**
 * Prometheus metrics, off unless asked for: every answered request is timed
 * by its route's template, and a scrape reads the job queue and the process.
 * `/metrics` on the API port takes METRICS_TOKEN as a bearer; METRICS_LISTEN
 * opens a second listener that serves only `/metrics`, with no token.
 */
async function metricsPlugin (app: FastifyInstance): Promise<void> {
  const { token, listen } = app.config.metrics
  if (token === null && listen === null) {
    app.decorate('metrics', null)
    return
  }
  const registry = new PlatformMetrics({ jobs: async () => await app.jobs.backlog() })
  const engine = app.store.engine
  app.observeStore?.((operation, seconds) => { registry.storeOperation(engine, operation, seconds) })
  app.addHook('onResponse', async (request, reply) => {
    registry.request(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000)
  })

  if (token !== null) {
    const expected = digest(`Bearer ${token}`)
    app.get('/metrics', { config: { auth: 'none' }, schema: { hide: true } }, async (request, reply) => {
      // Compared as digests: equal lengths, and no timing of how much of the token matched.
      if (!timingSafeEqual(digest(request.headers.authorization ?? ''), expected)) {
        void reply.header('www-authenticate', 'Bearer realm="metrics"')
        throw commonErrors.unauthorized({ why: 'Scraping /metrics needs METRICS_TOKEN as a bearer token' })
      }
      const { contentType, body } = await registry.text()
      return await reply.type(contentType).header('cache-control', 'no-store').send(body)
    })
  }

  let listener: Server | null = null
  if (listen !== null) {
    listener = createServer((request, response) => {
      if (request.method !== 'GET' || request.url?.split('?')[0] !== '/metrics') {
        response.writeHead(404, { 'content-type': 'text/plain' }).end('Only GET /metrics is served here\n')
        return
      }
      registry.text().then(({ contentType, body }) => {
        response.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' }).end(body)
      }, (error: unknown) => {
        app.log.error({ err: error }, 'metrics scrape failed')
        response.writeHead(500, { 'content-type': 'text/plain' }).end('The scrape failed; the server log says why\n')
      })
    })
    const server = listener
    app.addHook('onReady', async () => {
      // Only the cluster's lead listens here: bound in this process (services/platform/cluster.ts).
      server.listen({ port: listen.port, host: listen.host, exclusive: true })
      await once(server, 'listening')
    })
    app.addHook('onClose', async () => {
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => { resolve() }))
    })
  }
  app.decorate('metrics', { registry, listener })
}

export default fp(metricsPlugin, { name: 'plinth-metrics', fastify: '5.x', dependencies: ['plinth-config', 'plinth-errors', 'plinth-store', 'plinth-jobs'] })
