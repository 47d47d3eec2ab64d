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
}

/** Answers with one of the gateway's pages, counting its body as the bytes served. */
export function answer (x: Exchange, page: Page): void {
  x.tally.bytesOut = sendPage(x.res, page, x.head.accept, x.requestId)
}
