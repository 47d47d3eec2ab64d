import createFetchClient, { type Client } from 'openapi-fetch'
import type { paths } from '../generated/plinth.js'
import { PlinthError, SERVER_CODES } from './errors.js'

export type PlinthPaths = paths
export type FetchClient = Client<paths>

export interface RetryOptions {
  /** Attempts after the first; 0 turns retries off. Default 2. */
  retries?: number
  /** The longest `Retry-After` (seconds) the SDK waits for; a longer one is reported as the error. Default 30. */
  maxDelaySeconds?: number
}

export interface HttpOptions {
  /** Where the server listens, e.g. `https://plinth.example.com`. */
  baseUrl: string
  /** A fetch of your own (a test's, an agent's); globalThis.fetch by default. */
  fetch?: (request: Request) => Promise<Response>
  retry?: RetryOptions
}

/** Methods whose repetition changes nothing more than the first call did (RFC 9110 §9.2.2). */
const IDEMPOTENT = new Set(['GET', 'HEAD', 'OPTIONS', 'PUT', 'DELETE'])

/** `Retry-After` as seconds (delta or HTTP date), or null when absent or unreadable. */
function retryAfterSeconds (response: Response, now = Date.now()): number | null {
  const value = response.headers.get('retry-after')
  if (value === null || value.trim() === '') return null
  if (/^\d+$/.test(value.trim())) return Number(value.trim())
  const at = Date.parse(value)
  return Number.isNaN(at) ? null : Math.max(0, (at - now) / 1000)
}

const sleep = async (ms: number, signal?: AbortSignal | null): Promise<void> => await new Promise((resolve, reject) => {
  const timer = setTimeout(resolve, ms)
  signal?.addEventListener('abort', () => { clearTimeout(timer); reject(signal.reason) }, { once: true })
})

/**
 * A fetch that retries where repeating is safe: an idempotent method that got
 * no answer, or a 429/503 with `Retry-After` (after that many seconds, up to
 * maxDelaySeconds); a 429 also for other methods, since the server refused it
 * before doing anything. Everything else is tried once.
 */
export function retryingFetch (inner: (request: Request) => Promise<Response>, options: RetryOptions = {}): (request: Request) => Promise<Response> {
  const retries = options.retries ?? 2
  const maxDelay = options.maxDelaySeconds ?? 30
  return async (request) => {
    const idempotent = IDEMPOTENT.has(request.method)
    for (let attempt = 0; ; attempt++) {
      const last = attempt >= retries
      // A body can be read once: keep a copy for the next attempt while one may follow.
      const spare = last ? null : request.clone()
      let response: Response
      try {
        response = await inner(request)
      } catch (error) {
        if (last || !idempotent || request.signal.aborted || spare === null) throw error
        request = spare
        continue
      }
      if (last || spare === null || (response.status !== 429 && response.status !== 503)) return response
      if (response.status === 503 && !idempotent) return response
      const wait = retryAfterSeconds(response)
      if (wait === null || wait > maxDelay) return response
      await response.body?.cancel()
      await sleep(wait * 1000, request.signal)
      request = spare
    }
  }
}

export interface Http {
  /** The typed client over every path of the contract (retries as above, the bearer token set). */
  api: FetchClient
  /** The same fetch without retries, for callers that resume by themselves (upload chunks). */
  once: (request: Request) => Promise<Response>
  /** The fetch `api` sends with: the bearer token, retries where safe. */
  fetch: (request: Request) => Promise<Response>
  baseUrl: string
}

/**
 * Whether a 401 refused the bearer token for what a refresh may cure (it
 * expired, was revoked): not the password of a login, say, nor a token of
 * another kind than the route takes (APP_WRONG_TOKEN_KIND), which a refresh
 * only replaces by another of the same kind.
 */
async function refusesToken (response: Response): Promise<boolean> {
  const body: unknown = await response.clone().json().catch(() => null)
  return typeof body === 'object' && body !== null && (body as { code?: unknown }).code === SERVER_CODES.invalidToken
}

export interface Credential {
  /** The bearer token to send, or null for none. */
  token?: () => Promise<string | null> | string | null
  /** After a 401 APP_INVALID_TOKEN to a call sent with `sent`: a token to send the call once more with, or null to report the 401. */
  renew?: (sent: string) => Promise<string | null>
}

/**
 * The typed openapi-fetch client every SDK entry builds on, with retries and
 * a bearer token when `token` gives one. A call the server answers 401
 * APP_INVALID_TOKEN is sent once more when `renew` gives another token (a
 * session refreshed); any other refusal, a token of the wrong kind among
 * them, is reported as it came, with nothing refreshed.
 */
export function createHttp (options: HttpOptions & Credential): Http {
  const base = options.fetch ?? (async (request: Request) => await globalThis.fetch(request))
  const { token, renew } = options
  const authorized = (send: (request: Request) => Promise<Response>) => async (request: Request): Promise<Response> => {
    let sent: string | null = null
    if (token !== undefined && !request.headers.has('authorization')) {
      sent = await token()
      if (sent !== null) request.headers.set('authorization', `Bearer ${sent}`)
    }
    try {
      if (sent === null || renew === undefined) return await send(request)
      // A body is read once: keep a copy in case the call has to be sent again.
      const again = request.clone()
      const response = await send(request)
      if (response.status !== 401 || request.signal.aborted || !await refusesToken(response)) return response
      const renewed = await renew(sent)
      // A refresh within the same second can issue the very token just refused: sending it again would change nothing.
      if (renewed === null || renewed === sent) return response
      await response.body?.cancel()
      again.headers.set('authorization', `Bearer ${renewed}`)
      return await send(again)
    } catch (error) {
      if (error instanceof PlinthError || request.signal.aborted) throw error
      const reason = error instanceof Error ? error.message : String(error)
      throw new PlinthError(0, 'SDK_NETWORK', `no answer from ${new URL(request.url).host}: ${reason}`, undefined, { cause: error })
    }
  }
  const once = authorized(base)
  const baseUrl = options.baseUrl.replace(/\/+$/, '')
  const fetch = authorized(retryingFetch(base, options.retry))
  const api = createFetchClient<paths>({ baseUrl, fetch })
  return { api, once, fetch, baseUrl }
}

interface Answer<T> { data?: T, error?: unknown, response: Response }

/** The `data` of a `{ success: true, data }` answer, or the answer's PlinthError. */
export async function unwrap<T> (answer: Promise<Answer<{ success: true, data: T }>>): Promise<T> {
  const { data, error, response } = await answer
  if (data === undefined || !response.ok) throw PlinthError.fromAnswer(response, error)
  return data.data
}

/** A JSON call on a path built by the caller (the SDK's generic helpers), answered like `unwrap`. */
export async function callJson<T> (http: Http, method: string, path: string, body?: unknown): Promise<T> {
  const request = new Request(`${http.baseUrl}${path}`, {
    method,
    headers: body === undefined ? {} : { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body)
  })
  const response = await http.fetch(request)
  const parsed: unknown = await response.json().catch(() => null)
  if (!response.ok) throw PlinthError.fromAnswer(response, parsed)
  return (parsed as { data: T }).data
}

/** For answers without a body (204): throws the answer's PlinthError, or returns nothing. */
export async function expectOk (answer: Promise<Answer<unknown>>): Promise<void> {
  const { error, response } = await answer
  if (!response.ok) throw PlinthError.fromAnswer(response, error)
}
