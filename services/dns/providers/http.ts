import type { AppError } from '../../errors.js'
import { dnsErrors } from '../errors.js'

// A provider that has not answered in this long is reported as failing, not waited for.
const TIMEOUT_MS = 15_000
const MAX_MESSAGE = 300
// Far above any real zone listing; a provider answering more is broken or hostile, and would be held in memory.
const MAX_ANSWER_BYTES = 16 * 1024 * 1024

export interface ProviderAnswer { status: number, body: unknown, text: string }

/**
 * One HTTP call to a provider's API. A network failure or a timeout is a
 * 502 naming the provider and the reason (refused, unknown host, timeout);
 * statuses are the caller's to read.
 */
export async function callProvider (label: string, url: string, init: { method: string, headers: Record<string, string>, body?: string }): Promise<ProviderAnswer> {
  let response: Response
  try {
    response = await fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(TIMEOUT_MS) })
  } catch (error) {
    const cause = (error as { cause?: { code?: string, message?: string } }).cause
    const why = (error as Error).name === 'TimeoutError' ? `no answer within ${TIMEOUT_MS / 1000} s` : cause?.code ?? cause?.message ?? (error as Error).message
    throw dnsErrors.providerFailed({ reason: `Could not reach ${label} at ${new URL(url).host}: ${why}` })
  }
  const text = await boundedText(label, response)
  let body: unknown = null
  try { body = text === '' ? null : JSON.parse(text) } catch { body = null }
  return { status: response.status, body, text }
}

/** A provider's refusal as one short line: its status and its own words. */
export function refusal (label: string, answer: ProviderAnswer, said: string | undefined): AppError {
  const words = (said ?? answer.text).replace(/\s+/g, ' ').trim().slice(0, MAX_MESSAGE)
  if (answer.status === 401 || answer.status === 403) return dnsErrors.providerFailed({ reason: `${label} refused the credentials (${answer.status})${words === '' ? '' : `: ${words}`}` })
  return dnsErrors.providerFailed({ reason: `${label} answered ${answer.status}${words === '' ? '' : `: ${words}`}` })
}

async function boundedText (label: string, response: Response): Promise<string> {
  if (response.body === null) return ''
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of response.body as AsyncIterable<Uint8Array>) {
    size += chunk.length
    if (size > MAX_ANSWER_BYTES) {
      await response.body.cancel().catch(() => {})
      throw dnsErrors.providerFailed({ reason: `${label} answered more than ${MAX_ANSWER_BYTES / 1024 / 1024} MB` })
    }
    chunks.push(Buffer.from(chunk))
  }
  return Buffer.concat(chunks).toString('utf8')
}
