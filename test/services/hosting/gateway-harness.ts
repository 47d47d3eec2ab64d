import { createHash } from 'node:crypto'
import { createServer, request, type IncomingHttpHeaders, type IncomingMessage, type RequestListener, type Server } from 'node:http'
import { connect, type AddressInfo, type Socket } from 'node:net'
import type { Test } from 'tap'
import { Gateway, type GatewayDeps } from '../../../services/hosting/gateway/gateway.js'
import type { Route, RouteTable, ServedRequest } from '../../../services/hosting/routing.js'
import { createIdGenerator } from '../../../services/platform/ids.js'

/**
 * A route table the tests write to, as the orchestration will: a map from
 * host to route, read by the gateway on every request.
 */
export class TestRoutes implements RouteTable {
  readonly byHost = new Map<string, Route>()
  resolve (host: string): Route | null {
    return this.byHost.get(host) ?? null
  }

  set (host: string, route: Route): void {
    this.byHost.set(host, route)
  }
}

/** What the gateway reported serving; records are written as responses close, just after a client has its answer. */
export class ServedLog {
  readonly entries: ServedRequest[] = []
  private readonly waiting: Array<{ count: number, resolve: () => void }> = []

  record (entry: ServedRequest): void {
    this.entries.push(entry)
    for (const waiter of this.waiting.filter((w) => this.entries.length >= w.count)) {
      this.waiting.splice(this.waiting.indexOf(waiter), 1)
      waiter.resolve()
    }
  }

  async atLeast (count: number): Promise<ServedRequest[]> {
    if (this.entries.length < count) await new Promise<void>((resolve) => this.waiting.push({ count, resolve }))
    return this.entries
  }
}

export interface Harness {
  gateway: Gateway
  routes: TestRoutes
  served: ServedLog
  certificates: Map<string, { key: string, cert: string }>
  challenges: Map<string, string>
  port: number
  tlsPort: number | null
}

export type GatewayOptions = { tls?: boolean } & Pick<GatewayDeps, 'upstreamTimeoutMs' | 'connectionLimits' | 'descriptorLimit' | 'clientTimeouts' | 'log'>

export async function startGateway (t: Test, options: GatewayOptions = {}): Promise<Harness> {
  const routes = new TestRoutes()
  const served = new ServedLog()
  const certificates = new Map<string, { key: string, cert: string }>()
  const challenges = new Map<string, string>()
  const deps: GatewayDeps = {
    routes,
    served,
    certificates: { certificateFor: (host) => certificates.get(host) ?? null },
    challenges: { keyAuthorization: (token) => challenges.get(token) ?? null },
    newId: createIdGenerator(),
    upstreamTimeoutMs: options.upstreamTimeoutMs,
    connectionLimits: options.connectionLimits,
    descriptorLimit: options.descriptorLimit,
    clientTimeouts: options.clientTimeouts,
    log: options.log
  }
  const gateway = new Gateway(deps)
  await gateway.listen({ port: 0, host: '127.0.0.1', ...(options.tls === true ? { tlsPort: 0 } : {}) })
  t.teardown(async () => await gateway.close())
  const addresses = gateway.addresses()
  return { gateway, routes, served, certificates, challenges, port: (addresses.http as AddressInfo).port, tlsPort: addresses.https?.port ?? null }
}

export interface TestUpstream {
  server: Server
  port: number
  instanceId: string
  /** The upstream in the shape the route table holds. */
  upstream: { instanceId: string, host: string, port: number }
  close: () => Promise<void>
}

/** A real app instance: a node:http server on a free loopback port, closed with the test. */
export async function startUpstream (t: Test, instanceId: string, handler: RequestListener): Promise<TestUpstream> {
  const server = createServer(handler)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  // Upgraded sockets leave the server's own bookkeeping, so every connection is tracked here to be cut on close.
  const sockets = new Set<Socket>()
  server.on('connection', (socket: Socket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
  })
  let closed = false
  const close = async () => {
    if (closed) return
    closed = true
    for (const socket of sockets) socket.destroy()
    await new Promise<void>((resolve) => server.close(() => resolve()))
  }
  t.teardown(close)
  return { server, port, instanceId, upstream: { instanceId, host: '127.0.0.1', port }, close }
}

/** An upstream that answers every request with what it saw, as JSON. */
export async function echoUpstream (t: Test, instanceId: string): Promise<TestUpstream> {
  return await startUpstream(t, instanceId, (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', (chunk: Buffer) => chunks.push(chunk))
    req.on('end', () => {
      const body = JSON.stringify({ instanceId, method: req.method, url: req.url, headers: req.headers, rawHeaders: req.rawHeaders, body: Buffer.concat(chunks).toString() })
      res.writeHead(200, { 'content-type': 'application/json', 'x-instance': instanceId })
      res.end(body)
    })
  })
}

export function appRoute (appId: string, upstreams: TestUpstream[], extra: { suspended?: boolean } = {}): Route {
  return { kind: 'app', appId, projectId: 'proj1', suspended: extra.suspended ?? false, upstreams: upstreams.map((u) => u.upstream) }
}

export interface Answer { status: number, headers: IncomingHttpHeaders, rawHeaders: string[], body: string }

/** A real HTTP request to the gateway on a fresh connection; `host` is the Host header sent. */
export async function ask (port: number, host: string, path = '/', options: { method?: string, headers?: Record<string, string | string[]>, body?: string | Buffer } = {}): Promise<Answer> {
  return await new Promise<Answer>((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers: { host, ...options.headers }, agent: false }, (res: IncomingMessage) => {
      const chunks: Buffer[] = []
      res.on('data', (chunk: Buffer) => chunks.push(chunk))
      res.on('end', () => resolve({ status: res.statusCode as number, headers: res.headers, rawHeaders: res.rawHeaders, body: Buffer.concat(chunks).toString() }))
      res.on('error', reject)
    })
    req.on('error', reject)
    req.end(options.body)
  })
}

/** Writes `text` on a raw TCP connection and collects everything until the server closes it (or `until` holds). */
export async function raw (port: number, text: string | Buffer, until?: (received: Buffer) => boolean): Promise<{ received: Buffer, socket: Socket }> {
  return await new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => socket.write(text))
    let received = Buffer.alloc(0)
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk])
      if (until?.(received) === true) resolve({ received, socket })
    })
    socket.on('error', reject)
    socket.on('close', () => resolve({ received, socket }))
  })
}

// WebSocket framing (RFC 6455), enough for the tests: single unfragmented frames under 126 bytes.
export const WS_GUID = '258EAFA5-E914-47DA-95CA-C5AB0DC85B11'
export const acceptFor = (key: string) => createHash('sha1').update(key + WS_GUID).digest('base64')

export function clientFrame (text: string): Buffer {
  const payload = Buffer.from(text)
  const mask = Buffer.from([1, 2, 3, 4])
  const masked = Buffer.from(payload.map((byte, i) => byte ^ mask[i % 4]))
  return Buffer.concat([Buffer.from([0x81, 0x80 | payload.length]), mask, masked])
}

export function serverFrame (text: string): Buffer {
  const payload = Buffer.from(text)
  return Buffer.concat([Buffer.from([0x81, payload.length]), payload])
}

/** The text frames in `buffer`, masked or not, and the bytes left over. */
export function readFrames (buffer: Buffer): { texts: string[], rest: Buffer } {
  const texts: string[] = []
  let offset = 0
  while (buffer.length - offset >= 2) {
    const masked = (buffer[offset + 1] & 0x80) !== 0
    const length = buffer[offset + 1] & 0x7f
    const start = offset + 2 + (masked ? 4 : 0)
    if (buffer.length < start + length) break
    const payload = Buffer.from(buffer.subarray(start, start + length))
    if (masked) for (let i = 0; i < payload.length; i++) payload[i] ^= buffer[offset + 2 + (i % 4)]
    texts.push(payload.toString())
    offset = start + length
  }
  return { texts, rest: buffer.subarray(offset) }
}

/** An app that upgrades to WebSocket: greets with a frame sent with its 101, then echoes each text frame as `echo:<text>`. */
export async function webSocketUpstream (t: Test, instanceId: string): Promise<TestUpstream & { seen: IncomingHttpHeaders[], closed: Promise<void> }> {
  const upstream = await startUpstream(t, instanceId, (req, res) => res.end(`plain answer from ${instanceId}`))
  const seen: IncomingHttpHeaders[] = []
  const sockets = new Set<Socket>()
  let closedOne!: () => void
  const closed = new Promise<void>((resolve) => { closedOne = resolve })
  upstream.server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    seen.push(req.headers)
    sockets.add(socket)
    socket.on('close', () => {
      sockets.delete(socket)
      closedOne()
    })
    socket.write(`HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: ${acceptFor(req.headers['sec-websocket-key'] as string)}\r\nX-Instance: ${instanceId}\r\n\r\n`)
    socket.write(serverFrame(`welcome from ${instanceId}`))
    let buffer = head
    const echo = (chunk: Buffer) => {
      const { texts, rest } = readFrames(Buffer.concat([buffer, chunk]))
      buffer = rest
      for (const text of texts) {
        // `bye` makes the app close the connection first.
        if (text === 'bye') socket.end()
        else socket.write(serverFrame(`echo:${text}`))
      }
    }
    echo(Buffer.alloc(0))
    socket.on('data', echo)
    // Like WebSocket servers, it closes its side when the peer has closed its own.
    socket.on('end', () => socket.end())
    socket.on('error', () => socket.destroy())
  })
  t.teardown(() => { for (const socket of sockets) socket.destroy() })
  return { ...upstream, seen, closed }
}

/** A raw TCP client: what it received so far, and a way to wait for more. */
export class RawClient {
  received = Buffer.alloc(0)
  closed = false
  private readonly waiters: Array<() => void> = []

  private constructor (readonly socket: Socket) {
    socket.on('data', (chunk: Buffer) => {
      this.received = Buffer.concat([this.received, chunk])
      this.wake()
    })
    socket.on('error', () => {})
    socket.on('close', () => {
      this.closed = true
      this.wake()
    })
  }

  static async open (port: number): Promise<RawClient> {
    const socket = connect(port, '127.0.0.1')
    await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject))
    return new RawClient(socket)
  }

  /** Resolves once `done` holds for what was received, or rejects when the connection closes first. */
  async until (done: (text: string) => boolean): Promise<string> {
    for (;;) {
      const text = this.received.toString('latin1')
      if (done(text)) return text
      if (this.closed) throw new Error(`closed after receiving: ${JSON.stringify(text)}`)
      await new Promise<void>((resolve) => this.waiters.push(resolve))
    }
  }

  private wake (): void {
    for (const waiter of this.waiters.splice(0)) waiter()
  }
}

export function upgradeRequest (host: string, extra = '', path = '/socket'): string {
  return `GET ${path} HTTP/1.1\r\nHost: ${host}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n${extra}\r\n`
}
