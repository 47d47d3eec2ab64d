import type { MongoClientOptions } from 'mongodb'

/**
 * Driver options unless MONGODB_URL sets them itself (the driver would let
 * ours win). Server selection waits 30 s by default: long enough to ride out
 * a replica-set election (typically 10–12 s) instead of failing requests that
 * would succeed once a new primary is chosen.
 */
export const DEFAULT_CLIENT_OPTIONS = {
  serverSelectionTimeoutMS: 30_000,
  retryWrites: true,
  retryReads: true
} as const satisfies MongoClientOptions

export function clientOptions (url: string): MongoClientOptions {
  const query = url.includes('?') ? url.slice(url.indexOf('?') + 1).toLowerCase() : ''
  const given = new Set(query.split('&').map((pair) => pair.split('=')[0]))
  const options: MongoClientOptions = { ignoreUndefined: true }
  for (const [name, value] of Object.entries(DEFAULT_CLIENT_OPTIONS)) {
    if (!given.has(name.toLowerCase())) Object.assign(options, { [name]: value })
  }
  return options
}

/** The fields of the `hello` answer that tell the kind and version of a deployment. */
export interface HelloAnswer { setName?: unknown, msg?: unknown, maxWireVersion?: unknown }

// Wire version 13 is MongoDB 5.0: transactions that create collections, `hello`, and the update semantics the validators assume.
const MIN_WIRE_VERSION = 13

/**
 * Why Plinth cannot run on the deployment MONGODB_URL points at, or null. Multi-document writes
 * are transactions, which need a replica set (or a sharded cluster); a
 * standalone server would make them fail at the first bulk write, so the
 * server refuses to start instead.
 */
export function deploymentProblem (hello: HelloAnswer): string | null {
  if (typeof hello.maxWireVersion === 'number' && hello.maxWireVersion < MIN_WIRE_VERSION) {
    return 'points at a MongoDB older than 5.0; Plinth needs MongoDB 5.0 or newer'
  }
  if (typeof hello.setName === 'string' || hello.msg === 'isdbgrid') return null
  return 'points at a standalone MongoDB server; Plinth needs a replica set or a sharded cluster, ' +
    'because multi-document writes run in transactions (for development, start mongod with --replSet rs0 and run rs.initiate() once)'
}
