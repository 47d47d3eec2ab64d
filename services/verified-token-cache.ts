import type { Clock } from './clock.js'

/**
 * Remembers the claims of signed tokens that already passed full verification,
 * until they expire. A hit needs the exact same token string, so a tampered
 * token always misses and is verified (and refused) in full; the HMAC check
 * is the most expensive part of an authenticated request otherwise.
 */
export class VerifiedTokenCache<Claims extends { exp?: number }> {
  private readonly entries = new Map<string, Claims>()

  constructor (private readonly clock: Clock, private readonly maxEntries = 10_000) {}

  get (token: string): Claims | undefined {
    const claims = this.entries.get(token)
    if (claims === undefined) return undefined
    if (claims.exp === undefined || claims.exp * 1000 <= this.clock.nowMs()) {
      this.entries.delete(token)
      return undefined
    }
    return claims
  }

  /** Only for tokens that just verified; one without an expiry is never cached. */
  remember (token: string, claims: Claims): void {
    if (claims.exp === undefined) return
    // Map keeps insertion order, so the first key is the oldest entry.
    if (this.entries.size >= this.maxEntries) this.entries.delete(this.entries.keys().next().value as string)
    this.entries.set(token, claims)
  }
}
