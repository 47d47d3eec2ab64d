/**
 * RFC 7636 proof keys for the sign-in flows (platform SSO and a project's
 * OAuth): Web Crypto only, so browsers and Node share the one path.
 */
import type { SessionStorage } from '../client/storage.js'
import { PlinthError } from './errors.js'

/** base64url of `bytes` random bytes. */
export function randomText (bytes: number): string {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)))
}

/** S256: base64url(SHA-256(verifier)). */
export async function s256 (verifier: string): Promise<string> {
  return base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))))
}

function base64url (bytes: Uint8Array): string {
  return btoa(String.fromCharCode(...bytes)).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

/**
 * A browser sign-in's two ends (platform SSO and a project's OAuth alike):
 * `start` makes a verifier, keeps it in `storage` under `keyPrefix` and a
 * flow name added to the landing URL as `plinthFlow`, and gives the landing
 * and the S256 challenge to send; `land` reads the URL landed on, forgets the
 * verifier, and gives the ticket with it, or throws the landing's `?error=`.
 */
export const signInFlow = {
  async start (storage: SessionStorage, keyPrefix: string, redirectTo: string): Promise<{ landing: string, codeChallenge: string }> {
    const flow = randomText(12)
    const verifier = randomText(32)
    await storage.set(`${keyPrefix}.${flow}`, verifier)
    const landing = new URL(redirectTo)
    landing.searchParams.set('plinthFlow', flow)
    return { landing: landing.href, codeChallenge: await s256(verifier) }
  },
  async land (storage: SessionStorage, keyPrefix: string, landedAt: string, noFlowCode: string): Promise<{ ticket: string, codeVerifier: string }> {
    const landed = new URL(landedAt)
    const key = `${keyPrefix}.${landed.searchParams.get('plinthFlow') ?? ''}`
    const codeVerifier = await storage.get(key)
    await storage.remove(key)
    const error = landed.searchParams.get('error')
    if (error !== null) throw new PlinthError(0, error, 'The sign-in did not complete')
    const ticket = landed.searchParams.get('ticket') ?? ''
    if (ticket === '' || codeVerifier === null) throw new PlinthError(0, noFlowCode, 'No sign-in started here landed at this URL')
    return { ticket, codeVerifier }
  }
}
