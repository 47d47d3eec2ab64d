import type { Clock } from './clock.js'

// Entries are found by the token's last characters (a JWT's signature) and confirmed against the whole token:
// hashing a whole JWT, some 250 characters, for every lookup costs more than the rest of the lookup.
const KEY_CHARS = 24

/** The key a long token is looked up by; the entry it finds must still be compared with the whole token. */
export function tokenKey (token: string): string {
  return token.length <= KEY_CHARS ? token : token.slice(-KEY_CHARS)
}

/**
 * Remembers the claims of signed tokens that already passed full verification,
 * until they expire. A hit needs the exact same token string, so a tampered
 * token always misses and is verified (and refused) in full; the HMAC check
 * is the most expensive part of an authenticated request otherwise.
 */
export class VerifiedTokenCache<Claims extends { exp?: number }> {
  private readonly entries = new Map<string, { token: string, claims: Claims }>()

  constructor (private readonly clock: Clock, private readonly maxEntries = 10_000) {}

  get (token: string): Claims | undefined {
    const key = tokenKey(token)
    const entry = this.entries.get(key)
    if (entry === undefined || entry.token !== token) return undefined
    const { claims } = entry
    if (claims.exp === undefined || claims.exp * 1000 <= this.clock.nowMs()) {
      this.entries.delete(key)
      return undefined
    }
    return claims
  }

  /** Only for tokens that just verified; one without an expiry is never cached. */
  remember (token: string, claims: Claims): void {
    if (claims.exp === undefined) return
    const key = tokenKey(token)
    // Map keeps insertion order, so the first key is the oldest entry.
    if (this.entries.size >= this.maxEntries && !this.entries.has(key)) this.entries.delete(this.entries.keys().next().value as string)
    this.entries.set(key, { token, claims })
  }
}
