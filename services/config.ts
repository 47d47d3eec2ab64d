import { isIP } from 'node:net'
import { resolve } from 'node:path'
import { ANY_ORIGIN } from './platform/origins.js'
import { ConfigError, httpUrl, integer, isAddressOrRange, list, origins, text, UnavailableAtStartError, type Env } from './platform/config-env.js'
import { parseKeyText } from './platform/crypto.js'
import { parseDnsConfig, type DnsConfig } from './dns/config.js'
import { parseGitConfig, type GitConfig } from './git/config.js'
import { parseHostingConfig, parseHostingTlsConfig, type HostingConfig, type HostingTlsConfig } from './hosting/config.js'
import { parseJobsConfig, type JobsConfig } from './jobs/config.js'
import { parseIdentityConfig, type IdentityConfig } from './identity/config.js'
import { parseLlmConfig, type LlmConfig } from './llm/config.js'
import { parseRealtimeConfig, type RealtimeConfig } from './realtime/config.js'
import { parseAssistantConfig, type AssistantConfig } from './assistant/config.js'
import { parseWebhooksConfig, type WebhooksConfig } from './webhooks/config.js'
import { MAX_WRITE_DOCUMENTS } from './store/semantics/writes.js'
import { DEFAULT_SWEEP_PAGE_SIZE } from './store/sweep.js'

export { ConfigError, UnavailableAtStartError }
export type { DnsConfig, GitConfig, HostingConfig, HostingTlsConfig, IdentityConfig, JobsConfig, LlmConfig, WebhooksConfig }

/**
 * Configuration comes from the environment only, validated once at start:
 * a bad value stops the server with a message naming the variable.
 */
export interface Config {
  port: number
  host: string
  dataDir: string
  publicUrl: string
  /** The `iss` of every JWT this deployment signs: PUBLIC_URL when set, else a constant, so processes sharing a DATA_DIR on other ports accept each other's tokens. */
  tokenIssuer: string
  mongodbUrl: string | null
  mongodbDb: string
  /** MONGODB_QUERY_TIMEOUT_MS: the server-side time limit (maxTimeMS) of every operation that evaluates a filter. */
  mongodbQueryTimeoutMs: number
  /** MONGODB_CONNECT_TIMEOUT_SECONDS: how long start-up waits for the deployment to answer with a primary. */
  mongodbConnectTimeoutSeconds: number
  /** STORE_SWEEP_PAGE_SIZE: documents per write of an internal sweep (deleting a project, revoking sessions, pruning). */
  storeSweepPageSize: number
  logLevel: LogLevel
  /** Largest JSON body accepted, bytes. */
  bodyLimit: number
  /** Master key material for sealing provider secrets; null means the key file in DATA_DIR (refused with MongoDB). */
  masterKey: string | null
  /** Credentials, their lifetimes, sign-in rate limits and single sign-on (services/identity/config.ts). */
  identity: IdentityConfig
  /** PLINTH_MASTER_KEY_RETIRED: former master keys, which still open what was sealed under them until it is re-sealed (docs/llm.md, "Rotating the master key"). */
  retiredMasterKeys: string[]
  /** Limits on slow clients, in seconds (docs/operations.md, "Slow clients", says why these values). */
  timeouts: HttpTimeouts
  /** Whose `X-Forwarded-For` to believe: nobody (false), that many hops in front of the server, or these addresses and CIDR ranges. */
  trustProxy: false | number | string[]
  /** Origins browser apps may call the platform API from; `['*']` is any origin, without credentials. */
  corsOrigins: string[]
  /** Git hosting (docs/git.md). */
  git: GitConfig
  /** DNS: the built-in authoritative server and the gateway hostnames point at (docs/dns.md). */
  dns: DnsConfig
  /** App hosting (docs/hosting.md). */
  hosting: HostingConfig
  /** Hosting: how custom hostnames are verified and where their TLS certificates come from (docs/hosting.md). */
  hostingTls: HostingTlsConfig
  /** The job worker's slots on this node, by lane (docs/architecture.md, "Background work"). */
  jobs: JobsConfig
  /** Outbound webhooks: what receivers may be, timeouts, retries and when a failing webhook is disabled (docs/webhooks.md). */
  webhooks: WebhooksConfig
  /** LLM credentials and settings: which internal hosts base URLs may reach, the provider call's deadline, the platform defaults (docs/llm.md). */
  llm: LlmConfig
  /** Realtime streams of record changes: retention for resuming, polling of the shared log, rechecks and limits (docs/realtime.md). */
  realtime: RealtimeConfig
  /** Assistant runs: the wall time between pauses and the largest tool answer handed to a model (docs/assistant.md). */
  assistant: AssistantConfig
}

export interface HttpTimeouts {
  /** A socket on which nothing moves either way for this long is closed. */
  connectionSeconds: number
  /** The whole request, headers and body, must have arrived within this. */
  requestSeconds: number
  /** The request line and headers must have arrived within this. */
  headersSeconds: number
  /** An idle keep-alive connection is kept this long for the client's next request. */
  keepAliveSeconds: number
}

// Not derived from HOST and PORT: two processes on one DATA_DIR (one key) on different ports are one deployment.
const DEFAULT_TOKEN_ISSUER = 'plinth'

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const
export type LogLevel = typeof LOG_LEVELS[number]

/** The server-side time limit of a filtered MongoDB operation when MONGODB_QUERY_TIMEOUT_MS is not set. */
export const DEFAULT_QUERY_TIMEOUT_MS = 10_000

/** `*` alone, or a list of origins: a list that also held `*` would say two things at once. */
function corsOrigins (env: Env, name: string): string[] {
  const entries = (text(env, name) ?? '').split(',').map((entry) => entry.trim()).filter((entry) => entry !== '')
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
  const entries = raw.split(',').map((entry) => entry.trim()).filter((entry) => entry !== '')
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

export function loadConfig (env: Env = process.env): Config {
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

  const dataDir = resolve(text(env, 'DATA_DIR') ?? './data')
  return {
    port,
    host,
    dataDir,
    publicUrl,
    tokenIssuer: publicUrlRaw === undefined ? DEFAULT_TOKEN_ISSUER : publicUrl,
    mongodbUrl,
    mongodbDb,
    mongodbQueryTimeoutMs: integer(env, 'MONGODB_QUERY_TIMEOUT_MS', DEFAULT_QUERY_TIMEOUT_MS, 100, 600_000),
    mongodbConnectTimeoutSeconds: integer(env, 'MONGODB_CONNECT_TIMEOUT_SECONDS', 60, 1, 3600),
    storeSweepPageSize: integer(env, 'STORE_SWEEP_PAGE_SIZE', DEFAULT_SWEEP_PAGE_SIZE, 1, MAX_WRITE_DOCUMENTS),
    logLevel,
    bodyLimit: integer(env, 'BODY_LIMIT', 1024 * 1024, 1024, 1024 * 1024 * 1024),
    masterKey,
    identity: parseIdentityConfig(env, { publicUrl }),
    retiredMasterKeys,
    timeouts: timeouts(env),
    trustProxy: trustProxy(env),
    corsOrigins: corsOrigins(env, 'CORS_ORIGINS'),
    git: parseGitConfig(env, dataDir),
    dns: parseDnsConfig(env),
    hosting: parseHostingConfig(env, { dataDir, apiPort: port, apiHost: host }),
    hostingTls: parseHostingTlsConfig(env),
    jobs: parseJobsConfig(env),
    webhooks: parseWebhooksConfig(env),
    llm: parseLlmConfig(env),
    realtime: parseRealtimeConfig(env),
    assistant: parseAssistantConfig(env)
  }
}

/**
 * The names the deployment answers for itself: its nameservers, the
 * gateway's host, PUBLIC_URL's host (unless an address) and the apps domain.
 * No project may take one, or a name around or under one, as a built-in zone
 * or an app's hostname, or it would answer for the platform.
 */
export function platformHosts (config: Pick<Config, 'publicUrl' | 'dns' | 'hosting'>): string[] {
  const publicHost = new URL(config.publicUrl).hostname.toLowerCase()
  const named = isIP(publicHost.replace(/^\[|\]$/g, '')) === 0 ? [publicHost] : []
  return [...config.dns.nameservers, ...(config.dns.gateway.host === null ? [] : [config.dns.gateway.host]), ...named, config.hosting.appsDomain]
}
