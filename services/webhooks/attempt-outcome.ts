import { isoString } from '../platform/iso-dates.js'
import type { OutboundResult } from '../outbound/http.js'
import type { WebhookAttemptT } from '../../schemas/webhooks.js'
import type { AttemptRecord } from './records.js'

/** What an attempt's answer means for its delivery, and how the log shows an attempt: pure, apart from the deliverer's writes. */

export type Verdict = { outcome: 'delivered' } | { outcome: 'retry', why: string, retryAfterMs: number | null } | { outcome: 'failed', why: string }

/** `Retry-After` as seconds or an HTTP date, in ms from `now`; null when absent or unreadable. */
export function retryAfterMs (value: string | string[] | undefined, now: number): number | null {
  const text = Array.isArray(value) ? value[0] : value
  if (text === undefined || text.trim() === '') return null
  if (/^\d+$/.test(text.trim())) return Number(text.trim()) * 1000
  const at = Date.parse(text)
  return Number.isNaN(at) ? null : Math.max(0, at - now)
}

/** What an attempt's result means: a 2xx is delivered; network errors, timeouts, 408, 429 and 5xx are retried; the rest fails. */
export function judge (result: OutboundResult, now: number): Verdict {
  if (result.kind === 'refused') return { outcome: 'failed', why: `${result.reason}, which this server does not call; the operator may allow the host with WEBHOOK_ALLOWED_HOSTS` }
  if (result.kind === 'failed') return result.code === 'EPROTOCOL' ? { outcome: 'failed', why: result.reason } : { outcome: 'retry', why: `${result.code}: ${result.reason}`, retryAfterMs: null }
  const { status } = result
  if (status >= 200 && status < 300) return { outcome: 'delivered' }
  if (status === 408 || status === 429 || status >= 500) return { outcome: 'retry', why: `answered ${status}`, retryAfterMs: retryAfterMs(result.headers['retry-after'], now) }
  if (status >= 300 && status < 400) return { outcome: 'failed', why: `answered ${status}: redirects are not followed, give the webhook the final URL` }
  return { outcome: 'failed', why: `answered ${status}` }
}

export function toAttemptView (record: AttemptRecord): WebhookAttemptT {
  return {
    id: record._id,
    deliveryId: record.deliveryId,
    webhookId: record.subscriptionId,
    type: record.type,
    attempt: record.attempt,
    trigger: record.trigger,
    url: record.url,
    startedAt: isoString(record.startedAt),
    durationMs: record.durationMs,
    outcome: record.outcome,
    responseStatus: record.responseStatus,
    error: record.error,
    responseExcerpt: record.responseExcerpt,
    responseTruncated: record.responseTruncated,
    retryAt: record.retryAt === null ? null : isoString(record.retryAt)
  }
}
