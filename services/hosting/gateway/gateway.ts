import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createTlsServer, type Server as TlsServer } from 'node:https'
import type { AddressInfo, Socket } from 'node:net'
import type { Duplex } from 'node:stream'
import { DescriptorPressure, descriptorHeadroom, keepListening } from '../../platform/descriptors.js'
import type { IdGenerator } from '../../platform/ids.js'
import type { CertificateSource, ChallengeSource, RouteTable, ServedRequestSink } from '../routing.js'
import { ConnectionAdmission, DEFAULT_CONNECTION_LIMITS, limitsWithin, type ConnectionLimits } from './admission.js'
import { answer, redirect, type Exchange } from './exchange.js'
import { clientAddress, readRequestHead, requestIdFor } from './forwarding.js'
import { httpsUrl, routeHost } from './host.js'
import { Tally } from './metrics.js'
import { pages, sendPage } from './pages.js'
import { HttpProxy } from './proxy.js'
import { serveStatic } from './static-files.js'
import { SniCertificates } from './tls.js'
import { UpstreamConnections } from './upstream-connections.js'
import { UpstreamPicker } from './upstreams.js'
import { responseOnSocket, Tunnel } from './websocket.js'

export interface GatewayDeps {
  routes: RouteTable
  served: ServedRequestSink
  certificates: CertificateSource
  challenges: ChallengeSource
  newId: IdGenerator
  /** How long an upstream may stay silent before the client gets a 504 (60 s unless given). */
  upstreamTimeoutMs?: number
  /** Open client connections in all and per client (DEFAULT_CONNECTION_LIMITS unless given). */
  connectionLimits?: ConnectionLimits
  /** The process's soft descriptor limit: the connection limits are kept within it, and new connections refused near it. */
  descriptorLimit?: number | null
  /** How long a client may take to send its request line and headers, and its whole request (20 s and 300 s unless given). */
  clientTimeouts?: ClientTimeouts
  /** Where the gateway says what it decided on its own: limits lowered to fit, connections refused for want of descriptors. */
  log?: { warn: (details: object, message: string) => void }
}

export interface ClientTimeouts {
  headersMs: number
  requestMs: number
  /** How often Node's server looks for clients past those limits. */
  checkEveryMs: number
}

export interface GatewayListen {
  port: number
  host: string
  /** HTTPS with certificates chosen by SNI; none when absent. */
  tlsPort?: number
}

const DEFAULT_UPSTREAM_TIMEOUT_MS = 60_000
const DEFAULT_CLIENT_TIMEOUTS: ClientTimeouts = { headersMs: 20_000, requestMs: 300_000, checkEveryMs: 5000 }
const ACME_CHALLENGE = '/.well-known/acme-challenge/'
const ACME_TOKEN = /^[\w-]{1,256}$/

type Proto = 'http' | 'https'

async function listenOn (server: Server | TlsServer, port: number, host: string): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    // Bound in this process, not through a cluster primary: only the lead listens here (services/platform/cluster.ts).
    server.listen({ port, host, exclusive: true }, () => {
      server.off('error', reject)
      resolve()
    })
  })
}

/**
 * The hosting gateway: routes each request by its Host to a running app's
 * instances (HTTP and Upgrade, proxied) or to a static deployment's tree
 * (served here), answers ACME HTTP-01 challenges on the plain-HTTP port,
 * and terminates TLS with certificates picked by SNI; a plain-HTTP request
 * to a host that has a certificate is sent to HTTPS. It only reads the
 * route table, on every request, so a deploy, scale or suspend written
 * there takes effect on the next request. Its clients are held to connection
 * limits and the API's header timeout, and it gives way first when the
 * process runs short of descriptors (admission.ts).
 */
export class Gateway {
  private readonly tunnels = new Set<Duplex>()
  private readonly proxy: HttpProxy
  private readonly connections: UpstreamConnections
  private readonly sni: SniCertificates
  private readonly admission: ConnectionAdmission
  /** The connection limits in force: the configured ones, lowered to fit the descriptor limit. */
  readonly connectionLimits: ConnectionLimits
  private readonly servers: Array<{ proto: Proto, server: Server | TlsServer }> = []
  /** The HTTPS listener's port while it listens: where plain-HTTP requests to a host with a certificate are sent. */
  private httpsPort: number | null = null
  private closing = false

  constructor (private readonly deps: GatewayDeps) {
    const timeoutMs = deps.upstreamTimeoutMs ?? DEFAULT_UPSTREAM_TIMEOUT_MS
    this.connections = new UpstreamConnections(timeoutMs)
    this.proxy = new HttpProxy({ picker: new UpstreamPicker(deps.routes), connections: this.connections, timeoutMs, tunnels: this.tunnels })
    this.sni = new SniCertificates(deps.certificates)
    const descriptorLimit = deps.descriptorLimit ?? null
    this.connectionLimits = limitsWithin(deps.connectionLimits ?? DEFAULT_CONNECTION_LIMITS, descriptorLimit)
    const pressure = descriptorLimit === null
      ? null
      : new DescriptorPressure({
        limit: descriptorLimit,
        headroom: descriptorHeadroom(descriptorLimit),
        onPressed: (details) => {
          deps.log?.warn({ ...details, open: this.admission.count }, 'near the open file limit: the gateway refuses new connections and closes idle ones')
          for (const { server } of this.servers) server.closeIdleConnections()
        }
      })
    this.admission = new ConnectionAdmission(this.connectionLimits, () => pressure?.pressed() ?? false)
  }

  async listen ({ port, host, tlsPort }: GatewayListen): Promise<void> {
    const configured = this.deps.connectionLimits ?? DEFAULT_CONNECTION_LIMITS
    if (this.connectionLimits.maxConnections < configured.maxConnections) {
      this.deps.log?.warn({ configured: configured.maxConnections, maxConnections: this.connectionLimits.maxConnections, descriptorLimit: this.deps.descriptorLimit }, 'gateway connections (GATEWAY_MAX_CONNECTIONS) lowered to fit the open file limit')
    }
    const { headersMs, requestMs, checkEveryMs } = this.deps.clientTimeouts ?? DEFAULT_CLIENT_TIMEOUTS
    const timeouts = { headersTimeout: headersMs, requestTimeout: requestMs, connectionsCheckingInterval: checkEveryMs }
    try {
      await this.listenOne('http', createServer(timeouts), port, host)
      if (tlsPort !== undefined) {
        // A handshake comes before the head, and node:http starts counting only after it: it gets the header limit too.
        await this.listenOne('https', createTlsServer({ ...timeouts, handshakeTimeout: headersMs, SNICallback: this.sni.callback }), tlsPort, host)
        this.httpsPort = this.addresses().https?.port ?? null
      }
    } catch (error) {
      await this.close()
      throw error
    }
  }

  /** Where each listener ended up (a port of 0 picks a free one). */
  addresses (): { http: AddressInfo | null, https: AddressInfo | null } {
    const of = (proto: Proto) => (this.servers.find((entry) => entry.proto === proto)?.server.address() ?? null) as AddressInfo | null
    return { http: of('http'), https: of('https') }
  }

  /**
   * Stops listening, cuts open tunnels and lets requests in flight finish
   * (each bounded by the upstream timeout); idle kept-alive client
   * connections are closed at once and busy ones as their answers end.
   */
  async close (): Promise<void> {
    this.closing = true
    for (const socket of this.tunnels) socket.destroy()
    // server.close() also closes the idle connections; the busy ones close as their answers end (see handle).
    await Promise.all(this.servers.map(async ({ server }) => {
      if (server.listening) await new Promise<void>((resolve) => server.close(() => resolve()))
    }))
    this.servers.length = 0
    this.httpsPort = null
    this.connections.destroy()
  }

  private async listenOne (proto: Proto, server: Server | TlsServer, port: number, host: string): Promise<void> {
    // After node:http's own listener has taken the socket: closing it then is the same as a client leaving.
    server.on('connection', (socket: Socket) => { this.admission.admit(socket) })
    server.on('request', (req: IncomingMessage, res: ServerResponse) => this.handle(req, res, proto, null))
    server.on('upgrade', (req: IncomingMessage, socket: Duplex, early: Buffer) => {
      socket.on('error', () => socket.destroy())
      this.handle(req, responseOnSocket(req, socket), proto, new Tunnel(socket, early))
    })
    // A failed handshake (no certificate for the name, a client speaking something else) concerns that client only.
    server.on('tlsClientError', (_error: Error, socket: Duplex) => socket.destroy())
    this.servers.push({ proto, server })
    await listenOn(server, port, host)
    keepListening(server, `gateway ${proto}`, (details, message) => this.deps.log?.warn(details, message))
  }

  private handle (req: IncomingMessage, res: ServerResponse, proto: Proto, tunnel: Tunnel | null): void {
    const started = performance.now()
    const head = readRequestHead(req.rawHeaders)
    const requestId = requestIdFor(head.requestId, this.deps.newId)
    let x: Exchange | null = null
    // One listener per response, for the record, a client gone early and a closing gateway.
    res.once('close', () => {
      if (x !== null) {
        if (!res.writableFinished) x.abandoned?.()
        x.tally.report(this.deps.served, res.statusCode)
      }
      if (this.closing) for (const { server } of this.servers) server.closeIdleConnections()
    })
    const url = req.url as string
    if (url.charCodeAt(0) !== 0x2f) {
      sendPage(res, pages.badRequest('The request target must be a path.'), head.accept, requestId)
      return
    }
    // RFC 9112 §3.2: the gateway would route by one Host and an app might read another.
    if (head.hosts > 1) {
      sendPage(res, pages.badRequest('The request has more than one Host header.'), head.accept, requestId)
      return
    }
    if (proto === 'http' && url.startsWith(ACME_CHALLENGE)) {
      this.answerChallenge(req, res, url.slice(ACME_CHALLENGE.length), head.accept, requestId)
      return
    }
    const host = routeHost(head.host)
    const route = host === null ? null : this.deps.routes.resolve(host)
    if (host === null || route === null) {
      sendPage(res, pages.unknownHost(host), head.accept, requestId)
      return
    }
    const forwarding = { clientIp: clientAddress(req.socket), proto, host: head.host as string, port: req.socket.localPort ?? 0, requestId }
    x = { req, res, host, head, forwarding, requestId, tally: new Tally(route.appId, started), tunnel: route.kind === 'app' ? tunnel : null, abandoned: null }
    if (tunnel === null) head.upgrade = undefined
    if (proto === 'http' && this.httpsPort !== null && this.deps.certificates.certificateFor(host) !== null) redirect(x, httpsUrl(host, this.httpsPort, url))
    else if (route.suspended) answer(x, pages.suspended())
    else if (route.kind === 'static') serveStatic(x, route).catch(() => res.destroy())
    else this.proxy.forward(x, route)
  }

  private answerChallenge (req: IncomingMessage, res: ServerResponse, rest: string, accept: string | undefined, requestId: string): void {
    const query = rest.indexOf('?')
    const token = query === -1 ? rest : rest.slice(0, query)
    const keyAuthorization = (req.method === 'GET' || req.method === 'HEAD') && ACME_TOKEN.test(token) ? this.deps.challenges.keyAuthorization(token) : null
    if (keyAuthorization === null) {
      sendPage(res, pages.notFound(), accept, requestId)
      return
    }
    const body = Buffer.from(keyAuthorization)
    res.writeHead(200, ['Content-Type', 'text/plain; charset=utf-8', 'Content-Length', String(body.length), 'Cache-Control', 'no-store', 'X-Request-Id', requestId])
    res.end(body)
  }
}
