import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * Links that carry their own authority for a short while: an HMAC-SHA256,
 * under a key of the link's purpose, over what the link names and when it
 * expires. Whoever holds the link may use it until then (a browser
 * downloading an export); it cannot be altered nor made to last longer.
 */
export class SignedLinks {
  constructor (private readonly key: Buffer) {
    if (key.length < 32) throw new Error('a signed-link key needs at least 32 bytes')
  }

  /** The signature over `subject` until `expiresAt` (unix seconds), hex. */
  sign (subject: string, expiresAt: number): string {
    return createHmac('sha256', this.key).update(`${subject}\n${expiresAt}`).digest('hex')
  }

  /** Whether `signature` is this key's over `subject` and `expiresAt`, and `expiresAt` has not passed at `nowSeconds`. */
  verify (subject: string, expiresAt: number, signature: string, nowSeconds: number): boolean {
    if (!Number.isSafeInteger(expiresAt) || expiresAt < nowSeconds || !/^[0-9a-f]{64}$/.test(signature)) return false
    return timingSafeEqual(Buffer.from(this.sign(subject, expiresAt), 'hex'), Buffer.from(signature, 'hex'))
  }
}
