import { createHmac, timingSafeEqual } from 'node:crypto'
import { generateToken } from '../platform/crypto.js'

/**
 * Webhook signatures, for the engine and for receivers written in
 * TypeScript (docs/webhooks.md has the recipe for any language). A request
 * carries `Plinth-Signature: t=<unix seconds>,v1=<hex>[,v1=<hex>]`: each
 * `v1` is HMAC-SHA256, keyed with one active secret (the whole `whsec_…`
 * string as UTF-8), over `<t>.<raw body>`. During a rotation two secrets are
 * active and both signatures are sent, so a receiver holding either verifies.
 */

export const SIGNATURE_HEADER = 'plinth-signature'
export const EVENT_ID_HEADER = 'plinth-event-id'
export const EVENT_TYPE_HEADER = 'plinth-event-type'
export const ATTEMPT_HEADER = 'plinth-delivery-attempt'
export const REQUEST_ID_HEADER = 'plinth-request-id'
export const SECRET_PREFIX = 'whsec'
/** How far a signature's time may be from the receiver's clock, by default: a replayed request older than this is refused. */
export const DEFAULT_TOLERANCE_SECONDS = 300

export function newWebhookSecret (): string {
  return generateToken(SECRET_PREFIX, 32)
}

export function signature (secret: string, timestamp: number, rawBody: string | Buffer): string {
  return createHmac('sha256', secret).update(`${timestamp}.`).update(rawBody).digest('hex')
}

/** The header's value: the time, then one `v1=` per secret. */
export function signatureHeader (secrets: readonly string[], timestamp: number, rawBody: string | Buffer): string {
  return [`t=${timestamp}`, ...secrets.map((secret) => `v1=${signature(secret, timestamp, rawBody)}`)].join(',')
}

export type Verification = { ok: true, timestamp: number } | { ok: false, reason: string }

/**
 * What a receiver runs on each request, before parsing the body: the raw
 * body as received, the header, the secrets it holds (two while it rotates),
 * and its clock. Compares in constant time; refuses a time further than the
 * tolerance from `nowSeconds`.
 */
export function verifyWebhookSignature (input: {
  header: string | undefined
  rawBody: string | Buffer
  secrets: readonly string[]
  nowSeconds?: number
  toleranceSeconds?: number
}): Verification {
  if (input.header === undefined || input.header === '') return { ok: false, reason: 'no signature header' }
  let timestamp: number | null = null
  const signatures: Buffer[] = []
  for (const part of input.header.split(',')) {
    const [key, value] = part.trim().split('=', 2)
    if (key === 't' && /^\d{1,12}$/.test(value ?? '')) timestamp = Number(value)
    else if (key === 'v1' && /^[0-9a-f]{64}$/.test(value ?? '')) signatures.push(Buffer.from(value, 'hex'))
  }
  if (timestamp === null) return { ok: false, reason: 'no timestamp in the signature header' }
  if (signatures.length === 0) return { ok: false, reason: 'no v1 signature in the signature header' }
  const now = input.nowSeconds ?? Math.floor(Date.now() / 1000)
  if (Math.abs(now - timestamp) > (input.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) return { ok: false, reason: 'the timestamp is outside the tolerance' }
  for (const secret of input.secrets) {
    const expected = Buffer.from(signature(secret, timestamp, input.rawBody), 'hex')
    if (signatures.some((candidate) => timingSafeEqual(candidate, expected))) return { ok: true, timestamp }
  }
  return { ok: false, reason: 'no signature matches' }
}
