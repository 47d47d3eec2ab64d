import type { ServerResponse } from 'node:http'

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

export const pages = {
  unknownHost: (host: string | null): Page => ({
    status: 404,
    code: 'APP_GATEWAY_UNKNOWN_HOST',
    title: 'No app here',
    message: host === null ? 'The request names no host.' : `No app is served at ${host}.`
  }),
  suspended: (): Page => ({
    status: 503,
    code: 'APP_GATEWAY_APP_SUSPENDED',
    title: 'App suspended',
    message: 'This app is suspended by its owner. Try again later.',
    headers: ['Retry-After', String(SUSPENDED_RETRY_AFTER)]
  }),
  noUpstream: (): Page => ({
    status: 502,
    code: 'APP_GATEWAY_NO_UPSTREAM',
    title: 'App not reachable',
    message: 'No instance of this app is answering right now.'
  }),
  timeout: (): Page => ({
    status: 504,
    code: 'APP_GATEWAY_UPSTREAM_TIMEOUT',
    title: 'App too slow',
    message: 'The app did not answer in time.'
  }),
  notFound: (): Page => ({
    status: 404,
    code: 'APP_GATEWAY_NOT_FOUND',
    title: 'Not found',
    message: 'Nothing is published at this path.'
  }),
  methodNotAllowed: (): Page => ({
    status: 405,
    code: 'APP_GATEWAY_METHOD_NOT_ALLOWED',
    title: 'Method not allowed',
    message: 'A static site answers GET and HEAD only.',
    headers: ['Allow', 'GET, HEAD']
  }),
  badRequest: (message: string): Page => ({
    status: 400,
    code: 'APP_GATEWAY_BAD_REQUEST',
    title: 'Bad request',
    message,
    // Nothing more on a connection that sent a malformed request is trusted, as with node:http's own 400s.
    headers: ['Connection', 'close']
  })
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
