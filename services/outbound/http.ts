import { request as httpRequest, type IncomingHttpHeaders } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { isIP, type LookupFunction } from 'node:net'
import type { AddressGuard, InternalKind } from './internal-addresses.js'

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
  body?: string | Buffer
}

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

export async function outboundRequest (guard: AddressGuard, request: OutboundRequest, limits: OutboundLimits): Promise<OutboundResult> {
  const url = new URL(request.url)
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return { kind: 'failed', code: 'EPROTOCOL', reason: `${url.protocol} URLs are not called` }
  const verdict = await guard.check(url)
  if (!verdict.ok) {
    if (verdict.unresolved) return { kind: 'failed', code: 'ENOTFOUND', reason: `the host ${url.hostname} does not resolve` }
    return { kind: 'refused', internal: verdict.kind, address: verdict.address, reason: `the host ${url.hostname} reaches ${verdict.address}, a ${verdict.kind} address` }
  }
  const { target } = verdict
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest
  return await new Promise<OutboundResult>((resolve) => {
    let settled = false
    const finish = (result: OutboundResult): void => {
      if (settled) return
      settled = true
      clearTimeout(deadline)
      resolve(result)
    }
    let call: ReturnType<typeof send>
    try {
      call = send({
        protocol: url.protocol,
        hostname: target.host,
        port: target.port,
        path: `${url.pathname}${url.search}`,
        method: request.method,
        headers: request.body === undefined ? request.headers : { ...request.headers, 'content-length': String(Buffer.byteLength(request.body)) },
        // A fresh connection per call: a pooled socket could outlive the check that allowed its address.
        agent: false,
        ...(target.addresses.length > 0 ? { lookup: pinnedLookup(target.addresses) } : {})
      })
    } catch (error) {
      // Node refuses some requests before sending (a header value it will not write): an answer like any failure.
      resolve({ kind: 'failed', code: (error as NodeJS.ErrnoException).code ?? 'EREQUEST', reason: (error as Error).message })
      return
    }
    const deadline = setTimeout(() => {
      finish({ kind: 'failed', code: 'ETIMEDOUT', reason: `no complete answer within ${limits.timeoutMs} ms` })
      call.destroy()
    }, limits.timeoutMs)
    call.on('error', (error: NodeJS.ErrnoException) => { finish({ kind: 'failed', code: error.code ?? 'ECONNECTION', reason: error.message }) })
    call.on('response', (response) => {
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
    call.end(request.body)
  })
}
