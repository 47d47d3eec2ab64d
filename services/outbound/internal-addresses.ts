import { lookup } from 'node:dns/promises'
import { BlockList, isIP } from 'node:net'

/**
 * Which addresses a URL a tenant typed may not make the server call: every
 * range the IANA special-purpose registries mark as not globally reachable
 * (loopback, RFC 1918, carrier-grade NAT, link-local with the cloud metadata
 * service at 169.254.169.254, unique-local, multicast, documentation and
 * reserved space). An IPv6 address that carries an IPv4 one (mapped, NAT64,
 * 6to4) is judged by the IPv4 address it reaches.
 */
export type InternalKind = 'unspecified' | 'loopback' | 'private' | 'carrier-grade NAT' | 'link-local' | 'unique-local' | 'multicast' | 'documentation' | 'reserved'

const RANGES: ReadonlyArray<readonly [InternalKind, 'ipv4' | 'ipv6', string, number]> = [
  ['unspecified', 'ipv4', '0.0.0.0', 8],
  ['private', 'ipv4', '10.0.0.0', 8],
  ['carrier-grade NAT', 'ipv4', '100.64.0.0', 10],
  ['loopback', 'ipv4', '127.0.0.0', 8],
  ['link-local', 'ipv4', '169.254.0.0', 16],
  ['private', 'ipv4', '172.16.0.0', 12],
  ['reserved', 'ipv4', '192.0.0.0', 24],
  ['documentation', 'ipv4', '192.0.2.0', 24],
  ['reserved', 'ipv4', '192.88.99.0', 24],
  ['private', 'ipv4', '192.168.0.0', 16],
  ['reserved', 'ipv4', '198.18.0.0', 15],
  ['documentation', 'ipv4', '198.51.100.0', 24],
  ['documentation', 'ipv4', '203.0.113.0', 24],
  ['multicast', 'ipv4', '224.0.0.0', 4],
  ['reserved', 'ipv4', '240.0.0.0', 4],
  ['unspecified', 'ipv6', '::', 128],
  ['loopback', 'ipv6', '::1', 128],
  // IPv4-compatible addresses (deprecated) and the rest of ::/96, after the two above.
  ['reserved', 'ipv6', '::', 96],
  ['reserved', 'ipv6', '64:ff9b:1::', 48],
  ['reserved', 'ipv6', '100::', 64],
  ['reserved', 'ipv6', '2001::', 23],
  ['documentation', 'ipv6', '2001:db8::', 32],
  ['documentation', 'ipv6', '3fff::', 20],
  ['reserved', 'ipv6', '5f00::', 16],
  ['unique-local', 'ipv6', 'fc00::', 7],
  ['reserved', 'ipv6', 'fec0::', 10],
  ['link-local', 'ipv6', 'fe80::', 10],
  ['multicast', 'ipv6', 'ff00::', 8]
]

/** The table itself, for what enforces it outside this process (the routes an app's network namespace refuses). */
export const INTERNAL_RANGES: ReadonlyArray<{ kind: InternalKind, family: 'ipv4' | 'ipv6', network: string, prefix: number }> =
  RANGES.map(([kind, family, network, prefix]) => ({ kind, family, network, prefix }))

const LISTS = RANGES.map(([kind, family, network, prefix]) => {
  const list = new BlockList()
  list.addSubnet(network, prefix, family)
  return { kind, family, list }
})

/** The eight 16-bit groups of an IPv6 address, a trailing dotted quad included. */
export function ipv6Groups (address: string): number[] {
  let text = address.toLowerCase()
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text)
  if (quad !== null) {
    const [a, b, c, d] = quad.slice(1).map(Number)
    text = `${text.slice(0, quad.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.split('::')
  const left = head === '' ? [] : head.split(':')
  const right = tail === undefined || tail === '' ? [] : tail.split(':')
  const zeros = tail === undefined ? [] : new Array<string>(8 - left.length - right.length).fill('0')
  return [...left, ...zeros, ...right].map((group) => parseInt(group, 16))
}

function quadOf (high: number, low: number): string {
  return [high >> 8, high & 0xff, low >> 8, low & 0xff].join('.')
}

/** The IPv4 address an IPv6 one reaches: IPv4-mapped (::ffff:0:0/96), NAT64 (64:ff9b::/96) or 6to4 (2002::/16); null for any other. */
export function embeddedIpv4 (address: string): string | null {
  const g = ipv6Groups(address)
  if (g.slice(0, 5).every((group) => group === 0) && g[5] === 0xffff) return quadOf(g[6], g[7])
  if (g[0] === 0x64 && g[1] === 0xff9b && g.slice(2, 6).every((group) => group === 0)) return quadOf(g[6], g[7])
  if (g[0] === 0x2002) return quadOf(g[1], g[2])
  return null
}

/** Why `address` (an IP address, IPv6 without brackets) is internal, or null when it is globally reachable. */
export function internalKind (scoped: string): InternalKind | null {
  const family = isIP(scoped)
  if (family === 0) throw new TypeError(`not an IP address: ${scoped}`)
  // A zone (`fe80::1%eth0`) says which interface, not which address: the address alone is judged.
  const address = scoped.replace(/%.*$/, '')
  if (family === 6) {
    const inner = embeddedIpv4(address)
    if (inner !== null) return internalKind(inner)
  }
  const type = family === 4 ? 'ipv4' : 'ipv6'
  return LISTS.find((entry) => entry.family === type && entry.list.check(address, type))?.kind ?? null
}

/** Every address a host name resolves to; rejects when it resolves to none. */
export type ResolveAll = (host: string) => Promise<string[]>

export const systemResolveAll: ResolveAll = async (host) => (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address)

/** A URL's host and port and the addresses it was checked at: the call connects to these and nowhere else. */
export interface CheckedTarget {
  url: URL
  /** The host without IPv6 brackets. */
  host: string
  port: number
  /** Empty when the host is an IP address, which is not resolved. */
  addresses: string[]
}

/** Whether a URL may be called: its target, or why not (its host resolves nowhere, or to an internal address). */
export type AddressVerdict =
  | { ok: true, target: CheckedTarget }
  | { ok: false, unresolved: true }
  | { ok: false, unresolved: false, kind: InternalKind, address: string }

const DEFAULT_PORTS: Record<string, number> = { 'https:': 443, 'http:': 80 }

/**
 * The one check before the server calls a URL a tenant typed (an external
 * git source, a webhook): every address the host resolves to must be
 * globally reachable, unless the operator allowed the host (`git.internal`,
 * `*.corp.example`) or the address's range (`10.0.0.0/8`). The caller then
 * connects to the checked addresses only and follows no redirect, so
 * neither a rebinding resolver nor a 302 from a public host reaches an
 * internal one. Resolution goes through `resolveAll` (tests pass their own).
 */
export class AddressGuard {
  private readonly names = new Set<string>()
  private readonly suffixes: string[] = []
  private readonly ranges = new BlockList()

  constructor (private readonly deps: { allowedHosts: readonly string[], resolveAll?: ResolveAll }) {
    for (const entry of deps.allowedHosts) {
      const [address, prefix] = entry.split('/')
      const family = isIP(address)
      if (family !== 0) this.ranges.addSubnet(address, prefix === undefined ? (family === 4 ? 32 : 128) : Number(prefix), family === 4 ? 'ipv4' : 'ipv6')
      else if (entry.startsWith('*.')) this.suffixes.push(entry.slice(1))
      else this.names.add(entry)
    }
  }

  async check (raw: string | URL): Promise<AddressVerdict> {
    const url = new URL(raw)
    const host = url.hostname.replace(/^\[|\]$/g, '')
    const port = url.port === '' ? DEFAULT_PORTS[url.protocol] ?? 443 : Number(url.port)
    const literal = isIP(host) !== 0
    let addresses: string[]
    if (literal) addresses = [host]
    else {
      try { addresses = await (this.deps.resolveAll ?? systemResolveAll)(host) } catch { return { ok: false, unresolved: true } }
      if (addresses.length === 0) return { ok: false, unresolved: true }
    }
    if (!this.hostAllowed(host)) {
      for (const address of addresses) {
        const kind = internalKind(address)
        if (kind !== null && !this.addressAllowed(address)) return { ok: false, unresolved: false, kind, address }
      }
    }
    return { ok: true, target: { url, host, port, addresses: literal ? [] : addresses } }
  }

  private hostAllowed (host: string): boolean {
    return this.names.has(host) || this.suffixes.some((suffix) => host.endsWith(suffix))
  }

  private addressAllowed (address: string): boolean {
    const family = isIP(address) === 4 ? 'ipv4' : 'ipv6'
    const inner = family === 'ipv6' ? embeddedIpv4(address) : null
    return this.ranges.check(address, family) || (inner !== null && this.ranges.check(inner, 'ipv4'))
  }
}
