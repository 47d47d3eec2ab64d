import { Resolver } from 'node:dns/promises'
import type { GatewayInstructions, GatewayTarget } from '../dns/gateway.js'
import type { HostnameRecordCheckT } from '../../schemas/hosting-hostnames.js'

export type HostnameRecordCheck = HostnameRecordCheckT

interface Lookup { values: string[], failure: string | null }

// Answers that mean "no such record", as opposed to a resolver that could not answer.
const ABSENT = new Set(['ENODATA', 'ENOTFOUND'])
const LOOKUP_TIMEOUT_MS = 3000

const bare = (name: string): string => name.toLowerCase().replace(/\.$/, '')

/**
 * Looks a hostname's records up the way the rest of the internet will: with
 * a real resolver (HOSTING_DNS_RESOLVERS, else the system's), never by
 * reading our own zones, so a record at an outside provider counts the same
 * as one on the built-in server.
 */
export class HostnameChecks {
  private readonly resolver: Resolver

  constructor (private readonly target: GatewayTarget, servers: string[]) {
    this.resolver = new Resolver({ timeout: LOOKUP_TIMEOUT_MS, tries: 2 })
    if (servers.length > 0) this.resolver.setServers(servers)
  }

  /** One check for the route (a CNAME to the gateway, or addresses that are all the gateway's) and one for the ownership TXT. */
  async check (instructions: GatewayInstructions): Promise<HostnameRecordCheck[]> {
    const route = instructions.records.filter((record) => record.purpose === 'route')
    const ownership = instructions.records.filter((record) => record.purpose === 'ownership')
    return [await this.checkRoute(instructions.hostname, route), ...await Promise.all(ownership.map(async (record) => await this.checkOwnership(record.name, record.content)))]
  }

  private async checkRoute (hostname: string, expected: GatewayInstructions['records']): Promise<HostnameRecordCheck> {
    const base = { name: hostname, type: expected[0].type, purpose: 'route' as const, expected: expected.map((record) => record.content).join(' or ') }
    const cname = await this.lookup(async () => await this.resolver.resolveCname(hostname))
    const found = cname.values.map((value) => `CNAME ${bare(value)}`)
    if (this.target.host !== null && cname.values.some((value) => bare(value) === this.target.host)) return { ...base, found, ok: true, problem: null }
    const [v4, v6] = await Promise.all([
      this.lookup(async () => await this.resolver.resolve4(hostname)),
      this.lookup(async () => await this.resolver.resolve6(hostname))
    ])
    found.push(...v4.values.map((value) => `A ${value}`), ...v6.values.map((value) => `AAAA ${value}`))
    const failure = cname.failure ?? v4.failure ?? v6.failure
    const addresses = [...v4.values, ...v6.values]
    const gateway = await this.gatewayAddresses()
    const foreign = addresses.filter((address) => !gateway.has(address))
    if (addresses.length > 0 && foreign.length === 0) return { ...base, found, ok: true, problem: null }
    let problem: string
    if (found.length === 0) problem = failure ?? `${hostname} has no CNAME, A or AAAA record`
    else if (foreign.length > 0) problem = `${hostname} points at ${foreign.join(', ')}, not at the gateway`
    else problem = `${hostname} is a CNAME to ${cname.values.map(bare).join(', ')}, not to the gateway`
    return { ...base, found, ok: false, problem }
  }

  private async checkOwnership (name: string, expected: string): Promise<HostnameRecordCheck> {
    const txt = await this.lookup(async () => (await this.resolver.resolveTxt(name)).map((chunks) => chunks.join('')))
    const ok = txt.values.includes(expected)
    let problem: string | null = null
    if (!ok) problem = txt.failure ?? (txt.values.length === 0 ? `${name} has no TXT record` : `${name} does not hold the expected value`)
    return { name, type: 'TXT', purpose: 'ownership', expected, found: txt.values, ok, problem }
  }

  /** The configured addresses, or where the gateway's host name resolves when none are configured. */
  private async gatewayAddresses (): Promise<Set<string>> {
    const configured = [...this.target.ipv4, ...this.target.ipv6]
    if (configured.length > 0 || this.target.host === null) return new Set(configured)
    const host = this.target.host
    const [v4, v6] = await Promise.all([
      this.lookup(async () => await this.resolver.resolve4(host)),
      this.lookup(async () => await this.resolver.resolve6(host))
    ])
    return new Set([...v4.values, ...v6.values])
  }

  private async lookup (query: () => Promise<string[]>): Promise<Lookup> {
    try {
      return { values: await query(), failure: null }
    } catch (error) {
      const code = String((error as NodeJS.ErrnoException).code)
      return { values: [], failure: ABSENT.has(code) ? null : `the resolver could not answer (${code})` }
    }
  }
}
