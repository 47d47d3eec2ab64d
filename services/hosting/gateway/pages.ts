import type { ServerResponse } from 'node:http'
import type { AppError } from '../../platform/errors.js'
import { hostingErrors } from '../errors.js'

/**
 * The gateway's own answers: a small HTML page for people, the error
 * envelope's shape (`{ success: false, code, message }`) for programs that
 * ask for JSON. They are never cached, and carry the request id so a report
 * can be traced.
 */
export interface Page {
  status: number
  code: string
  title: string
  message: string
  /** Extra headers, e.g. Retry-After or Allow. */
  headers?: string[]
}

/** Seconds a client is told to wait before asking a suspended app again. */
export const SUSPENDED_RETRY_AFTER = 60

/** A page answering with `error`'s code, status and message (from the family's catalogue), under a title for people. */
const page = (error: AppError, title: string, headers?: string[]): Page =>
  ({ status: error.status, code: error.code, title, message: error.message, ...(headers === undefined ? {} : { headers }) })

export const pages = {
  unknownHost: (host: string | null): Page => page(hostingErrors.gatewayUnknownHost({ host }), 'No app here'),
  suspended: (): Page => page(hostingErrors.gatewayAppSuspended(), 'App suspended', ['Retry-After', String(SUSPENDED_RETRY_AFTER)]),
  noUpstream: (): Page => page(hostingErrors.gatewayNoUpstream(), 'App not reachable'),
  timeout: (): Page => page(hostingErrors.gatewayUpstreamTimeout(), 'App too slow'),
  notFound: (): Page => page(hostingErrors.gatewayNotFound(), 'Not found'),
  methodNotAllowed: (): Page => page(hostingErrors.gatewayMethodNotAllowed(), 'Method not allowed', ['Allow', 'GET, HEAD']),
  // Nothing more on a connection that sent a malformed request is trusted, as with node:http's own 400s.
  badRequest: (why: string): Page => page(hostingErrors.gatewayBadRequest({ why }), 'Bad request', ['Connection', 'close'])
}

const escapeHtml = (text: string) => text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`)

/** JSON when the client names application/json before (or without) text/html. */
function wantsJson (accept: string | undefined): boolean {
  if (accept === undefined) return false
  const json = accept.indexOf('application/json')
  if (json === -1) return false
  const html = accept.indexOf('text/html')
  return html === -1 || json < html
}

export function renderPage (page: Page, accept: string | undefined, requestId: string): { type: string, body: Buffer } {
  if (wantsJson(accept)) {
    return { type: 'application/json; charset=utf-8', body: Buffer.from(JSON.stringify({ success: false, code: page.code, message: page.message })) }
  }
  const html = '<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">' +
    `<title>${page.status} · ${escapeHtml(page.title)}</title>` +
    '<style>body{font:16px/1.5 system-ui,sans-serif;color:#222;max-width:36em;margin:15vh auto;padding:0 1em}h1{font-size:1.5em}small{color:#777}</style></head>' +
    `<body><h1>${escapeHtml(page.title)}</h1><p>${escapeHtml(page.message)}</p><p><small>${page.status} · request ${escapeHtml(requestId)}</small></p></body></html>\n`
  return { type: 'text/html; charset=utf-8', body: Buffer.from(html) }
}

function pageHeaders (page: Page, type: string, length: number, requestId: string): string[] {
  return ['Content-Type', type, 'Content-Length', String(length), 'Cache-Control', 'no-store', 'X-Content-Type-Options', 'nosniff', 'X-Request-Id', requestId, ...(page.headers ?? [])]
}

/** Answers with `page`; returns the body's length, for the served-request record. */
export function sendPage (res: ServerResponse, page: Page, accept: string | undefined, requestId: string): number {
  const { type, body } = renderPage(page, accept, requestId)
  res.writeHead(page.status, pageHeaders(page, type, body.length, requestId))
  // Node writes no body in answer to HEAD.
  res.end(body)
  return res.req.method === 'HEAD' ? 0 : body.length
}

/** A response head for a bare socket, from raw header pairs. */
export function rawHead (status: number, reason: string, headers: string[]): string {
  let head = `HTTP/1.1 ${status} ${reason}\r\n`
  for (let i = 0; i < headers.length; i += 2) head += `${headers[i]}: ${headers[i + 1]}\r\n`
  return head + '\r\n'
}
