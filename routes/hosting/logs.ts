import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AppParams, HostingResponses, HOSTING_LIMITS, LogsQuery, type LogLineT } from '../../schemas/hosting.js'
import { toErrorReply } from '../../plugins/errors.js'
import { commonErrors } from '../../services/platform/errors.js'
import type { LogKind } from '../../services/hosting/logs.js'
import { ok } from '../replies.js'

const HEARTBEAT_MS = 15_000
/** The event that ends a followed log whose recent lines could not be read. */
const UNREADABLE = `event: error\ndata: ${JSON.stringify({
  success: false, code: commonErrors.internal.code, message: 'The log could not be read'
})}\n\n`

/**
 * Build and runtime logs. Read as a page in the envelope, or with
 * `follow=true` as Server-Sent Events: the recent lines, then every new one
 * as it is written, until the client goes away. The stream lives in its own
 * context: once it has started, a failure ends it with an SSE `error` event.
 */
const logRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { logs } = app.hosting
  const tags = ['hosting']
  app.routeDefaults({ parent: 'app', permission: 'hosting.read' })

  app.setErrorHandler((error: Error, request, reply) => {
    const { status, body, internal } = toErrorReply(error)
    if (internal) request.log.error({ err: error }, 'hosting logs request failed')
    if (reply.raw.headersSent) {
      reply.raw.end(`event: error\ndata: ${JSON.stringify(body)}\n\n`)
      return
    }
    return reply.code(status).send(body)
  })

  for (const kind of ['build', 'runtime'] as const satisfies LogKind[]) {
    app.get(`/:appId/logs/${kind}`, {
      schema: {
        operationId: kind === 'build' ? 'getHostingAppBuildLogs' : 'getHostingAppRuntimeLogs',
        tags,
        summary: kind === 'build' ? 'Build logs: one deployment\'s, or the newest lines of all' : 'Runtime logs of the app\'s instances',
        description: `Oldest first: the newest \`limit\` lines (at most ${HOSTING_LIMITS.logPageMax}), ` +
          'or those after the sequence number `after`; `deploymentId` narrows to one deployment. Secret values are masked. ' +
          'With `follow=true` the answer is `text/event-stream`: each line as a `log` event whose id is its `seq`, ' +
          `then new ones as they come, with a comment every ${HEARTBEAT_MS / 1000} s.`,
        params: AppParams,
        querystring: LogsQuery,
        response: HostingResponses.logs
      }
    }, async (request, reply) => {
      const record = request.scope.app
      const { follow, ...query } = request.query
      if (follow !== true) return ok(await logs.read(record._id, kind, query))
      const wanted = (line: { deploymentId: string }) => query.deploymentId === undefined || line.deploymentId === query.deploymentId
      const early: LogLineT[] = []
      let last = query.after ?? -1
      let live = false
      const send = (line: LogLineT): void => {
        if (line.seq <= last) return
        last = line.seq
        reply.raw.write(`id: ${line.seq}\nevent: log\ndata: ${JSON.stringify(line)}\n\n`)
      }
      const stop = logs.follow(record._id, kind, (line) => {
        if (!wanted(line)) return
        const { deploymentId: _ignored, ...view } = line
        if (live) send(view)
        else early.push(view)
      })
      reply.hijack()
      reply.raw.writeHead(200, {
        'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no'
      })
      reply.raw.write(': following\n\n')
      const heartbeat = setInterval(() => { reply.raw.write(': keep-alive\n\n') }, HEARTBEAT_MS).unref()
      const end = (): void => { stop(); clearInterval(heartbeat) }
      request.raw.once('close', end)
      reply.raw.once('close', end)
      try {
        for (const line of await logs.read(record._id, kind, query)) send(line)
      } catch (error) {
        request.log.error({ err: error }, 'reading logs to follow failed')
        reply.raw.write(UNREADABLE)
      }
      live = true
      for (const line of early) send(line)
      early.length = 0
      return reply
    })
  }
}

export default logRoutes
