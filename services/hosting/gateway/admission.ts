import { isIP, type Socket } from 'node:net'
import { embeddedIpv4, ipv6Groups } from '../../outbound/internal-addresses.js'
import { descriptorHeadroom } from '../../platform/descriptors.js'

export interface ConnectionLimits {
  /** Open client connections in all, across the gateway's listeners. */
  maxConnections: number
  /** Open client connections from one client (see clientKey). */
  maxConnectionsPerAddress: number
}

export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = { maxConnections: 10_000, maxConnectionsPerAddress: 256 }

/**
 * The limits the descriptor limit allows: each client connection may hold a
 * second descriptor (its upstream connection, a file), and the headroom is left
 * to the rest of the server, so the gateway full can never starve the API.
 */
export function limitsWithin (limits: ConnectionLimits, descriptorLimit: number | null): ConnectionLimits {
  if (descriptorLimit === null) return limits
  const fits = Math.max(1, Math.floor((descriptorLimit - descriptorHeadroom(descriptorLimit)) / 2))
  const maxConnections = Math.min(limits.maxConnections, fits)
  return { maxConnections, maxConnectionsPerAddress: Math.min(limits.maxConnectionsPerAddress, maxConnections) }
}

/**
 * Whose connections count together: an IPv4 address (also when carried in an
 * IPv6 one: mapped, NAT64, 6to4), or an IPv6 address's /64, the block one
 * subscriber usually holds, so a client cannot take a new address per connection.
 */
export function clientKey (address: string): string {
  if (isIP(address) !== 6) return address
  const ipv4 = embeddedIpv4(address)
  if (ipv4 !== null) return ipv4
  return `${ipv6Groups(address.replace(/%.*$/, '')).slice(0, 4).map((group) => group.toString(16)).join(':')}::/64`
}

/**
 * Counts the gateway's client connections and closes, as it arrives, one
 * past the limits in all or per client, or one that arrives while the process
 * is near its descriptor limit (`pressed`). A closed connection has sent
 * nothing yet that could be answered; the client sees it closed at once.
 */
export class ConnectionAdmission {
  private open = 0
  private readonly perClient = new Map<string, number>()

  constructor (private readonly limits: ConnectionLimits, private readonly pressed: () => boolean) {}

  admit (socket: Socket): boolean {
    const key = clientKey(socket.remoteAddress ?? '')
    const fromClient = this.perClient.get(key) ?? 0
    if (this.open >= this.limits.maxConnections || fromClient >= this.limits.maxConnectionsPerAddress || this.pressed()) {
      socket.destroy()
      return false
    }
    this.open++
    this.perClient.set(key, fromClient + 1)
    socket.once('close', () => {
      this.open--
      const left = (this.perClient.get(key) ?? 1) - 1
      if (left === 0) this.perClient.delete(key)
      else this.perClient.set(key, left)
    })
    return true
  }

  /** Open client connections, for the log. */
  get count (): number {
    return this.open
  }
}
