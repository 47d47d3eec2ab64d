import { lookup } from 'node:dns/promises'
import { BlockList, isIP } from 'node:net'

/**
 * Provider endpoints are URLs a project's admin types, and the server calls
 * them: left open, that lets a tenant reach the server's own network
 * (loopback services, cloud metadata at 169.254.169.254, private ranges). So
 * an endpoint whose host resolves to any such address is refused unless the
 * operator named that host in DNS_PROVIDER_PRIVATE_HOSTS (a PowerDNS on the
 * internal network, say). The check runs when a provider is saved and again
 * before each use, since a name may be pointed elsewhere later.
 */
const INTERNAL = new BlockList()
for (const [network, prefix] of [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4]
] as const) INTERNAL.addSubnet(network, prefix, 'ipv4')
for (const [network, prefix] of [['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8]] as const) INTERNAL.addSubnet(network, prefix, 'ipv6')

function isInternal (address: string): boolean {
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address)
  if (mapped !== null) return INTERNAL.check(mapped[1], 'ipv4')
  return INTERNAL.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4')
}

/** Why the endpoint may not be called, or null when it may. */
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
  const internal = addresses.find(isInternal)
  return internal === undefined ? null : `its host "${host}" is an internal address (${internal}); the operator may allow it with DNS_PROVIDER_PRIVATE_HOSTS`
}
