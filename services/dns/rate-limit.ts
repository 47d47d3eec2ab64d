import { isIP } from 'node:net'
import { BoundedMap } from '../cache/bounded-map.js'
import { ipv6Groups } from '../outbound/internal-addresses.js'

/** Response-rate limiting of UDP answers (DNS_RRL_*); see ResponseRateLimiter. */
export interface RateLimitSettings {
  /** Answers a client network gets per second over UDP, and at most this many at once; 0 switches limiting off. */
  responsesPerSecond: number
  /** Every `slip`-th answer held back goes out truncated instead; 0: none do. */
  slip: number
  /** How many leading bits of a client's address make its network. */
  ipv4Prefix: number
  ipv6Prefix: number
  /** Addresses and networks (`192.0.2.0/24`, `2001:db8::/48`) that are never limited. */
  exempt: string[]
}

/** What to do with one UDP answer. */
export type RateVerdict = 'answer' | 'drop' | 'slip'

interface Account { tokens: number, at: number, held: number }

// One account per client network; a flood from more networks than this recycles the coldest accounts.
const MAX_NETWORKS = 100_000

/** A network: IPv4 as one 32-bit number, IPv6 as eight 16-bit groups; `prefix` leading bits count. */
type Network = { family: 4, value: number, prefix: number } | { family: 6, groups: number[], prefix: number }

/** An exempt entry (`192.0.2.1`, `192.0.2.0/24`, `2001:db8::/32`) as a network; null when it is neither. */
export function exemptEntry (entry: string): Network | null {
  const [address, bits, extra] = entry.split('/')
  const family = isIP(address)
  if (family === 0 || extra !== undefined) return null
  const width = family === 4 ? 32 : 128
  const prefix = bits === undefined ? width : /^\d{1,3}$/.test(bits) ? Number(bits) : -1
  if (prefix < 0 || prefix > width) return null
  return family === 4 ? { family, value: ipv4Masked(ipv4Value(address), prefix), prefix } : { family: 6, groups: ipv6Masked(ipv6Groups(address), prefix), prefix }
}

/**
 * Response-rate limiting, after BIND's RRL and dnsdist's per-network rules:
 * a UDP source address can be forged, so an open authoritative server is an
 * amplifier (a 58-byte query, a 1,232-byte answer) aimed at whoever the
 * forged address belongs to. Each client network (/24 IPv4, /56 IPv6 by
 * default) has an account of answers refilled at `responsesPerSecond` up to
 * one second's worth; past it answers are dropped, and every `slip`-th
 * dropped one goes out truncated (TC, no records), so a real client behind a
 * busy network retries over TCP, which a forged address cannot complete.
 * TCP is never limited here.
 */
export class ResponseRateLimiter {
  private readonly accounts = new BoundedMap<string, Account>(MAX_NETWORKS)
  private readonly exempt: Network[]

  constructor (private readonly settings: RateLimitSettings, private readonly nowMs: () => number) {
    this.exempt = settings.exempt.map((entry) => {
      const network = exemptEntry(entry)
      if (network === null) throw new RangeError(`"${entry}" is not an IP address or network`)
      return network
    })
  }

  /** Counts one UDP answer to `address` and says whether it goes out whole, truncated or not at all. */
  judge (address: string): RateVerdict {
    const rate = this.settings.responsesPerSecond
    if (rate <= 0) return 'answer'
    const key = this.networkOf(unmapped(address))
    if (key === null) return 'answer'
    const now = this.nowMs()
    let account = this.accounts.get(key)
    if (account === undefined) {
      account = { tokens: rate, at: now, held: 0 }
      this.accounts.set(key, account)
    }
    account.tokens = Math.min(rate, account.tokens + Math.max(0, now - account.at) * rate / 1000)
    account.at = now
    if (account.tokens >= 1) {
      account.tokens -= 1
      return 'answer'
    }
    account.held++
    const { slip } = this.settings
    return slip > 0 && account.held % slip === 0 ? 'slip' : 'drop'
  }

  /**
   * The account key of the client's network; null for an exempt client (or
   * no address at all). Matched by hand rather than with node:net's
   * BlockList, whose check costs more than answering the query does.
   */
  private networkOf (client: string): string | null {
    const family = isIP(client)
    if (family === 4) {
      const value = ipv4Value(client)
      if (this.exempt.some((network) => network.family === 4 && ipv4Masked(value, network.prefix) === network.value)) return null
      return `4:${ipv4Masked(value, this.settings.ipv4Prefix)}`
    }
    if (family !== 6) return null
    const groups = ipv6Groups(client.split('%')[0])
    if (this.exempt.some((network) => network.family === 6 && ipv6Masked(groups, network.prefix).every((group, i) => group === network.groups[i]))) return null
    return `6:${ipv6Masked(groups, this.settings.ipv6Prefix).join(':')}`
  }
}

/** An IPv4 client seen on an IPv6 socket (`::ffff:192.0.2.1`) is that IPv4 client. */
function unmapped (address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice('::ffff:'.length) : address
}

function ipv4Value (address: string): number {
  const [a, b, c, d] = address.split('.')
  return ((Number(a) << 24) | (Number(b) << 16) | (Number(c) << 8) | Number(d)) >>> 0
}

function ipv4Masked (value: number, prefix: number): number {
  return prefix === 0 ? 0 : (value & (0xffffffff << (32 - prefix))) >>> 0
}

/** The first `prefix` bits of eight groups, the rest zero. */
function ipv6Masked (groups: number[], prefix: number): number[] {
  return groups.map((group, i) => {
    const bits = Math.min(16, Math.max(0, prefix - i * 16))
    return group & (0xffff << (16 - bits)) & 0xffff
  })
}
