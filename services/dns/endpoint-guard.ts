import { lookup } from 'node:dns/promises'
import { isIP } from 'node:net'
import { internalKind } from '../internal-addresses.js'

/**
 * Provider endpoints are URLs a project's admin types, and the server calls
 * them: left open, that lets a tenant reach the server's own network
 * (loopback services, cloud metadata at 169.254.169.254, private ranges). So
 * an endpoint whose host resolves to any such address is refused unless the
 * operator named that host in DNS_PROVIDER_PRIVATE_HOSTS (a PowerDNS on the
 * internal network, say). The check runs when a provider is saved and again
 * before each use, since a name may be pointed elsewhere later. Which
 * addresses are internal is services/internal-addresses.ts's one table.
 *
 * Answers why the endpoint may not be called, or null when it may.
 */
export async function internalEndpointProblem (endpoint: string, allowedHosts: readonly string[]): Promise<string | null> {
  const host = new URL(endpoint).hostname.replace(/^\[|\]$/g, '').toLowerCase()
  if (allowedHosts.includes(host)) return null
  let addresses: string[]
  try {
    addresses = isIP(host) !== 0 ? [host] : (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address)
  } catch {
    // A name that does not resolve reaches nothing; the call itself then fails and says so.
    return null
  }
  const internal = addresses.find((address) => internalKind(address) !== null)
  return internal === undefined ? null : `its host "${host}" is an internal address (${internal}); the operator may allow it with DNS_PROVIDER_PRIVATE_HOSTS`
}
