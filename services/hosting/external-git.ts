import { isIP } from 'node:net'
import type { AppError } from '../platform/errors.js'
import { hostingErrors } from './errors.js'
import { AddressGuard, type InternalKind, type ResolveAll } from '../outbound/internal-addresses.js'
import { SourceError } from './sources.js'

export { systemResolveAll, type ResolveAll } from '../outbound/internal-addresses.js'

/** An external repository's URL and the addresses it was checked at: its clone connects to these and nowhere else. */
export interface CheckedRemote {
  url: string
  host: string
  port: number
  /** Empty when the host is an IP address, which curl does not resolve. */
  addresses: string[]
}

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
  private readonly guard: AddressGuard

  constructor (private readonly deps: { allowedHosts: readonly string[], caFile: string | null, resolveAll?: ResolveAll }) {
    this.guard = new AddressGuard(deps)
  }

  /** When the source is set: a host that resolves to an internal address is a 400; one that resolves nowhere is left to the clone, which checks again. */
  async checkOnSet (url: string): Promise<void> {
    const verdict = await this.guard.check(url)
    if (!verdict.ok && !verdict.unresolved) throw forbidden(verdict.kind)
  }

  /** Before a clone: the remote with the addresses to pin it to, or a refusal naming why. */
  async checkOnClone (url: string): Promise<CheckedRemote> {
    const verdict = await this.guard.check(url)
    if (verdict.ok) return { url: verdict.target.url.toString(), host: verdict.target.host, port: verdict.target.port, addresses: verdict.target.addresses }
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
}

function forbidden (kind: InternalKind): AppError {
  return hostingErrors.gitSourceForbidden({ kind })
}
