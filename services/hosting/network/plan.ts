import { isIPv4 } from 'node:net'
import { INTERNAL_RANGES, internalKind } from '../../outbound/internal-addresses.js'

/**
 * What an instance's network namespace holds, as data: the link the gateway
 * reaches it by, slirp4netns's user-mode network for its way out, the routes
 * it refuses and its own firewall. Kept apart from what carries it out
 * (`namespaces.ts`) so the rules can be read and tested on their own.
 */

export interface Ipv4Range { network: string, prefix: number }

/**
 * The point-to-point links between the host and instances: one /31 each, the
 * host's end even, the instance's odd. Link-local space, which no router
 * forwards, and below 169.254.128.0 so the cloud metadata addresses
 * (169.254.169.254, 169.254.170.2) are never taken.
 */
export const LINK_POOL: Ipv4Range = { network: '169.254.0.0', prefix: 17 }
export const LINK_COUNT = 2 ** (32 - LINK_POOL.prefix) / 2
/** The port an app listens on inside its namespace; the namespace's own, so every instance can have it. */
export const INSTANCE_PORT = 8080
/** The instance's end of its link, inside the namespace. */
export const INSTANCE_LINK = 'eth0'
/** slirp4netns's defaults: the network it emulates, its gateway (the host, refused), its DNS forwarder. */
export const SLIRP = { tap: 'tap0', network: { network: '10.0.2.0', prefix: 24 }, gateway: '10.0.2.2', dns: '10.0.2.3', mtu: 65520 } as const

export function ipv4ToInt (address: string): number {
  return address.split('.').reduce((value, part) => value * 256 + Number(part), 0)
}

export function intToIpv4 (value: number): string {
  return [value >>> 24, (value >>> 16) & 255, (value >>> 8) & 255, value & 255].join('.')
}

function bounds (range: Ipv4Range): [number, number] {
  const size = 2 ** (32 - range.prefix)
  const first = Math.floor(ipv4ToInt(range.network) / size) * size
  return [first, first + size - 1]
}

export function contains (outer: Ipv4Range, inner: Ipv4Range): boolean {
  const [o0, o1] = bounds(outer)
  const [i0, i1] = bounds(inner)
  return o0 <= i0 && i1 <= o1
}

export const rangeText = (range: Ipv4Range): string => `${range.network}/${range.prefix}`

/** `10.1.2.3` or `10.1.0.0/16` as a range (the network part masked), or null for anything else. */
export function parseIpv4Range (text: string): Ipv4Range | null {
  const [address, prefixText, ...rest] = text.trim().split('/')
  if (rest.length > 0 || !isIPv4(address)) return null
  const prefix = prefixText === undefined ? 32 : /^\d{1,2}$/.test(prefixText) ? Number(prefixText) : NaN
  if (!(prefix >= 0 && prefix <= 32)) return null
  return { network: intToIpv4(bounds({ network: address, prefix })[0]), prefix }
}

/**
 * Why an operator's allowance means nothing, or null. The links to instances
 * and slirp4netns's own network stay refused whatever is allowed, so a range
 * inside one of them could never be reached.
 */
export function allowanceConflict (range: Ipv4Range): string | null {
  if (contains(LINK_POOL, range)) return `it lies in ${rangeText(LINK_POOL)}, the links between the gateway and instances, which stay refused`
  if (contains(SLIRP.network, range)) return `it lies in ${rangeText(SLIRP.network)}, the user-mode network instances reach the internet through, which stays refused`
  return null
}

export function linkAddresses (index: number): { host: string, instance: string } {
  const base = ipv4ToInt(LINK_POOL.network) + 2 * index
  return { host: intToIpv4(base), instance: intToIpv4(base + 1) }
}

export interface NetworkPolicy {
  /** Internal ranges the operator lets apps reach (HOSTING_APP_ALLOWED_RANGES). */
  allowed: Ipv4Range[]
  /** The host's own IPv4 addresses: slirp4netns connects from the host, so it would reach them. */
  hostAddresses: string[]
}

/**
 * The links to instances, then every IPv4 range of the internal-address
 * table (but loopback, which inside the namespace is the app's own) and each
 * of the host's own addresses, less what the operator allows.
 */
export function refusedRanges (policy: NetworkPolicy): Ipv4Range[] {
  const allowed = (range: Ipv4Range): boolean => policy.allowed.some((one) => contains(one, range))
  const table = INTERNAL_RANGES.filter((entry) => entry.family === 'ipv4' && entry.kind !== 'loopback').map(({ network, prefix }) => ({ network, prefix }))
  const own = policy.hostAddresses.filter((address) => isIPv4(address) && internalKind(address) !== 'loopback').map((address) => ({ network: address, prefix: 32 }))
  // The links to instances first, allowed or not: no app reaches another's link through slirp4netns.
  const refused: Ipv4Range[] = [LINK_POOL]
  for (const range of [...table, ...own]) {
    if (!allowed(range) && !refused.some((one) => contains(one, range))) refused.push(range)
  }
  return refused
}

/** `ip -batch` lines run inside the namespace before anything is connected to it. */
export function namespaceRoutes (policy: NetworkPolicy, link: { instance: string } | null): string[] {
  const lines = ['link set lo up', ...refusedRanges(policy).map((range) => `route add prohibit ${rangeText(range)}`)]
  if (link !== null) lines.push(`address add ${link.instance}/31 dev ${INSTANCE_LINK}`, `link set ${INSTANCE_LINK} up`)
  return lines
}

/** `ip -batch` lines for the allowed ranges, once slirp4netns's interface exists. */
export function allowedRoutes (policy: NetworkPolicy): string[] {
  return policy.allowed.map((range) => `route add ${rangeText(range)} via ${SLIRP.gateway} dev ${SLIRP.tap}`)
}

/**
 * The namespace's own firewall (iptables-restore input). Inbound: only new
 * connections from the gateway's end of the link to the app's port. Outbound
 * on the link: only replies, so the app never opens a connection to the
 * host. Toward slirp4netns: its DNS forwarder on port 53 and nothing else of
 * its network (it maps other addresses there to the host), no broadcast or
 * multicast, and the refused ranges again behind the routes.
 */
export function firewallRules (policy: NetworkPolicy, link: { host: string } | null): string {
  const rules = [
    '*filter',
    ':INPUT DROP [0:0]',
    ':FORWARD DROP [0:0]',
    ':OUTPUT ACCEPT [0:0]',
    '-A INPUT -i lo -j ACCEPT',
    '-A INPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT',
    ...(link === null ? [] : [`-A INPUT -i ${INSTANCE_LINK} -s ${link.host}/32 -p tcp --dport ${INSTANCE_PORT} -m conntrack --ctstate NEW -j ACCEPT`]),
    '-A OUTPUT -o lo -j ACCEPT',
    `-A OUTPUT -o ${INSTANCE_LINK} -m conntrack --ctstate ESTABLISHED -j ACCEPT`,
    `-A OUTPUT -o ${INSTANCE_LINK} -j REJECT`,
    `-A OUTPUT -d ${SLIRP.dns}/32 -p udp --dport 53 -j ACCEPT`,
    `-A OUTPUT -d ${SLIRP.dns}/32 -p tcp --dport 53 -j ACCEPT`,
    `-A OUTPUT -d ${rangeText(SLIRP.network)} -j REJECT`,
    `-A OUTPUT -d ${rangeText(LINK_POOL)} -j REJECT`,
    '-A OUTPUT -d 255.255.255.255/32 -j DROP',
    '-A OUTPUT -d 224.0.0.0/4 -j DROP',
    ...policy.allowed.map((range) => `-A OUTPUT -d ${rangeText(range)} -j ACCEPT`),
    ...refusedRanges(policy).map((range) => `-A OUTPUT -d ${rangeText(range)} -j REJECT`),
    'COMMIT',
    ''
  ]
  return rules.join('\n')
}
