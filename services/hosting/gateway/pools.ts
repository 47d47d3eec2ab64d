import { Pool } from 'undici'
import type { Upstream } from '../routing.js'
import { BoundedMap } from '../../cache/bounded-map.js'

/** Upstreams whose connection pool is kept; a pool past this is closed once its requests finish, and made again when needed. */
const POOLS_KEPT = 4096
/** Idle connections are dropped before Node's default 5 s server keep-alive would close them under a request (an upstream's own hint wins). */
const IDLE_MS = 4_000

/**
 * Kept-alive connections to each upstream, through undici's pool: its
 * HTTP/1.1 client costs markedly less per request than node:http's (see
 * bench/README.md), which is most of what the gateway spends.
 */
export class UpstreamPools {
  private readonly open = new Set<Pool>()
  private readonly pools = new BoundedMap<string, Pool>(POOLS_KEPT, (_key, pool) => {
    this.open.delete(pool)
    void pool.close()
  })

  constructor (private readonly connectTimeoutMs: number) {}

  for (upstream: Upstream): Pool {
    const host = upstream.host.includes(':') ? `[${upstream.host}]` : upstream.host
    return this.pools.remember(`${host}:${upstream.port}`, () => {
      const pool = new Pool(`http://${host}:${upstream.port}`, { pipelining: 1, keepAliveTimeout: IDLE_MS, connect: { timeout: this.connectTimeoutMs } })
      this.open.add(pool)
      return pool
    })
  }

  async destroy (): Promise<void> {
    const pools = [...this.open]
    this.open.clear()
    this.pools.clear()
    await Promise.all(pools.map(async (pool) => await pool.destroy()))
  }
}
