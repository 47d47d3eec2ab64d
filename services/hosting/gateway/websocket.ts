import { ServerResponse, type IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import { downstreamHeaders } from './forwarding.js'
import type { Tally } from './metrics.js'
import { rawHead } from './pages.js'

/** Bytes a client may send past its Upgrade head before the upstream has agreed to switch; more closes the connection. */
const MOST_EARLY_BYTES = 64 * 1024

/**
 * The client side of an Upgrade request (a WebSocket, or any protocol
 * switch) until the upstream answers: its socket and the bytes it sent past
 * the head, held for the upstream. A client that closes meanwhile is gone.
 */
export class Tunnel {
  private readonly early: Buffer[] = []
  private earlyBytes = 0
  private readonly hold = (chunk: Buffer): void => {
    this.early.push(chunk)
    this.earlyBytes += chunk.length
    if (this.earlyBytes > MOST_EARLY_BYTES) this.socket.destroy()
  }

  // A socket that upgrades is left half-open by Node's server; reading it shows when the client leaves.
  private readonly leave = (): void => { this.socket.destroy() }

  constructor (readonly socket: Duplex, head: Buffer) {
    if (head.length > 0) this.hold(head)
    socket.on('data', this.hold)
    socket.once('end', this.leave)
  }

  /** Joins the two sockets once the upstream has agreed (101): its head and bytes to the client, the held bytes to it, then both ways. */
  open (res: ServerResponse, upRes: IncomingMessage, upSocket: Duplex, upHead: Buffer, requestId: string, tally: Tally, open: Set<Duplex>): void {
    const { socket } = this
    socket.off('data', this.hold)
    socket.off('end', this.leave)
    res.statusCode = 101
    tally.answeredAt = performance.now()
    const reason = upRes.statusMessage !== undefined && upRes.statusMessage !== '' ? upRes.statusMessage : 'Switching Protocols'
    socket.write(rawHead(101, reason, downstreamHeaders(upRes.rawHeaders, requestId, true)))
    if (upHead.length > 0) {
      tally.bytesOut += upHead.length
      socket.write(upHead)
    }
    for (const chunk of this.early) upSocket.write(chunk)
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
    // Half-closes pass through: the end of one side's bytes ends the other side's writing.
    upSocket.pipe(socket)
    socket.pipe(upSocket)
  }
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
  // The socket stays assigned, so the response's 'close' (which reports what was served) comes with the socket's.
  res.once('finish', () => closeAfterFlush(socket))
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
