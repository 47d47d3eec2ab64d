import type { Route, RouteTable, Upstream } from '../routing.js'
import { BoundedMap } from '../../cache/bounded-map.js'

export type AppRoute = Extract<Route, { kind: 'app' }>

/** Apps whose round-robin position is remembered; past this, a forgotten app starts again at its first upstream. */
const TRACKED_APPS = 10_000
/** An exchange tries at most this many upstreams, however the table changes meanwhile. */
const MAX_ATTEMPTS = 8

/** Raised by the gateway itself when an upstream stays silent past the timeout. */
export class UpstreamTimeoutError extends Error {
  constructor (readonly ms: number) {
    super(`the upstream sent nothing for ${ms} ms`)
  }
}

/** Failures before an upstream sent a byte of its answer: refused, reset, or a kept-alive connection it closed meanwhile. */
const RETRIABLE = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'UPSTREAM_CLOSED'])
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE', 'PUT', 'DELETE'])

/**
 * An idempotent request without a body may be sent again: nothing was
 * streamed that cannot be replayed, and sending it twice means no more than
 * once. A request with a body is never retried, since its bytes are streamed
 * to the first upstream as they arrive.
 */
export function mayRetry (method: string | undefined, hasBody: boolean): boolean {
  return !hasBody && method !== undefined && IDEMPOTENT.has(method)
}

export function isConnectionFailure (error: Error): boolean {
  const code = (error as NodeJS.ErrnoException).code
  return code !== undefined && RETRIABLE.has(code)
}

export function isTimeout (error: Error): boolean {
  return error instanceof UpstreamTimeoutError
}

const upstreamKey = (upstream: Upstream) => `${upstream.host}:${upstream.port}`

/**
 * Round-robin over an app's upstreams. After a connection failure the
 * table is read again and the next upstream not yet tried is chosen, so a
 * redeploy that swaps upstreams (the old instance closing) is invisible to
 * a request that was on its way to the old one.
 */
export class UpstreamPicker {
  private readonly turns = new BoundedMap<string, { next: number }>(TRACKED_APPS)

  constructor (private readonly routes: RouteTable) {}

  first (route: AppRoute): Upstream | null {
    const { upstreams } = route
    if (upstreams.length === 0) return null
    if (upstreams.length === 1) return upstreams[0]
    let turn = this.turns.get(route.appId)
    if (turn === undefined) {
      turn = { next: 0 }
      this.turns.set(route.appId, turn)
    }
    const upstream = upstreams[turn.next % upstreams.length]
    turn.next = (turn.next + 1) % 0x40000000
    return upstream
  }

  /** The upstream to try after `tried` failed, from the table as it is now; null when none is left or the route changed kind. */
  retry (host: string, appId: string, tried: Upstream[]): Upstream | null {
    if (tried.length >= MAX_ATTEMPTS) return null
    const route = this.routes.resolve(host)
    if (route === null || route.kind !== 'app' || route.appId !== appId || route.suspended) return null
    const failed = new Set(tried.map(upstreamKey))
    const fresh = route.upstreams.filter((upstream) => !failed.has(upstreamKey(upstream)))
    if (fresh.length === 0) return null
    return this.first({ ...route, upstreams: fresh })
  }
}
