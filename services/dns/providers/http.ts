import type { AppError } from '../../platform/errors.js'
import type { AddressGuard } from '../../outbound/internal-addresses.js'
import { outboundRequest } from '../../outbound/http.js'
import { refusalReason } from '../endpoint-guard.js'
import { dnsErrors } from '../errors.js'

// A provider that has not answered in this long is reported as failing, not waited for.
const TIMEOUT_MS = 15_000
const MAX_MESSAGE = 300
// Far above any real zone listing; a provider answering more is broken or hostile, and would be held in memory.
const MAX_ANSWER_BYTES = 16 * 1024 * 1024

export interface ProviderAnswer { status: number, body: unknown, text: string }

/**
 * One HTTP call to a provider's API, through the one outbound path: the
 * endpoint's host is checked by the address guard and the connection goes to
 * the checked addresses only, with no redirect followed. A refused host, a
 * network failure, a timeout or an oversized answer is a 502 naming the
 * provider and the reason; statuses are the caller's to read.
 */
export async function callProvider (guard: AddressGuard, label: string, url: string, init: { method: string, headers: Record<string, string>, body?: string }): Promise<ProviderAnswer> {
  const result = await outboundRequest(guard, { method: init.method, url, headers: init.headers, ...(init.body === undefined ? {} : { body: init.body }) }, { timeoutMs: TIMEOUT_MS, maxResponseBytes: MAX_ANSWER_BYTES })
  if (result.kind === 'refused') throw dnsErrors.providerFailed({ reason: `The provider's endpoint may not be called: ${refusalReason(new URL(url).hostname, result.address)}` })
  if (result.kind === 'failed') {
    const why = result.code === 'ETIMEDOUT' ? `no answer within ${TIMEOUT_MS / 1000} s` : result.code
    throw dnsErrors.providerFailed({ reason: `Could not reach ${label} at ${new URL(url).host}: ${why}` })
  }
  if (result.truncated) throw dnsErrors.providerFailed({ reason: `${label} answered more than ${MAX_ANSWER_BYTES / 1024 / 1024} MB` })
  const text = result.body.toString('utf8')
  let body: unknown = null
  try { body = text === '' ? null : JSON.parse(text) } catch { body = null }
  return { status: result.status, body, text }
}

/** A provider's refusal as one short line: its status and its own words. */
export function refusal (label: string, answer: ProviderAnswer, said: string | undefined): AppError {
  const words = (said ?? answer.text).replace(/\s+/g, ' ').trim().slice(0, MAX_MESSAGE)
  if (answer.status === 401 || answer.status === 403) return dnsErrors.providerFailed({ reason: `${label} refused the credentials (${answer.status})${words === '' ? '' : `: ${words}`}` })
  return dnsErrors.providerFailed({ reason: `${label} answered ${answer.status}${words === '' ? '' : `: ${words}`}` })
}
