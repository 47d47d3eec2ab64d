import { request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import { pipeline, Transform, type Readable } from 'node:stream'
import type { AddressGuard, CheckedTarget, InternalKind } from './internal-addresses.js'
import type { OutboundPool } from './pool.js'

/**
 * One HTTP call to a URL a tenant typed (a webhook receiver, a schedule's
 * target), through the one address guard: the host is resolved and checked
 * once, the connection goes to the checked addresses only (a resolver that
 * answers differently the second time reaches nothing new), no redirect is
 * followed (a 3xx is an answer like any other), the whole exchange has a
 * deadline, and at most `maxResponseBytes` of the answer are read before the
 * connection is dropped.
 */

export interface OutboundRequest {
  method: string
  url: string
  headers: Record<string, string>
  /** A body, or one streamed from `open()` (a backup archive) of exactly `length` bytes. */
  body?: string | Buffer | StreamedBody
}

export interface StreamedBody { length: number, open: () => Readable }

const isStreamed = (body: OutboundRequest['body']): body is StreamedBody => body !== undefined && typeof body !== 'string' && !Buffer.isBuffer(body)
const bodyLength = (body: string | Buffer | StreamedBody): number => isStreamed(body) ? body.length : Buffer.byteLength(body)

export interface OutboundLimits {
  /** From the start of the call to the last byte read. */
  timeoutMs: number
  maxResponseBytes: number
}

export type OutboundResult =
  | { kind: 'answered', status: number, headers: IncomingHttpHeaders, body: Buffer, truncated: boolean }
  /** The guard refused the host: it reaches an internal address the operator did not allow. */
  | { kind: 'refused', internal: InternalKind, address: string, reason: string }
  /** No answer: the host does not resolve, the connection failed or was reset, or the deadline passed. */
  | { kind: 'failed', code: string, reason: string }

/** A lookup that answers only the addresses the guard checked. */
function pinnedLookup (addresses: readonly string[]): LookupFunction {
  const entries = addresses.map((address) => ({ address, family: isIP(address) }))
  return (_host, options, callback) => {
    if (options.all === true) (callback as (error: null, entries: Array<{ address: string, family: number }>) => void)(null, entries)
    else callback(null, entries[0].address, entries[0].family)
  }
}

type Checked = { ok: true, url: URL, target: CheckedTarget } | { ok: false, result: OutboundRefusal }
type OutboundRefusal = Extract<OutboundResult, { kind: 'refused' | 'failed' }>

/** The URL's protocol and host through the guard: the addresses a connection may go to, or why none. */
async function checked (guard: AddressGuard, rawUrl: string): Promise<Checked> {
  const url = new URL(rawUrl)
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { ok: false, result: { kind: 'failed', code: 'EPROTOCOL', reason: `${url.protocol} URLs are not called` } }
  const verdict = await guard.check(url)
  if (!verdict.ok) {
    if (verdict.unresolved) return { ok: false, result: { kind: 'failed', code: 'ENOTFOUND', reason: `the host ${url.hostname} does not resolve` } }
    return { ok: false, result: { kind: 'refused', internal: verdict.kind, address: verdict.address, reason: `the host ${url.hostname} reaches ${verdict.address}, a ${verdict.kind} address` } }
  }
  return { ok: true, url, target: verdict.target }
}

/**
 * The request itself, to the checked addresses only: on a fresh connection,
 * or on one of `pool`'s kept for these very addresses (pool.ts says why that
 * keeps the pinning).
 */
function open (url: URL, target: CheckedTarget, request: OutboundRequest, pool?: OutboundPool): ReturnType<typeof httpRequest> {
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest
  return send({
    protocol: url.protocol,
    hostname: target.host,
    port: target.port,
    path: `${url.pathname}${url.search}`,
    method: request.method,
    headers: request.body === undefined ? request.headers : { ...request.headers, 'content-length': String(bodyLength(request.body)) },
    agent: pool === undefined ? false : pool.agent(url.protocol, target),
    ...(target.addresses.length > 0 ? { lookup: pinnedLookup(target.addresses) } : {})
  })
}

/** Writes the body and ends the request; a streamed body that fails to read fails the call. */
function send (call: ReturnType<typeof httpRequest>, body: OutboundRequest['body']): void {
  if (!isStreamed(body)) {
    call.end(body)
    return
  }
  pipeline(body.open(), call, (error) => { if (error !== undefined && error !== null) call.destroy(error) })
}

/** Errors of a kept-alive socket the receiver closed as the call went out: the call is sent again once on a fresh one. */
const STALE_SOCKET = new Set(['ECONNRESET', 'EPIPE'])

/**
 * The call, answered with the whole (capped) body. With a `pool`, the
 * connection is one kept alive for the same checked addresses when one is
 * idle; a kept socket that turns out closed before any answer came is
 * replaced by a fresh connection once, as a new connection would have been used.
 */
export async function outboundRequest (guard: AddressGuard, request: OutboundRequest, limits: OutboundLimits, pool?: OutboundPool): Promise<OutboundResult> {
  const check = await checked(guard, request.url)
  if (!check.ok) return check.result
  const { url, target } = check
  const started = performance.now()
  const first = await exchange(url, target, request, limits, pool)
  if (first !== 'stale') return first
  const second = await exchange(url, target, request, { ...limits, timeoutMs: Math.max(1, limits.timeoutMs - (performance.now() - started)) }, undefined)
  return second === 'stale' ? { kind: 'failed', code: 'ECONNRESET', reason: 'the connection was reset' } : second
}

async function exchange (url: URL, target: CheckedTarget, request: OutboundRequest, limits: OutboundLimits, pool: OutboundPool | undefined): Promise<OutboundResult | 'stale'> {
  return await new Promise<OutboundResult | 'stale'>((resolve) => {
    let settled = false
    const finish = (result: OutboundResult | 'stale'): void => {
      if (settled) return
      settled = true
      clearTimeout(deadline)
      resolve(result)
    }
    let call: ReturnType<typeof httpRequest>
    try {
      call = open(url, target, request, pool)
    } catch (error) {
      // Node refuses some requests before sending (a header value it will not write): an answer like any failure.
      resolve({ kind: 'failed', code: (error as NodeJS.ErrnoException).code ?? 'EREQUEST', reason: (error as Error).message })
      return
    }
    let answering = false
    const deadline = setTimeout(() => {
      finish({ kind: 'failed', code: 'ETIMEDOUT', reason: `no complete answer within ${limits.timeoutMs} ms` })
      call.destroy()
    }, limits.timeoutMs)
    call.on('error', (error: NodeJS.ErrnoException) => {
      if (!answering && call.reusedSocket && STALE_SOCKET.has(error.code ?? '')) finish('stale')
      else finish({ kind: 'failed', code: error.code ?? 'ECONNECTION', reason: error.message })
    })
    call.on('response', (response) => {
      answering = true
      const chunks: Buffer[] = []
      let size = 0
      let truncated = false
      const answered = (): void => { finish({ kind: 'answered', status: response.statusCode ?? 0, headers: response.headers, body: Buffer.concat(chunks), truncated }) }
      response.on('data', (chunk: Buffer) => {
        if (truncated) return
        const room = limits.maxResponseBytes - size
        if (chunk.length > room) {
          chunks.push(chunk.subarray(0, room))
          size += room
          truncated = true
          answered()
          // The rest is never read: the connection goes instead.
          response.destroy()
          return
        }
        chunks.push(chunk)
        size += chunk.length
      })
      response.on('end', answered)
      response.on('error', (error: NodeJS.ErrnoException) => { finish({ kind: 'failed', code: error.code ?? 'ECONNRESET', reason: error.message }) })
    })
    send(call, request.body)
  })
}

export interface OutboundStreamLimits {
  /** From the start of the call to the answer's status and headers. */
  headersTimeoutMs: number
  /** The longest silence while the body streams. */
  idleTimeoutMs: number
  /** Past this many body bytes the connection is dropped and the body ends in an error. */
  maxResponseBytes: number
  /** Aborting drops the connection, before or after the headers came. */
  signal?: AbortSignal
}

export type OutboundStreamResult =
  | { kind: 'answered', status: number, statusMessage: string, headers: IncomingHttpHeaders, body: Readable }
  | OutboundRefusal

/**
 * The same call through the same guard, answered as soon as the headers
 * come, with the body as a stream (a model provider's server-sent events):
 * the deadline covers the wait for the headers, then each silence in the
 * body; the body errors (ETIMEDOUT, E2BIG, or the abort) rather than
 * ending short, so a reader never takes a cut answer for a whole one.
 */
export async function outboundStream (guard: AddressGuard, request: OutboundRequest, limits: OutboundStreamLimits): Promise<OutboundStreamResult> {
  if (limits.signal?.aborted === true) return { kind: 'failed', code: 'ABORT_ERR', reason: 'the call was aborted' }
  const check = await checked(guard, request.url)
  if (!check.ok) return check.result
  const { url, target } = check
  return await new Promise<OutboundStreamResult>((resolve) => {
    let settled = false
    let call: ReturnType<typeof httpRequest>
    const finish = (result: OutboundStreamResult): void => {
      if (settled) return
      settled = true
      clearTimeout(deadline)
      resolve(result)
    }
    let answer: IncomingMessage | null = null
    const onAbort = (): void => {
      finish({ kind: 'failed', code: 'ABORT_ERR', reason: 'the call was aborted' })
      const error = Object.assign(new Error('the call was aborted'), { code: 'ABORT_ERR', name: 'AbortError' })
      // After the headers the body's reader is told why it ends; the connection goes either way.
      answer?.destroy(error)
      call.destroy(error)
    }
    try {
      call = open(url, target, request)
    } catch (error) {
      resolve({ kind: 'failed', code: (error as NodeJS.ErrnoException).code ?? 'EREQUEST', reason: (error as Error).message })
      return
    }
    const deadline = setTimeout(() => {
      finish({ kind: 'failed', code: 'ETIMEDOUT', reason: `no answer within ${limits.headersTimeoutMs} ms` })
      call.destroy()
    }, limits.headersTimeoutMs)
    limits.signal?.addEventListener('abort', onAbort, { once: true })
    call.on('close', () => limits.signal?.removeEventListener('abort', onAbort))
    call.on('error', (error: NodeJS.ErrnoException) => { finish({ kind: 'failed', code: error.code ?? 'ECONNECTION', reason: error.message }) })
    call.on('response', (response) => {
      answer = response
      let size = 0
      response.setTimeout(limits.idleTimeoutMs, () => {
        response.destroy(Object.assign(new Error(`the answer was silent for ${limits.idleTimeoutMs} ms`), { code: 'ETIMEDOUT' }))
      })
      // The reader gets the body through a counter: past the cap it errors, and an error on either side ends both.
      const counted = new Transform({
        transform (chunk: Buffer, _encoding, callback) {
          size += chunk.length
          if (size > limits.maxResponseBytes) callback(Object.assign(new Error(`the answer passed ${limits.maxResponseBytes} bytes`), { code: 'E2BIG' }))
          else callback(null, chunk)
        }
      })
      pipeline(response, counted, () => {})
      finish({ kind: 'answered', status: response.statusCode ?? 0, statusMessage: response.statusMessage ?? '', headers: response.headers, body: counted })
    })
    send(call, request.body)
  })
}
