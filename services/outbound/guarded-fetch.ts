import { Readable } from 'node:stream'
import type { AddressGuard } from './internal-addresses.js'
import { outboundStream, type OutboundStreamLimits } from './http.js'

/** Why a provider call got no answer, as the AI SDK's retry and error paths see it (a thrown fetch). */
export class ProviderUnreachable extends Error {
  constructor (readonly code: string, readonly reason: string, readonly refused: boolean) {
    super(reason)
    this.name = code === 'ABORT_ERR' ? 'AbortError' : 'ProviderUnreachable'
  }
}

function headerRecord (headers: ConstructorParameters<typeof Headers>[0]): Record<string, string> {
  const record: Record<string, string> = {}
  new Headers(headers).forEach((value, name) => { record[name] = value })
  return record
}

async function bodyOf (body: RequestInit['body'] | ArrayBuffer): Promise<string | Buffer | undefined> {
  if (body === undefined || body === null) return undefined
  if (typeof body === 'string') return body
  return Buffer.from(await new Response(body).arrayBuffer())
}

/**
 * A `fetch` for the AI SDK's providers that goes through the one outbound
 * path (outboundStream: the address guard, pinned resolution, no redirect)
 * and hands the body over as it streams, so a provider's server-sent events
 * reach the run chunk by chunk. A refused host or a failed connection is a
 * thrown error, as `fetch` throws on a network failure.
 */
export function guardedFetch (guard: AddressGuard, limits: Omit<OutboundStreamLimits, 'signal'>): typeof fetch {
  return async (input, init) => {
    const request = input instanceof Request ? input : null
    const url = request?.url ?? (input instanceof URL ? input.href : String(input))
    const method = init?.method ?? request?.method ?? 'GET'
    const headers = headerRecord(init?.headers ?? request?.headers)
    const body = await bodyOf(init?.body ?? (request === null ? undefined : await request.arrayBuffer()))
    const signal = init?.signal ?? request?.signal ?? undefined
    const result = await outboundStream(guard, { method, url, headers, ...(body === undefined ? {} : { body }) }, { ...limits, ...(signal === undefined || signal === null ? {} : { signal }) })
    if (result.kind !== 'answered') throw new ProviderUnreachable(result.kind === 'refused' ? 'EREFUSED' : result.code, result.reason, result.kind === 'refused')
    const responseHeaders = new Headers()
    for (const [name, value] of Object.entries(result.headers)) {
      if (value === undefined) continue
      for (const one of Array.isArray(value) ? value : [value]) responseHeaders.append(name, one)
    }
    const empty = result.status === 204 || result.status === 304 || method === 'HEAD'
    if (empty) result.body.resume()
    // A 3xx is an answer like any other: no redirect is followed.
    return new Response(empty ? null : Readable.toWeb(result.body) as ReadableStream<Uint8Array>, { status: result.status, statusText: result.statusMessage, headers: responseHeaders })
  }
}
