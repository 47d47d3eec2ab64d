/**
 * A web origin as browsers send it in `Origin`: scheme, host and a port only
 * when it is not the scheme's default, lower-cased. `HTTPS://App.Example.com:443/`
 * becomes `https://app.example.com`; anything with a path, a query, a fragment,
 * credentials or another scheme is null.
 */
export function normalizeOrigin (raw: string): string | null {
  let url: URL
  try { url = new URL(raw.trim()) } catch { return null }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return null
  return url.href === `${url.origin}/` ? url.origin : null
}

/** Stands for every origin in a list of allowed origins; never combined with credentials. */
export const ANY_ORIGIN = '*'
