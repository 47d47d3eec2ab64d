/**
 * The name a request is routed by: the Host header (or a TLS server name)
 * lower-cased, without its port and without the trailing dot of a fully
 * qualified name, so `Example.COM.:8080` and `example.com` find one route.
 */
export function routeHost (header: string | undefined): string | null {
  if (header === undefined || header === '') return null
  let host = header.toLowerCase()
  if (host.charCodeAt(0) === 0x5b) {
    // An IPv6 literal keeps its brackets; only what follows `]` can be a port.
    const end = host.indexOf(']')
    if (end === -1) return null
    host = host.slice(0, end + 1)
  } else {
    const colon = host.indexOf(':')
    if (colon !== -1) host = host.slice(0, colon)
  }
  if (host.charCodeAt(host.length - 1) === 0x2e) host = host.slice(0, -1)
  return host === '' ? null : host
}

/** The same request over HTTPS: the host as routed (no port, lower case), the TLS listener's port unless it is the default. */
export function httpsUrl (host: string, port: number, path: string): string {
  return `https://${host}${port === 443 ? '' : `:${port}`}${path}`
}
