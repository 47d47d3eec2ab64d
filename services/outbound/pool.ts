import { Agent as HttpAgent } from 'node:http'
import { Agent as HttpsAgent } from 'node:https'
import { BoundedMap } from '../cache/bounded-map.js'
import type { CheckedTarget } from './internal-addresses.js'

/**
 * Kept-alive connections for outbound calls that repeat to one receiver (a
 * webhook's deliveries): a connect, and for HTTPS a handshake, per call cost
 * about what the call itself does. The pinning guarantee stays: an agent is
 * keyed by the protocol, host (the TLS servername), port and the very
 * addresses the guard checked, so a pooled socket only ever carries a call
 * whose check allowed the address it is connected to; a host that resolves
 * elsewhere next time gets another agent and a fresh connection. Idle
 * sockets close after `idleMs`, and past `maxTargets` the least used
 * target's agent is destroyed with its sockets.
 */
export interface OutboundPoolOptions {
  /** How long an unused connection stays open. */
  idleMs: number
  /** Connections to one target at once; further calls wait for one (their deadline runs meanwhile). */
  maxSockets: number
  /** Targets with an agent at once. */
  maxTargets: number
}

export const OUTBOUND_POOL_DEFAULTS: OutboundPoolOptions = { idleMs: 4_000, maxSockets: 16, maxTargets: 256 }

export class OutboundPool {
  private readonly agents: BoundedMap<string, HttpAgent>

  constructor (private readonly options: OutboundPoolOptions = OUTBOUND_POOL_DEFAULTS) {
    // An agent pushed out is only forgotten: requests under way on its sockets finish, and its idle sockets time out.
    this.agents = new BoundedMap(options.maxTargets)
  }

  /** The agent for calls to `target` over `protocol`; the same one for the same checked addresses only. */
  agent (protocol: string, target: CheckedTarget): HttpAgent {
    // Sorted: a round-robin resolver's rotations of one address set share the agent.
    const key = `${protocol}//${target.host}:${target.port}/${[...target.addresses].sort().join(',')}`
    return this.agents.remember(key, () => {
      const settings = { keepAlive: true, timeout: this.options.idleMs, maxSockets: this.options.maxSockets, maxFreeSockets: this.options.maxSockets, scheduling: 'lifo' as const }
      return protocol === 'https:' ? new HttpsAgent(settings) : new HttpAgent(settings)
    })
  }

  /** Targets with an agent now. */
  get size (): number {
    return this.agents.size
  }

  /** Every connection closed, in use or idle (the app is closing). */
  close (): void {
    for (const agent of this.agents.values()) agent.destroy()
    this.agents.clear()
  }
}
