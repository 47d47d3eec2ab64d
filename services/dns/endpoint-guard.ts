import type { AddressGuard } from '../outbound/internal-addresses.js'

/**
 * Provider endpoints are URLs a project's admin types, and the server calls
 * them: left open, that lets a tenant reach the server's own network
 * (loopback services, cloud metadata at 169.254.169.254, private ranges). The
 * one address guard (services/outbound/internal-addresses.ts) judges them, opened only
 * for the hosts and ranges the operator named in DNS_PROVIDER_PRIVATE_HOSTS (a
 * PowerDNS on the internal network, say). It runs when a provider is saved,
 * for a clear refusal then, and again inside every call, which connects only
 * to the addresses just checked (providers/http.ts).
 *
 * Answers why the endpoint may not be called, or null when it may. A name
 * that does not resolve reaches nothing: the call itself then fails and says so.
 */
export async function internalEndpointProblem (guard: AddressGuard, endpoint: string): Promise<string | null> {
  const verdict = await guard.check(endpoint)
  if (verdict.ok || verdict.unresolved) return null
  return refusalReason(new URL(endpoint).hostname, verdict.address)
}

export function refusalReason (hostname: string, address: string): string {
  return `its host "${hostname.replace(/^\[|\]$/g, '')}" is an internal address (${address}); the operator may allow it with DNS_PROVIDER_PRIVATE_HOSTS`
}
