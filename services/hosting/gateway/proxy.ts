import { request, type Agent, type ClientRequest, type IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Upstream } from '../routing.js'
import { answer, type Exchange } from './exchange.js'
import { downstreamHeaders, upstreamHeaders } from './forwarding.js'
import { pages } from './pages.js'
import { isConnectionFailure, mayRetry, UpstreamTimeoutError, type AppRoute, type UpstreamPicker } from './upstreams.js'
import { openTunnel } from './websocket.js'

export interface ProxyDeps {
  picker: UpstreamPicker
  agent: Agent
  /** How long an upstream may stay silent (connecting, before its answer, or between body bytes). */
  timeoutMs: number
  /** Open tunnels, closed with the gateway. */
  tunnels: Set<Duplex>
}

/**
 * Requests to an app's instances over kept-alive connections, streamed both
 * ways: the request body is piped to the upstream as it arrives and the
 * answer to the client as it comes, so nothing is held whole in memory and
 * back-pressure reaches both ends.
 */
export class HttpProxy {
  constructor (private readonly deps: ProxyDeps) {}

  forward (x: Exchange, route: AppRoute): void {
    const { picker, agent, timeoutMs } = this.deps
    const first = picker.first(route)
    if (first === null) {
      answer(x, pages.noUpstream())
      return
    }
    const headers = upstreamHeaders(x.head, x.forwarding)
    const tried: Upstream[] = []
    const retriable = mayRetry(x.req.method, x.head.hasBody)
    let current: ClientRequest | null = null
    let answered = false
    let clientGone = false
    x.res.once('close', () => {
      if (x.res.writableFinished) return
      clientGone = true
      current?.destroy()
    })
    const send = (upstream: Upstream): void => {
      tried.push(upstream)
      x.tally.instanceId = upstream.instanceId
      // A tunnel takes its connection for good, so it gets a fresh one rather than one from the kept-alive pool.
      const upReq = request({ host: upstream.host, port: upstream.port, method: x.req.method, path: x.req.url, headers, agent: x.tunnel === null ? agent : false })
      current = upReq
      upReq.setTimeout(timeoutMs, () => upReq.destroy(new UpstreamTimeoutError(timeoutMs)))
      upReq.on('response', (upRes) => {
        answered = true
        relay(x, upRes)
      })
      if (x.tunnel !== null) {
        const tunnel = x.tunnel
        upReq.on('upgrade', (upRes, upSocket, upHead) => {
          answered = true
          if (clientGone) upSocket.destroy()
          else openTunnel(tunnel, x.res, upRes, upSocket, upHead, x.requestId, x.tally, this.deps.tunnels)
        })
      }
      upReq.on('error', (error) => {
        if (clientGone) return
        if (answered) {
          x.res.destroy()
          return
        }
        if (error instanceof UpstreamTimeoutError) {
          answer(x, pages.timeout())
          return
        }
        const next = retriable && isConnectionFailure(error) ? picker.retry(x.host, route.appId, tried) : null
        if (next !== null) send(next)
        else answer(x, pages.noUpstream())
      })
      if (x.head.hasBody) x.req.pipe(upReq)
      else upReq.end()
    }
    send(first)
  }
}

function relay (x: Exchange, upRes: IncomingMessage): void {
  const { res, tally } = x
  const headers = downstreamHeaders(upRes.rawHeaders, x.requestId)
  const status = upRes.statusCode as number
  try {
    if (upRes.statusMessage !== undefined && upRes.statusMessage !== '') res.writeHead(status, upRes.statusMessage, headers)
    else res.writeHead(status, headers)
  } catch {
    // A head Node's client parser let through but its server will not write (an odd status or header value).
    upRes.destroy()
    answer(x, pages.noUpstream())
    return
  }
  upRes.on('data', (chunk: Buffer) => { tally.bytesOut += chunk.length })
  upRes.on('aborted', () => res.destroy())
  upRes.on('error', () => res.destroy())
  upRes.pipe(res)
}
