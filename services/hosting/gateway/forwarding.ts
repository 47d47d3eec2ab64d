import type { Socket } from 'node:net'

/**
 * The headers a request and its answer carry through the gateway. Hop-by-hop
 * headers (RFC 9110 §7.6.1) belong to one connection and are dropped both
 * ways, with any header the Connection header names. The forwarding headers
 * (`X-Forwarded-*`, `X-Real-IP`, `Forwarded`) are dropped from the client
 * and written from the connection itself, so an app can trust them: a client
 * could otherwise claim any address. Raw header arrays are used throughout,
 * so Node never builds a header object for a proxied request.
 */

const DROPPED_FROM_CLIENT = new Set([
  'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer',
  'x-forwarded-for', 'x-forwarded-proto', 'x-forwarded-host', 'x-forwarded-port', 'x-real-ip', 'forwarded',
  // The gateway's own server has answered `Expect: 100-continue` already.
  'expect'
])
const DROPPED_FROM_UPSTREAM = new Set(['connection', 'keep-alive', 'proxy-connection', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'x-request-id'])
const CONNECTION_OPTIONS = new Set(['keep-alive', 'close', 'upgrade'])

/** What the gateway reads of a request's head, found in one pass over its raw headers. */
export interface RequestHead {
  host: string | undefined
  /** How many Host headers the request has: more than one is refused. */
  hosts: number
  requestId: string | undefined
  accept: string | undefined
  /** A non-zero Content-Length or any Transfer-Encoding: the request has a body to stream. */
  hasBody: boolean
  /** The body's length is given (Content-Length); else it is sent on in chunks. */
  hasLength: boolean
  /** The Upgrade header's value, when the Connection header asks for an upgrade. */
  upgrade: string | undefined
  /** The headers the upstream receives as the client sent them. */
  kept: string[]
}

/** Header names the Connection header lists beyond its usual options: those are hop-by-hop too. */
function listedByConnection (value: string | undefined): Set<string> | null {
  if (value === undefined || value === 'keep-alive' || value === 'close') return null
  let listed: Set<string> | null = null
  for (const token of value.split(',')) {
    const name = token.trim().toLowerCase()
    if (name !== '' && !CONNECTION_OPTIONS.has(name)) (listed ??= new Set()).add(name)
  }
  return listed
}

function withoutListed (raw: string[], listed: Set<string>): string[] {
  const out: string[] = []
  for (let i = 0; i < raw.length; i += 2) if (!listed.has(raw[i].toLowerCase())) out.push(raw[i], raw[i + 1])
  return out
}

export function readRequestHead (raw: string[]): RequestHead {
  const kept: string[] = []
  let host: string | undefined
  let hosts = 0
  let requestId: string | undefined
  let accept: string | undefined
  let connection: string | undefined
  let upgrade: string | undefined
  let hasBody = false
  let hasLength = false
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]
    const value = raw[i + 1]
    const lower = name.toLowerCase()
    switch (lower) {
      case 'host': host = value; hosts++; kept.push(name, value); break
      case 'accept': accept = value; kept.push(name, value); break
      case 'content-length': hasLength = true; if (value !== '0') hasBody = true; kept.push(name, value); break
      case 'transfer-encoding': hasBody = true; break
      case 'x-request-id': requestId = value; break
      case 'connection': connection = connection === undefined ? value : `${connection}, ${value}`; break
      case 'upgrade': upgrade = value; break
      default: if (!DROPPED_FROM_CLIENT.has(lower)) kept.push(name, value)
    }
  }
  const listed = listedByConnection(connection)
  const asksUpgrade = upgrade !== undefined && connection !== undefined && /(?:^|,)\s*upgrade\s*(?:,|$)/i.test(connection)
  return { host, hosts, requestId, accept, hasBody, hasLength, upgrade: asksUpgrade ? upgrade : undefined, kept: listed === null ? kept : withoutListed(kept, listed) }
}

const SANE_REQUEST_ID = /^[\w.:-]{1,128}$/

/** A client's X-Request-Id is kept when it is a plain token (it reaches logs and other systems), else replaced. */
export function requestIdFor (offered: string | undefined, newId: () => string): string {
  return offered !== undefined && SANE_REQUEST_ID.test(offered) ? offered : newId()
}

export function clientAddress (socket: Socket): string {
  const address = socket.remoteAddress ?? ''
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address
}

export interface Forwarding {
  clientIp: string
  proto: 'http' | 'https'
  /** The Host header as the client sent it. */
  host: string
  port: number
  requestId: string
}

const quoted = (value: string) => `"${value.replace(/["\\]/g, '\\$&')}"`

/** The head the upstream receives: the kept headers and the forwarding headers written from the connection. */
export function upstreamHeaders (head: RequestHead, forwarding: Forwarding): string[] {
  const { clientIp, proto, host, port, requestId } = forwarding
  const headers = head.kept
  if (head.upgrade !== undefined) headers.push('Connection', 'Upgrade', 'Upgrade', head.upgrade)
  const forNode = clientIp.includes(':') ? `"[${clientIp}]"` : clientIp
  headers.push(
    'X-Forwarded-For', clientIp,
    'X-Forwarded-Proto', proto,
    'X-Forwarded-Host', host,
    'X-Forwarded-Port', String(port),
    'X-Real-IP', clientIp,
    'Forwarded', `for=${forNode};host=${quoted(host)};proto=${proto}`,
    'X-Request-Id', requestId
  )
  return headers
}

/** The head the client receives from an upstream's answer; a 101 keeps its Upgrade. */
export function downstreamHeaders (raw: string[], requestId: string, upgraded = false): string[] {
  const out: string[] = []
  let connection: string | undefined
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i]
    const lower = name.toLowerCase()
    if (lower === 'connection') connection = raw[i + 1]
    if (upgraded && lower === 'upgrade') out.push(name, raw[i + 1])
    else if (!DROPPED_FROM_UPSTREAM.has(lower)) out.push(name, raw[i + 1])
  }
  const listed = listedByConnection(connection)
  const headers = listed === null ? out : withoutListed(out, listed)
  if (upgraded) headers.push('Connection', 'Upgrade')
  headers.push('X-Request-Id', requestId)
  return headers
}
