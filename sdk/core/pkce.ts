/**
 * RFC 7636 proof keys for the sign-in flows (platform SSO and a project's
 * OAuth): Web Crypto only, so browsers and Node share the one path.
 */

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
