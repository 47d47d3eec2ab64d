import { ServerResponse, type IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import { downstreamHeaders } from './forwarding.js'
import type { Tally } from './metrics.js'
import { rawHead } from './pages.js'

/** The client side of an Upgrade request (a WebSocket, or any protocol switch): its socket and the bytes read past the head. */
export interface Tunnel {
  socket: Duplex
  early: Buffer
}

/**
 * A response written on an upgrading socket, for every Upgrade the gateway
 * answers itself (an unknown host, a suspended or static app, an upstream
 * that is down or declines the switch): the request is then answered as
 * any other, and the connection closed after it.
 */
export function responseOnSocket (req: IncomingMessage, socket: Duplex): ServerResponse {
  const res = new ServerResponse(req)
  res.shouldKeepAlive = false
  res.assignSocket(socket as never)
  res.once('finish', () => {
    res.detachSocket(socket as never)
    closeAfterFlush(socket)
  })
  return res
}

function closeAfterFlush (socket: Duplex): void {
  if (socket.destroyed) return
  if (socket.writableFinished) {
    socket.destroy()
    return
  }
  socket.once('finish', () => socket.destroy())
  socket.end()
}

/**
 * Joins the client's socket to the upstream's once the upstream has agreed
 * to switch protocols (101): the upstream's 101 head goes to the client
 * with the request id, then the bytes each side had already sent, then
 * everything, piped both ways until either side goes.
 */
export function openTunnel (tunnel: Tunnel, res: ServerResponse, upRes: IncomingMessage, upSocket: Duplex, upHead: Buffer, requestId: string, tally: Tally, open: Set<Duplex>): void {
  const { socket, early } = tunnel
  res.statusCode = 101
  tally.answeredAt = performance.now()
  socket.write(rawHead(101, upRes.statusMessage !== undefined && upRes.statusMessage !== '' ? upRes.statusMessage : 'Switching Protocols', downstreamHeaders(upRes.rawHeaders, requestId, true)))
  if (upHead.length > 0) {
    tally.bytesOut += upHead.length
    socket.write(upHead)
  }
  if (early.length > 0) upSocket.write(early)
  // A tunnel is as long-lived as its peers want; the upstream timeout applied only until the 101.
  ;(upSocket as Duplex & { setTimeout: (ms: number) => void }).setTimeout(0)
  upSocket.on('data', (chunk: Buffer) => { tally.bytesOut += chunk.length })
  open.add(socket)
  const fail = () => {
    socket.destroy()
    upSocket.destroy()
  }
  socket.on('error', fail)
  upSocket.on('error', fail)
  socket.once('close', () => {
    open.delete(socket)
    closeAfterFlush(upSocket)
  })
  upSocket.once('close', () => closeAfterFlush(socket))
  upSocket.pipe(socket)
  socket.pipe(upSocket)
}
