import { lookup } from 'node:dns/promises'
import { BlockList, isIP } from 'node:net'
import { badRequest, fieldIssue, type AppError } from '../errors.js'
import { embeddedIpv4, internalKind, type InternalKind } from '../internal-addresses.js'
import { SourceError } from './sources.js'

/** Every address a host name resolves to; rejects when it resolves to none. */
export type ResolveAll = (host: string) => Promise<string[]>

export const systemResolveAll: ResolveAll = async (host) => (await lookup(host, { all: true, verbatim: true })).map((entry) => entry.address)

/** An external repository's URL and the addresses it was checked at: its clone connects to these and nowhere else. */
export interface CheckedRemote {
  url: string
  host: string
  port: number
  /** Empty when the host is an IP address, which curl does not resolve. */
  addresses: string[]
}

/** Why a remote may not be fetched: its host resolves nowhere, or somewhere internal. */
type Verdict = { ok: true, remote: CheckedRemote } | { ok: false, unresolved: true } | { ok: false, unresolved: false, kind: InternalKind }

const article = (kind: InternalKind): string => /^[aeiou]/.test(kind) ? 'an' : 'a'

/**
 * What an external git source may reach. A project member types the URL and
 * the server fetches it, so without this a tenant could make the server read
 * its own loopback services, the cloud metadata endpoint or the private
 * network. Every address the host resolves to must be globally reachable
 * unless the operator allowed the host or range (HOSTING_GIT_ALLOWED_HOSTS).
 * The check runs when the source is set and again before every clone; the
 * clone is then pinned to the addresses checked (curl's resolve list) and
 * follows no redirect, so neither a rebinding resolver nor a 302 from a
 * public host reaches an internal one.
 */
export class ExternalGitGuard {
  private readonly names = new Set<string>()
  private readonly suffixes: string[] = []
  private readonly ranges = new BlockList()

  constructor (private readonly deps: { allowedHosts: readonly string[], caFile: string | null, resolveAll?: ResolveAll }) {
    for (const entry of deps.allowedHosts) {
      const [address, prefix] = entry.split('/')
      const family = isIP(address)
      if (family !== 0) this.ranges.addSubnet(address, prefix === undefined ? (family === 4 ? 32 : 128) : Number(prefix), family === 4 ? 'ipv4' : 'ipv6')
      else if (entry.startsWith('*.')) this.suffixes.push(entry.slice(1))
      else this.names.add(entry)
    }
  }

  /** When the source is set: a host that resolves to an internal address is a 400; one that resolves nowhere is left to the clone, which checks again. */
  async checkOnSet (url: string): Promise<void> {
    const verdict = await this.verdict(url)
    if (!verdict.ok && !verdict.unresolved) throw forbidden(verdict.kind)
  }

  /** Before a clone: the remote with the addresses to pin it to, or a refusal naming why. */
  async checkOnClone (url: string): Promise<CheckedRemote> {
    const verdict = await this.verdict(url)
    if (verdict.ok) return verdict.remote
    if (verdict.unresolved) throw new SourceError(`The git source's host ${new URL(url).hostname} does not resolve`)
    throw new SourceError(forbidden(verdict.kind).message)
  }

  /** git's `-c` options for a clone of a checked remote: no redirects, the checked addresses only, the operator's roots. */
  cloneOptions (remote: CheckedRemote): string[] {
    const options = ['-c', 'http.followRedirects=false']
    if (remote.addresses.length > 0) {
      const list = remote.addresses.map((address) => isIP(address) === 6 ? `[${address}]` : address).join(',')
      options.push('-c', `http.curloptResolve=${remote.host}:${remote.port}:${list}`)
    }
    if (this.deps.caFile !== null) options.push('-c', `http.sslCAInfo=${this.deps.caFile}`)
    return options
  }

  private async verdict (raw: string): Promise<Verdict> {
    const url = new URL(raw)
    const host = url.hostname.replace(/^\[|\]$/g, '')
    const port = url.port === '' ? 443 : Number(url.port)
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
        if (kind !== null && !this.addressAllowed(address)) return { ok: false, unresolved: false, kind }
      }
    }
    return { ok: true, remote: { url: url.toString(), host, port, addresses: literal ? [] : addresses } }
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

function forbidden (kind: InternalKind): AppError {
  return badRequest('APP_HOSTING_GIT_SOURCE_FORBIDDEN', `The git source's host reaches ${article(kind)} ${kind} address, which this server does not fetch from; the operator may allow the host with HOSTING_GIT_ALLOWED_HOSTS`, fieldIssue('body.url', `reaches ${article(kind)} ${kind} address`))
}
