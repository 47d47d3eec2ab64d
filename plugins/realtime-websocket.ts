import fp from 'fastify-plugin'
import { ServerResponse, type IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import type { FastifyInstance } from 'fastify'
import { WebSocketServer, type WebSocket } from 'ws'
import type { StreamSink } from '../services/realtime/index.js'
import { takesUpgrade } from '../http/upgrade-requests.js'

/** The subprotocol a realtime WebSocket speaks: each message one JSON `{ id?, event, data }`, as the SSE frames. */
export const REALTIME_PROTOCOL = 'plinth.realtime'
/** A browser cannot set Authorization on a WebSocket: it may offer `plinth.bearer.<token>` as a subprotocol instead. */
const BEARER_PROTOCOL = 'plinth.bearer.'
// Clients send nothing on a realtime socket: anything more than a close is cut short.
const MOST_CLIENT_BYTES = 1024

interface PendingUpgrade { socket: Duplex, head: Buffer }

declare module 'fastify' {
  interface FastifyInstance {
    /**
     * For the realtime route: the WebSocket handshake waiting on this
     * request, or null for a plain (SSE) request. `accept` completes it once
     * the route has admitted the subscriber; `abandoned` runs instead when
     * the socket closes before the switch (a handshake ws refuses, a client
     * that hung up while it was being admitted), so the admission is undone.
     */
    realtimeUpgrade: (raw: IncomingMessage) => { accept: (started: (sink: StreamSink, closed: Promise<void>) => void, abandoned: () => void) => void } | null
  }
}

/**
 * The WebSocket transport of realtime streams (docs/realtime.md): an Upgrade
 * to the realtime path is routed through Fastify like any request, so the
 * same auth, schemas and subscription checks run and a refusal is answered in
 * the envelope before any switch; the route then completes the handshake and
 * hands the hub a sink that writes JSON messages instead of SSE frames.
 */
async function realtimeWebSocketPlugin (app: FastifyInstance): Promise<void> {
  const pending = new WeakMap<IncomingMessage, PendingUpgrade>()
  const server = new WebSocketServer({
    noServer: true,
    maxPayload: MOST_CLIENT_BYTES,
    clientTracking: false,
    handleProtocols: (protocols) => protocols.has(REALTIME_PROTOCOL) ? REALTIME_PROTOCOL : false
  })

  // Only the realtime handshake comes here: the server's request class (http/upgrade-requests.ts) has Node serve any
  // other Upgrade as a plain request. Without that class (an app built on other options), another is not served.
  app.server.on('upgrade', (raw: IncomingMessage, socket: Duplex, head: Buffer) => {
    socket.on('error', () => { socket.destroy() })
    if (!takesUpgrade(raw)) { socket.destroy(); return }
    const offered = (raw.headers['sec-websocket-protocol'] ?? '').split(',').map((protocol) => protocol.trim())
    const bearer = offered.find((protocol) => protocol.startsWith(BEARER_PROTOCOL))
    if (bearer !== undefined && raw.headers.authorization === undefined) raw.headers.authorization = `Bearer ${bearer.slice(BEARER_PROTOCOL.length)}`
    pending.set(raw, { socket, head })
    // Answered through Fastify like any request: a refusal is written to the socket as an HTTP answer, then it closes.
    const res = new ServerResponse(raw)
    res.shouldKeepAlive = false
    res.assignSocket(socket as never)
    res.once('finish', () => { if (pending.has(raw)) socket.end() })
    app.routing(raw, res)
  })

  app.decorate('realtimeUpgrade', (raw: IncomingMessage) => {
    const upgrade = pending.get(raw)
    if (upgrade === undefined) return null
    return {
      accept: (started, abandoned) => {
        pending.delete(raw)
        // ws answers a handshake it refuses (bad key or version, a HEAD) by closing the socket, and never calls back.
        if (upgrade.socket.destroyed) { abandoned(); return }
        upgrade.socket.once('close', abandoned)
        server.handleUpgrade(raw, upgrade.socket, upgrade.head, (socket: WebSocket) => {
          upgrade.socket.off('close', abandoned)
          // A peer that has answered none of the last two pings by the next beat is gone (or will not say): its slot is
          // freed. Two, not one: after this process stalled, the beat's timer runs before the pong waiting in the
          // socket is read, and a live peer would be cut for the server's own pause.
          let unanswered = 0
          socket.on('pong', () => { unanswered = 0 })
          const heartbeat = setInterval(() => {
            if (unanswered >= 2) { socket.terminate(); return }
            unanswered++
            socket.ping()
          }, app.config.realtime.heartbeatMs).unref()
          const closed = new Promise<void>((resolve) => {
            socket.once('close', () => { clearInterval(heartbeat); resolve() })
          })
          socket.on('error', () => { socket.terminate() })
          started({
            send: (event) => { socket.send(JSON.stringify(event)) },
            end: (event) => { socket.send(JSON.stringify(event)); socket.close(1000, String((event.data as { reason?: unknown }).reason ?? 'end')) }
          }, closed)
        })
      }
    }
  })
}

export default fp(realtimeWebSocketPlugin, { name: 'plinth-realtime-websocket', fastify: '5.x', dependencies: ['plinth-config'] })
