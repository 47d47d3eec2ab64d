import { request, type ClientRequest, type IncomingMessage } from 'node:http'
import type { Duplex } from 'node:stream'
import type { Upstream } from '../routing.js'
import { answer, type Exchange } from './exchange.js'
import { downstreamHeaders, upstreamHeaders } from './forwarding.js'
import { pages } from './pages.js'
import { requestHead, type UpstreamConnections } from './upstream-connections.js'
import { isConnectionFailure, isTimeout, mayRetry, UpstreamTimeoutError, type AppRoute, type UpstreamPicker } from './upstreams.js'

export interface ProxyDeps {
  picker: UpstreamPicker
  connections: UpstreamConnections
  /** How long an upstream may stay silent (connecting, before its answer, or between body bytes). */
  timeoutMs: number
  /** Open tunnels, closed with the gateway. */
  tunnels: Set<Duplex>
}

/** One attempt at one upstream: how to call it off when the client goes. */
type Attempt = () => void

/**
 * Requests to an app's instances, streamed both ways: the request body is
 * piped to the upstream as it arrives and the answer to the client as it
 * comes, so nothing is held whole in memory and back-pressure reaches both
 * ends. Plain requests go over the upstream's kept-alive connections; an Upgrade
 * gets a connection of its own, since the tunnel keeps it.
 */
export class HttpProxy {
  constructor (private readonly deps: ProxyDeps) {}

  forward (x: Exchange, route: AppRoute): void {
    const { picker } = this.deps
    const first = picker.first(route)
    if (first === null) {
      answer(x, pages.noUpstream())
      return
    }
    const headers = upstreamHeaders(x.head, x.forwarding)
    const tried: Upstream[] = []
    const retriable = mayRetry(x.req.method, x.head.hasBody)
    const state = { answered: false, clientGone: false, cancel: null as Attempt | null }
    x.abandoned = () => {
      state.clientGone = true
      state.cancel?.()
    }
    const failed = (error: Error): void => {
      if (state.clientGone) return
      if (state.answered) {
        x.res.destroy()
        return
      }
      if (isTimeout(error)) {
        answer(x, pages.timeout())
        return
      }
      const next = retriable && isConnectionFailure(error) ? picker.retry(x.host, route.appId, tried) : null
      if (next !== null) send(next)
      else answer(x, pages.noUpstream())
    }
    const send = (upstream: Upstream): void => {
      tried.push(upstream)
      x.tally.instanceId = upstream.instanceId
      state.cancel = x.tunnel === null ? this.dispatch(x, upstream, headers, state, failed, retriable) : this.upgrade(x, upstream, headers, state, failed)
    }
    send(first)
  }

  private dispatch (x: Exchange, upstream: Upstream, headers: string[], state: { answered: boolean }, failed: (error: Error) => void, mayResend: boolean): Attempt {
    const { req, res, tally } = x
    const method = req.method as string
    const chunked = x.head.hasBody && !x.head.hasLength
    const head = requestHead(method, req.url as string, chunked ? [...headers, 'Transfer-Encoding', 'chunked'] : headers)
    // One drain listener at a time, however many pieces of one read the client's socket refused.
    let waiting = false
    const resume = () => { waiting = false; call.resume() }
    const call = this.deps.connections.send(upstream, { head, body: x.head.hasBody ? req : null, chunked, headRequest: method === 'HEAD', mayResend }, {
      head: (status, reason, raw, whole) => {
        const out = downstreamHeaders(raw, x.requestId)
        if (reason !== '') res.writeHead(status, reason, out)
        else res.writeHead(status, out)
        state.answered = true
        if (whole === null) return
        tally.bytesOut += whole.length
        // Head and body in one write.
        res.end(whole)
      },
      body: (chunk) => {
        tally.bytesOut += chunk.length
        if (res.write(chunk)) return true
        if (!waiting) { waiting = true; res.once('drain', resume) }
        return false
      },
      end: () => { res.end() },
      fail: failed
    })
    return () => { call.cancel() }
  }

  private upgrade (x: Exchange, upstream: Upstream, headers: string[], state: { answered: boolean }, failed: (error: Error) => void): Attempt {
    const tunnel = x.tunnel as NonNullable<Exchange['tunnel']>
    const { timeoutMs } = this.deps
    const upReq: ClientRequest = request({ host: upstream.host, port: upstream.port, method: x.req.method, path: x.req.url, headers, agent: false })
    upReq.setTimeout(timeoutMs, () => upReq.destroy(new UpstreamTimeoutError(timeoutMs)))
    upReq.on('response', (upRes: IncomingMessage) => {
      state.answered = true
      relay(x, upRes)
    })
    // No 101 arrives once the client has gone: its leaving destroyed this request.
    upReq.on('upgrade', (upRes, upSocket, upHead) => {
      state.answered = true
      tunnel.open(x.res, upRes, upSocket, upHead, x.requestId, x.tally, this.deps.tunnels)
    })
    upReq.on('error', failed)
    upReq.end()
    return () => upReq.destroy()
  }
}

/** An upstream's answer to an Upgrade it declined, relayed as a plain response. */
function relay (x: Exchange, upRes: IncomingMessage): void {
  const { res, tally } = x
  const headers = downstreamHeaders(upRes.rawHeaders, x.requestId)
  res.writeHead(upRes.statusCode as number, upRes.statusMessage, headers)
  upRes.on('data', (chunk: Buffer) => { tally.bytesOut += chunk.length })
  // An upstream gone mid-answer errors its response ('aborted'); the client's is cut rather than left hanging.
  upRes.on('error', () => res.destroy())
  upRes.pipe(res)
}
