import { availableParallelism } from 'node:os'
import { resolve } from 'node:path'
import { Type, type SchemaOptions, type Static, type TSchema } from '@sinclair/typebox'
import { ANY_ORIGIN } from './origins.js'
import { ConfigError, httpUrl, integer, isAddressOrRange, list, origins, text, type Env } from './config-env.js'
import { parseKeyText } from './crypto.js'
import { MAX_WRITE_DOCUMENTS } from '../store/semantics/writes.js'
import { DEFAULT_SWEEP_PAGE_SIZE } from '../store/sweep.js'
import { DEFAULT_BUSY_TIMEOUT_MS } from '../store/sqlite/write-lock.js'

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = typeof LOG_LEVELS[number]

/** The server-side time limit of a filtered MongoDB operation when MONGODB_QUERY_TIMEOUT_MS is not set. */
export const DEFAULT_QUERY_TIMEOUT_MS = 10_000

// Not derived from HOST and PORT: two processes on one DATA_DIR (one key) on different ports are one deployment.
const DEFAULT_TOKEN_ISSUER = 'plinth'

const Nullable = <T extends TSchema>(schema: T, options: SchemaOptions) => Type.Union([schema, Type.Null()], options)
const seconds = (variable: string, maximum: number, description: string) => Type.Integer({ minimum: 1, maximum, variable, description })

/** Limits on slow clients, in seconds (docs/operations.md, "Slow clients", says why these values). */
export const HttpTimeouts = Type.Object({
  connectionSeconds: seconds('CONNECTION_TIMEOUT_SECONDS', 86_400, 'A socket on which nothing moves either way for this long is closed'),
  requestSeconds: seconds('REQUEST_TIMEOUT_SECONDS', 86_400, 'The whole request, headers and body, must have arrived within this'),
  headersSeconds: seconds('HEADERS_TIMEOUT_SECONDS', 3600, 'The request line and headers must have arrived within this; at most requestSeconds'),
  keepAliveSeconds: seconds('KEEP_ALIVE_TIMEOUT_SECONDS', 3600, 'An idle keep-alive connection is kept this long for the client\'s next request')
})
export type HttpTimeouts = Static<typeof HttpTimeouts>

/**
 * The server's own settings, each with the variable it is read from (the
 * README's configuration table lists them): where it listens, its public
 * address, the store, the master keys, its limits on clients, whom it trusts.
 * The families' settings are theirs (services/<family>/config.ts);
 * services/config.ts puts both together.
 */
export const ServerConfig = Type.Object({
  workers: Type.Integer({ minimum: 1, maximum: 256, variable: 'WORKERS', description: 'API processes sharing PORT (node:cluster); 1 keeps one process. Unset: the number of cores (os.availableParallelism())' }),
  lead: Type.Boolean({ derivedFrom: 'WORKERS', description: 'Whether this process runs what is one per deployment (DNS, SSH, the hosting gateway and supervisor, METRICS_LISTEN): the only process, or the first of WORKERS' }),
  port: Type.Integer({ minimum: 0, maximum: 65535, variable: 'PORT', description: 'The API\'s TCP port (0 picks a free one)' }),
  host: Type.String({ pattern: '^[\\w.:-]+$', variable: 'HOST', description: 'The interface to listen on, also the default of the other listeners\' hosts' }),
  dataDir: Type.String({ variable: 'DATA_DIR', description: 'The embedded store, the master key file and uploaded files, as an absolute path' }),
  publicUrl: Type.String({ variable: 'PUBLIC_URL', description: 'The address clients use, for links and redirects; unset, http://HOST:PORT with a wildcard HOST as loopback' }),
  tokenIssuer: Type.String({
    derivedFrom: 'PUBLIC_URL',
    description: 'The `iss` of every JWT this deployment signs: PUBLIC_URL when set, else a constant, so processes sharing a DATA_DIR on other ports accept each other\'s tokens'
  }),
  mongodbUrl: Nullable(Type.String({ pattern: '^mongodb(\\+srv)?://.' }), { variable: 'MONGODB_URL', description: 'When set, MongoDB is the store instead of the embedded engine in DATA_DIR' }),
  mongodbDb: Type.String({ pattern: '^[^/\\\\. "$*<>:|?]{1,63}$', variable: 'MONGODB_DB', description: 'The MongoDB database\'s name' }),
  mongodbQueryTimeoutMs: Type.Integer({ minimum: 100, maximum: 600_000, variable: 'MONGODB_QUERY_TIMEOUT_MS', description: 'The server-side time limit (maxTimeMS) of every operation that evaluates a filter' }),
  mongodbConnectTimeoutSeconds: seconds('MONGODB_CONNECT_TIMEOUT_SECONDS', 3600, 'How long start-up waits for the deployment to answer with a primary'),
  storeSweepPageSize: Type.Integer({
    minimum: 1,
    maximum: MAX_WRITE_DOCUMENTS,
    variable: 'STORE_SWEEP_PAGE_SIZE',
    description: 'Documents per write of an internal sweep (deleting a project, revoking sessions, pruning)'
  }),
  storeBusyTimeoutMs: Type.Integer({
    minimum: 0,
    maximum: 60_000,
    variable: 'STORE_BUSY_TIMEOUT_MS',
    description: 'How long an embedded-store write waits for the file\'s write lock (other processes on the DATA_DIR) before answering 503'
  }),
  logLevel: Type.Union(LOG_LEVELS.map((level) => Type.Literal(level)), { variable: 'LOG_LEVEL', description: 'The logger\'s level' }),
  bodyLimit: Type.Integer({ minimum: 1024, maximum: 1024 * 1024 * 1024, variable: 'BODY_LIMIT', description: 'The largest JSON body accepted, bytes' }),
  masterKey: Nullable(Type.String({ minLength: 1 }), {
    variable: 'PLINTH_MASTER_KEY',
    description: 'Master key material for sealing provider secrets; null means the key file in DATA_DIR (refused with MongoDB)'
  }),
  retiredMasterKeys: Type.Array(Type.String(), {
    variable: 'PLINTH_MASTER_KEY_RETIRED',
    description: 'Former master keys, which still open what was sealed under them until it is re-sealed (docs/llm.md, "Rotating the master key")'
  }),
  timeouts: HttpTimeouts,
  trustProxy: Type.Union([Type.Literal(false), Type.Integer({ minimum: 1, maximum: 32 }), Type.Array(Type.String())], {
    variable: 'TRUST_PROXY',
    description: 'Whose `X-Forwarded-For` to believe: nobody (false), that many hops in front of the server, or these addresses and CIDR ranges'
  }),
  corsOrigins: Type.Array(Type.String(), { variable: 'CORS_ORIGINS', description: 'Origins browser apps may call the platform API from; `[\'*\']` is any origin, without credentials' })
})
export type ServerConfig = Static<typeof ServerConfig>

/** `*` alone, or a list of origins: a list that also held `*` would say two things at once. */
function corsOrigins (env: Env, name: string): string[] {
  const entries = list(env, name)
  if (!entries.includes(ANY_ORIGIN)) return origins(env, name)
  if (entries.length > 1) throw new ConfigError(name, 'must be either * alone or a comma-separated list of origins')
  return [ANY_ORIGIN]
}

function trustProxy (env: Env): false | number | string[] {
  const name = 'TRUST_PROXY'
  const raw = text(env, name)
  if (raw === undefined) return false
  if (/^\d+$/.test(raw)) {
    const hops = Number(raw)
    if (hops < 1 || hops > 32) throw new ConfigError(name, `as a hop count must be between 1 and 32, got ${raw}`)
    return hops
  }
  const entries = list(env, name)
  const bad = entries.find((entry) => !isAddressOrRange(entry))
  if (bad !== undefined) throw new ConfigError(name, `must be a hop count or a comma-separated list of proxy addresses or CIDR ranges (10.0.0.0/8, ::1), got "${bad}"`)
  return entries
}

function timeouts (env: Env): HttpTimeouts {
  const requestSeconds = integer(env, 'REQUEST_TIMEOUT_SECONDS', 300, 1, 86_400)
  const headersSeconds = integer(env, 'HEADERS_TIMEOUT_SECONDS', 20, 1, 3600)
  // Node refuses to start a server whose header limit outlasts its request limit.
  if (headersSeconds > requestSeconds) throw new ConfigError('HEADERS_TIMEOUT_SECONDS', `must not exceed REQUEST_TIMEOUT_SECONDS (${requestSeconds}), got ${headersSeconds}`)
  return {
    connectionSeconds: integer(env, 'CONNECTION_TIMEOUT_SECONDS', 60, 1, 86_400),
    requestSeconds,
    headersSeconds,
    keepAliveSeconds: integer(env, 'KEEP_ALIVE_TIMEOUT_SECONDS', 72, 1, 3600)
  }
}

export function parseServerConfig (env: Env): ServerConfig {
  const port = integer(env, 'PORT', 8080, 0, 65535)
  const host = text(env, 'HOST') ?? '127.0.0.1'
  if (!/^[\w.:-]+$/.test(host)) throw new ConfigError('HOST', `must be a host name or IP address, got "${host}"`)

  const logLevel = (text(env, 'LOG_LEVEL') ?? 'info') as LogLevel
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`)

  const mongodbUrl = text(env, 'MONGODB_URL') ?? null
  if (mongodbUrl !== null && !/^mongodb(\+srv)?:\/\/./.test(mongodbUrl)) {
    throw new ConfigError('MONGODB_URL', 'must start with mongodb:// or mongodb+srv://')
  }
  const masterKey = text(env, 'PLINTH_MASTER_KEY') ?? null
  // Without it each node would mint its own key file and reject the tokens and sealed secrets of the others.
  if (mongodbUrl !== null && masterKey === null) {
    throw new ConfigError('PLINTH_MASTER_KEY', 'must be set when MONGODB_URL is: every node sharing the database must use the same key (generate one with `openssl rand -base64 32`)')
  }
  const retiredMasterKeys = list(env, 'PLINTH_MASTER_KEY_RETIRED')
  if (retiredMasterKeys.some((key) => parseKeyText(key) === null)) {
    throw new ConfigError('PLINTH_MASTER_KEY_RETIRED', 'must be a comma-separated list of former master keys, each 32 bytes written as base64 (44 chars) or hex (64 chars)')
  }
  const mongodbDb = text(env, 'MONGODB_DB') ?? 'plinth'
  if (!/^[^/\\. "$*<>:|?]{1,63}$/.test(mongodbDb)) throw new ConfigError('MONGODB_DB', `is not a valid MongoDB database name: "${mongodbDb}"`)

  const displayHost = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host
  const publicUrlRaw = text(env, 'PUBLIC_URL')
  const publicUrl = publicUrlRaw === undefined ? `http://${displayHost.includes(':') ? `[${displayHost}]` : displayHost}:${port}` : httpUrl('PUBLIC_URL', publicUrlRaw)

  return {
    workers: integer(env, 'WORKERS', availableParallelism(), 1, 256),
    lead: true,
    port,
    host,
    dataDir: resolve(text(env, 'DATA_DIR') ?? './data'),
    publicUrl,
    tokenIssuer: publicUrlRaw === undefined ? DEFAULT_TOKEN_ISSUER : publicUrl,
    mongodbUrl,
    mongodbDb,
    mongodbQueryTimeoutMs: integer(env, 'MONGODB_QUERY_TIMEOUT_MS', DEFAULT_QUERY_TIMEOUT_MS, 100, 600_000),
    mongodbConnectTimeoutSeconds: integer(env, 'MONGODB_CONNECT_TIMEOUT_SECONDS', 60, 1, 3600),
    storeSweepPageSize: integer(env, 'STORE_SWEEP_PAGE_SIZE', DEFAULT_SWEEP_PAGE_SIZE, 1, MAX_WRITE_DOCUMENTS),
    storeBusyTimeoutMs: integer(env, 'STORE_BUSY_TIMEOUT_MS', DEFAULT_BUSY_TIMEOUT_MS, 0, 60_000),
    logLevel,
    bodyLimit: integer(env, 'BODY_LIMIT', 1024 * 1024, 1024, 1024 * 1024 * 1024),
    masterKey,
    retiredMasterKeys,
    timeouts: timeouts(env),
    trustProxy: trustProxy(env),
    corsOrigins: corsOrigins(env, 'CORS_ORIGINS')
  }
}
