import { maxHeaderSize } from 'node:http'
import { connect, type Socket } from 'node:net'
import type { Readable } from 'node:stream'
import type { Upstream } from '../routing.js'
import { BoundedMap } from '../../cache/bounded-map.js'
import { UpstreamProtocolError, UpstreamReader, type AnswerSink } from './upstream-reader.js'
import { UpstreamTimeoutError } from './upstreams.js'

/** Upstreams whose connections are kept; past this, one's idle connections are closed and made again when needed. */
const UPSTREAMS_KEPT = 4096
/** Idle connections kept per upstream; more are closed as their answers end. */
const IDLE_KEPT = 256
/** Idle connections are dropped before Node's default 5 s server keep-alive would close them under a request. */
const IDLE_MS = 4_000
/** An upstream's own Keep-Alive timeout is shortened by this much, so the gateway lets go first. */
const HINT_MARGIN_MS = 1_000

/** The upstream closed a connection before it sent a byte of its answer: nothing of the request was answered. */
export class UpstreamClosedError extends Error {
  readonly code = 'UPSTREAM_CLOSED'
  constructor () {
    super('the upstream closed the connection before answering')
  }
}

export interface UpstreamRequest {
  /** The request line and header lines, each ending in CRLF, then the empty line. */
  head: string
  /** The client's body, streamed as it arrives; null when there is none. */
  body: Readable | null
  /** The body has no Content-Length and goes in chunks. */
  chunked: boolean
  /** A HEAD request: its answer has no body, whatever its headers say. */
  headRequest: boolean
  /** Idempotent and without a body: it may be sent again on a new connection when a kept-alive one fails unanswered. */
  mayResend: boolean
}

export interface AnswerHandler extends AnswerSink {
  fail: (error: Error) => void
}

/** The request and its upstream connection, from the first byte written to the end of the answer. */
export class UpstreamCall {
  private readonly reader: UpstreamReader
  private finished = false
  private bodySent: boolean
  private readonly stopBody: () => void = () => {}

  constructor (private connection: Connection, private readonly request: UpstreamRequest, private readonly handler: AnswerHandler, private readonly timeoutMs: number) {
    this.reader = new UpstreamReader(handler, request.headRequest, maxHeaderSize)
    this.bodySent = request.body === null
    const { socket } = connection
    connection.call = this
    if (request.body === null) {
      socket.write(request.head, 'latin1')
      return
    }
    // The head waits for the body's first bytes, which usually came in the same read, so both go in one write.
    socket.cork()
    socket.write(request.head, 'latin1')
    process.nextTick(() => socket.uncork())
    // An answer that ends before the body does settles the call at once (the connection is dropped), so the body's end comes to a call still waiting.
    this.stopBody = streamBody(request.body, socket, request.chunked, () => { this.bodySent = true })
  }

  /** The client went: the connection, mid-request, cannot be used again. */
  cancel (): void {
    if (this.finished) return
    this.end()
    this.connection.socket.destroy()
  }

  /** The client caught up with an answer it was falling behind on. */
  resume (): void {
    if (this.finished) return
    this.connection.socket.setTimeout(this.timeoutMs)
    this.connection.socket.resume()
  }

  data (chunk: Buffer): void {
    let paused: boolean
    try {
      paused = this.reader.push(chunk)
    } catch (error) {
      this.fail(error as Error)
      return
    }
    if (this.reader.done) this.settle()
    else if (paused && !this.finished) {
      // The client is slow, not the upstream: no timeout while the answer waits for it.
      this.connection.socket.setTimeout(0)
      this.connection.socket.pause()
    }
  }

  timedOut (): void {
    this.fail(new UpstreamTimeoutError(this.timeoutMs))
  }

  /** The upstream ended its side. */
  closed (): void {
    try {
      this.reader.close()
    } catch (error) {
      this.fail(this.reader.received ? error as Error : new UpstreamClosedError())
      return
    }
    this.settle()
  }

  fail (error: Error): void {
    if (this.finished) return
    if (this.connection.reused && !this.reader.received && this.request.mayResend && !(error instanceof UpstreamTimeoutError)) {
      // A kept-alive connection the upstream was closing as it was reused (its idle timeout, a restart): once more, on a new one.
      this.connection.call = null
      this.connection.socket.destroy()
      this.connection = this.connection.pool.open()
      this.connection.call = this
      this.connection.socket.write(this.request.head, 'latin1')
      return
    }
    this.end()
    this.connection.socket.destroy()
    // Whatever happens after the first byte of an answer is the answer's fault, never a reason to ask again.
    this.handler.fail(this.reader.received && !(error instanceof UpstreamProtocolError) && !(error instanceof UpstreamTimeoutError) ? new UpstreamProtocolError(error.message) : error)
  }

  private end (): void {
    this.finished = true
    this.connection.call = null
    this.stopBody()
  }

  /** The answer has ended: the connection goes back to its pool when nothing is left on it either way. */
  private settle (): void {
    if (this.finished) return
    if (!this.bodySent) {
      // Answered before the whole request was sent: the rest of the body would be read as the next request.
      this.end()
      this.connection.socket.destroy()
      return
    }
    this.end()
    const { keepAliveMs } = this.reader
    const idleMs = keepAliveMs === null ? IDLE_MS : Math.min(IDLE_MS, keepAliveMs - HINT_MARGIN_MS)
    if (this.reader.reusable && idleMs > 0) this.connection.pool.release(this.connection, idleMs)
    else this.connection.socket.destroy()
  }
}

/** Pipes a client's body to the upstream socket with back-pressure; returns how to stop. */
function streamBody (body: Readable, socket: Socket, chunked: boolean, sent: () => void): () => void {
  const resume = () => body.resume()
  const onData = (chunk: Buffer) => {
    // An empty chunk would end a chunked body.
    if (chunk.length === 0) return
    let flushed: boolean
    if (chunked) {
      socket.cork()
      socket.write(`${chunk.length.toString(16)}\r\n`, 'latin1')
      socket.write(chunk)
      flushed = socket.write('\r\n', 'latin1')
      socket.uncork()
    } else {
      flushed = socket.write(chunk)
    }
    if (!flushed) {
      body.pause()
      socket.once('drain', resume)
    }
  }
  const onEnd = () => {
    if (chunked) socket.write('0\r\n\r\n', 'latin1')
    sent()
  }
  body.on('data', onData)
  body.once('end', onEnd)
  return () => {
    body.off('data', onData)
    body.off('end', onEnd)
    socket.off('drain', resume)
  }
}

/** One socket to an upstream and the call on it, if any; its listeners are set once, for its whole life. */
class Connection {
  call: UpstreamCall | null = null
  /** When an idle connection stops being offered (performance.now()). */
  usableUntil = 0
  /** It has carried a request before. */
  reused = false

  constructor (readonly socket: Socket, readonly pool: UpstreamPool, timeoutMs: number) {
    socket.setNoDelay(true)
    // Set once: reads and writes restart it, so during a call it measures the upstream's silence; an idle connection
    // that outlives it is closed. Idle connections are not offered past their idle time (see UpstreamPool.take).
    socket.setTimeout(timeoutMs)
    // Bytes while idle were asked for by no request: the connection is not to be trusted.
    socket.on('data', (chunk: Buffer) => { if (this.call === null) socket.destroy(); else this.call.data(chunk) })
    socket.on('end', () => { if (this.call === null) socket.destroy(); else this.call.closed() })
    socket.on('timeout', () => { if (this.call === null) socket.destroy(); else this.call.timedOut() })
    socket.on('error', (error) => this.call?.fail(error))
    socket.on('close', () => {
      pool.forget(this)
      this.call?.fail(new UpstreamClosedError())
    })
  }
}

/** An upstream's kept-alive connections: the most recently used idle one is taken first, so the others can time out. */
class UpstreamPool {
  private readonly idle: Connection[] = []
  private readonly all = new Set<Connection>()
  private closed = false

  constructor (private readonly host: string, private readonly port: number, private readonly timeoutMs: number) {}

  take (): Connection {
    const now = performance.now()
    let connection = this.idle.pop()
    // A connection destroyed since it was released is still listed until its 'close' comes; one idle too long may be
    // closing on the upstream's side. The ones below, idle longer still, go as the upstream or the timeout closes them.
    while (connection !== undefined && (connection.socket.destroyed || connection.usableUntil < now)) {
      connection.socket.destroy()
      connection = this.idle.pop()
    }
    if (connection !== undefined) return connection
    return this.open()
  }

  /** A new connection, never one kept. */
  open (): Connection {
    const fresh = new Connection(connect({ host: this.host, port: this.port }), this, this.timeoutMs)
    this.all.add(fresh)
    return fresh
  }

  release (connection: Connection, idleMs: number): void {
    if (this.closed) {
      connection.socket.destroy()
      return
    }
    connection.usableUntil = performance.now() + idleMs
    connection.reused = true
    this.idle.push(connection)
    if (this.idle.length > IDLE_KEPT) this.idle.shift()?.socket.destroy()
  }

  forget (connection: Connection): void {
    this.all.delete(connection)
    const at = this.idle.indexOf(connection)
    if (at !== -1) this.idle.splice(at, 1)
  }

  /** Idle connections close now; busy ones when their answers end (or at once, when `now`). */
  close (now: boolean): void {
    this.closed = true
    for (const connection of now ? [...this.all] : this.idle.splice(0)) connection.socket.destroy()
  }
}

/**
 * The gateway's connections to app instances: HTTP/1.1 over plain sockets,
 * kept alive per upstream, one request at a time on each. The request
 * head goes in one write; the answer is read by `UpstreamReader`. The
 * client side stays on node:http's server, whose parser decides where each
 * client request begins and ends.
 */
export class UpstreamConnections {
  private readonly pools = new BoundedMap<string, UpstreamPool>(UPSTREAMS_KEPT, (_key, pool) => {
    this.open.delete(pool)
    pool.close(false)
  })

  private readonly open = new Set<UpstreamPool>()

  constructor (private readonly timeoutMs: number) {}

  send (upstream: Upstream, request: UpstreamRequest, handler: AnswerHandler): UpstreamCall {
    const key = `${upstream.host}:${upstream.port}`
    let pool = this.pools.get(key)
    if (pool === undefined) {
      pool = new UpstreamPool(upstream.host, upstream.port, this.timeoutMs)
      this.pools.set(key, pool)
      this.open.add(pool)
    }
    return new UpstreamCall(pool.take(), request, handler, this.timeoutMs)
  }

  destroy (): void {
    for (const pool of this.open) pool.close(true)
    this.open.clear()
    this.pools.clear()
  }
}

/** The head of a request to an upstream, from raw header pairs the gateway has checked (node:http's parser let no CR or LF through). */
export function requestHead (method: string, target: string, headers: string[]): string {
  let head = `${method} ${target} HTTP/1.1\r\n`
  for (let i = 0; i < headers.length; i += 2) head += `${headers[i]}: ${headers[i + 1]}\r\n`
  return head + '\r\n'
}
