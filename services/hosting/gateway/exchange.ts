import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Forwarding, RequestHead } from './forwarding.js'
import type { Tally } from './metrics.js'
import { sendPage, type Page } from './pages.js'
import type { Tunnel } from './websocket.js'

/** One client request for an app, with what the gateway decided about it. */
export interface Exchange {
  req: IncomingMessage
  res: ServerResponse
  /** The routed host, to read the table again on a retry. */
  host: string
  head: RequestHead
  forwarding: Forwarding
  requestId: string
  tally: Tally
  /** Set for an Upgrade request to an app: the upstream's 101 joins the two sockets. */
  tunnel: Tunnel | null
  /** Called when the client goes before its answer has ended (the proxy's way to call off the upstream request). */
  abandoned: (() => void) | null
}

/**
 * A 308 to `location`: permanent, and method and body kept, as HTTP-to-HTTPS
 * redirects usually are. Not cacheable, though: the certificate that makes
 * it right can go with its hostname, and a browser would keep the redirect.
 */
export function redirect (x: Exchange, location: string): void {
  x.res.writeHead(308, ['Location', location, 'Content-Length', '0', 'Cache-Control', 'no-store', 'X-Request-Id', x.requestId])
  x.res.end()
}

/** Answers with one of the gateway's pages, counting its body as the bytes served. */
export function answer (x: Exchange, page: Page): void {
  x.tally.bytesOut = sendPage(x.res, page, x.head.accept, x.requestId)
}
