import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { RealtimeHeaders, RealtimeParams, RealtimeQuery, RealtimeResponses } from '../../schemas/realtime.js'
import { collectionErrors as c } from '../../services/collections/errors.js'
import type { DataCaller } from '../../services/collections/access.js'
import { commonErrors } from '../../services/platform/errors.js'
import { realtimeErrors } from '../../services/realtime/errors.js'
import { parseSubscriptionList, tokenExpiryMs, type StreamEvent } from '../../services/realtime/index.js'
import { optionalBearer } from '../../http/credentials.js'

function callerKey (caller: DataCaller, ip: string): string {
  if (caller.kind === 'user') return `user:${caller.id}`
  if (caller.kind === 'admin') return `admin:${caller.userId}`
  return `anonymous:${ip}`
}

function frame (event: StreamEvent): string {
  return `${event.id === undefined ? '' : `id: ${event.id}\n`}event: ${event.event}\ndata: ${JSON.stringify(event.data)}\n\n`
}

/**
 * `/api/p/:projectId/realtime`: record changes as Server-Sent Events (or
 * WebSocket messages, plugins/realtime-websocket.ts), each
 * judged by the caller's own get or list rule (docs/realtime.md). Refusals
 * come in the envelope before the stream starts; once it has, the stream
 * ends with an `end` event (credential expired or revoked, server closing).
 */
const realtimeRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { hub } = app.realtime
  const { maxSubscriptionsPerConnection, heartbeatMs } = app.config.realtime
  app.routeDefaults({ auth: 'data' })

  app.get('/', {
    config: {
      errors: [
        commonErrors.projectNotFound, c.collectionNotFound, c.methodDisabled, c.invalidFilter, commonErrors.forbidden,
        realtimeErrors.invalidSubscription, realtimeErrors.tooManySubscriptions, realtimeErrors.tooManyConnections
      ]
    },
    schema: {
      operationId: 'subscribeRealtime',
      tags: ['data'],
      summary: 'Follow record changes of collections or records as Server-Sent Events',
      description: 'Each subscription follows a collection (under its list rule) or one record (under its get rule), ' +
        'optionally narrowed by a filter. A `create`, `update` or `delete` event is sent only when the caller\'s rule ' +
        'lets it read the record, with the fields the rule denies left out. Reconnect with `Last-Event-ID` to get ' +
        'what was missed; a `gap` event says it is no longer kept. An expired or revoked credential ends the stream with an `end` event. ' +
        'The same URL answers a WebSocket handshake (subprotocol `plinth.realtime`; the token may come as the subprotocol ' +
        '`plinth.bearer.<token>`) with the same events as JSON messages.',
      params: RealtimeParams,
      querystring: RealtimeQuery,
      headers: RealtimeHeaders,
      response: RealtimeResponses.stream
    }
  }, async (request, reply) => {
    const { projectId } = request.params
    const caller = request.caller.data
    const connection = await hub.connect({
      projectId,
      caller,
      callerKey: callerKey(caller, request.ip),
      subscriptions: parseSubscriptionList(request.query.subscriptions, maxSubscriptionsPerConnection),
      lastEventId: request.headers['last-event-id'] ?? request.query.lastEventId,
      expiresAtMs: tokenExpiryMs(optionalBearer(request, 'project JWT or platform credential')),
      recheck: async () => await app.dataCaller(request)
    })
    reply.hijack()
    // A client gone while the stream was being set up has already closed: no listener below would ever hear it.
    if (request.raw.socket.destroyed) { connection.close(); return reply }
    const failed = (error: unknown): StreamEvent => {
      request.log.error({ err: error }, 'starting a realtime stream failed')
      connection.close()
      return { event: 'error', data: { success: false, code: commonErrors.internal.code, message: 'The stream could not be started; reconnect' } }
    }
    const upgrade = app.realtimeUpgrade(request.raw)
    if (upgrade !== null) {
      upgrade.accept((sink, closed) => {
        void closed.then(() => { connection.close() })
        connection.start(sink).catch((error: unknown) => { sink.end(failed(error)) })
      }, () => { connection.close() })
      return reply
    }
    reply.raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-accel-buffering': 'no'
    })
    const heartbeat = setInterval(() => { reply.raw.write(': keep-alive\n\n') }, heartbeatMs).unref()
    const leave = (): void => { clearInterval(heartbeat); connection.close() }
    request.raw.once('close', leave)
    reply.raw.once('close', leave)
    await connection.start({
      send: (event) => { reply.raw.write(frame(event)) },
      end: (event) => { reply.raw.end(frame(event)) }
    }).catch((error: unknown) => { reply.raw.end(frame(failed(error))) })
    return reply
  })
}

export default realtimeRoutes
