import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { resolve } from 'node:path'
import { ANY_ORIGIN } from './platform/origins.js'
import {
  allowedHostList, ConfigError, DNS_NAME, flag, httpUrl, integer, isAddressOrRange, list, origins, parseHttpUrl, text, UnavailableAtStartError, type Env
} from './platform/config-env.js'
import { parseKeyText } from './platform/crypto.js'
import { allowanceConflict, parseIpv4Range, type Ipv4Range } from './hosting/network/plan.js'
import { parseDnsConfig, type DnsConfig } from './dns/config.js'
import { parseGitConfig, type GitConfig } from './git/config.js'
import { parseIdentityConfig, type IdentityConfig } from './identity/config.js'
import { parseLlmConfig, type LlmConfig } from './llm/config.js'
import { parseWebhooksConfig, type WebhooksConfig } from './webhooks/config.js'
import { MAX_WRITE_DOCUMENTS } from './store/semantics/writes.js'
import { DEFAULT_SWEEP_PAGE_SIZE } from './store/sweep.js'

export { ConfigError, UnavailableAtStartError }
export type { DnsConfig, GitConfig, IdentityConfig, LlmConfig, WebhooksConfig }

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
}

export interface JobsConfig {
  /** JOB_WORKER_SLOTS: jobs of the short lane (everything but builds) run at once on this node. */
  slots: number
  /** JOB_WORKER_LONG_SLOTS: jobs of the long lane (deployments, which build) run at once on this node. */
  longSlots: number
}

export interface HostingConfig {
  /** HOSTING_ENABLED: when off, the hosting family answers `hostingErrors.disabled` (404) and nothing runs. */
  enabled: boolean
  /** HOSTING_DRIVER: child processes (the default) or containers over the Docker Engine API. */
  driver: 'process' | 'container'
  /** HOSTING_DIR: sources being built, artifacts and static trees; defaults to DATA_DIR/hosting. */
  dir: string
  /** HOSTING_APPS_DOMAIN: every app answers at `<name>.<domain>` through the gateway. */
  appsDomain: string
  /**
   * GATEWAY_PORT, GATEWAY_TLS_PORT and GATEWAY_HOST: with hosting on, the gateway listens on GATEWAY_PORT
   * (DEFAULT_GATEWAY_PORT when unset, `off` for none, 0 picks a free one); HTTPS only with a TLS port. Null: no listener.
   */
  gateway: { port: number | null, tlsPort: number | null, host: string, connections: GatewayConnectionLimits }
  instanceLimits: { memoryMb: number, cpus: number, pids: number }
  healthTimeoutMs: number
  stopGraceMs: number
  /**
   * HOSTING_STOP_APPS_ON_EXIT: stop every app instance when the server shuts down. Off by default: instances
   * outlive the server, and the next start adopts them, so a restart or an upgrade costs the apps nothing.
   */
  stopAppsOnExit: boolean
  /** HOSTING_DOCKER_SOCKET and HOSTING_BASE_IMAGE: the engine's Unix socket and the image apps build on; both required with HOSTING_DRIVER=container. */
  container: { socketPath: string, baseImage: string } | null
  /** What an external git source may reach (docs/hosting.md). */
  externalGit: ExternalGitConfig
  /** HOSTING_APP_ALLOWED_RANGES: internal IPv4 addresses and ranges apps and their builds may reach from their network namespaces. */
  appAllowedRanges: Ipv4Range[]
  /** HOSTING_BUILD_TIMEOUT_SECONDS: a build still running after this long is stopped and fails. */
  buildTimeoutMs: number
  /** HOSTING_BUILDS_PER_PROJECT: builds of one project running at once, on all nodes together. */
  buildsPerProject: number
  /** How much of an app's output is taken in and kept (docs/hosting.md, "Logs"). */
  logs: HostingLogsConfig
}

export interface HostingLogsConfig {
  /** HOSTING_LOG_LINES_PER_SECOND: lines one instance or build may log a second; the rest are dropped and counted. */
  linesPerSecond: number
  /** HOSTING_LOG_BUFFER_LINES: lines one instance or build may have waiting for the store; past it they are dropped and counted. */
  bufferLines: number
  /** HOSTING_LOG_RETENTION_LINES: lines kept per app and kind (build, runtime), the newest. */
  retentionLines: number
  /** HOSTING_LOG_RETENTION_DAYS: lines older than this are deleted. */
  retentionMs: number
}

export interface GatewayConnectionLimits {
  /** GATEWAY_MAX_CONNECTIONS: open client connections in all, HTTP and HTTPS together; past it, new ones are closed at once. */
  maxConnections: number
  /** GATEWAY_MAX_CONNECTIONS_PER_ADDRESS: open client connections from one IPv4 address or one IPv6 /64. */
  maxConnectionsPerAddress: number
}

export interface ExternalGitConfig {
  /** HOSTING_GIT_ALLOWED_HOSTS: host names (`git.internal`, `*.corp.example`), addresses and CIDR ranges external git sources may reach although they are internal. */
  allowedHosts: string[]
  /** HOSTING_GIT_CA_FILE: PEM roots a clone of an external source trusts instead of the system's (a private CA); null for the system's. */
  caFile: string | null
}

export interface HostingTlsConfig {
  /** HOSTING_ACME_DIRECTORY_URL: the ACME CA's directory; null leaves certificates off. */
  acmeDirectoryUrl: string | null
  /** HOSTING_ACME_EMAIL: the ACME account's contact, if any. */
  acmeEmail: string | null
  /** HOSTING_ACME_CA_FILE, read at start: PEM roots the ACME client alone trusts (a private or test CA) instead of the system's. */
  acmeCaCertificates: string | null
  /** HOSTING_DNS_RESOLVERS: the resolvers hostname verification asks (`ip` or `ip:port`); empty means the system's. */
  dnsResolvers: string[]
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

/** Where `npm start` routes to its apps when GATEWAY_PORT is unset: beside the API's 8080, not on it. */
export const DEFAULT_GATEWAY_PORT = 8000

/** GATEWAY_PORT: unset means the default while hosting is on, `off` means no gateway, else a port (0: a free one). */
function gatewayPort (env: Env, enabled: boolean, apiPort: number): number | null {
  const raw = text(env, 'GATEWAY_PORT')
  if (raw?.toLowerCase() === 'off' || (raw === undefined && !enabled)) return null
  if (raw !== undefined && !/^\d+$/.test(raw)) throw new ConfigError('GATEWAY_PORT', `must be a port number or off, got "${raw}"`)
  const port = integer(env, 'GATEWAY_PORT', DEFAULT_GATEWAY_PORT, 0, 65535)
  if (port !== 0 && port === apiPort) throw new ConfigError('GATEWAY_PORT', `must differ from PORT (${apiPort}): the gateway and the API each need their own port${raw === undefined ? `, and ${DEFAULT_GATEWAY_PORT} is the gateway's default` : ''}`)
  return port
}

function gatewayConfig (env: Env, enabled: boolean, apiPort: number, apiHost: string): HostingConfig['gateway'] {
  const host = text(env, 'GATEWAY_HOST') ?? apiHost
  if (!/^[\w.:-]+$/.test(host)) throw new ConfigError('GATEWAY_HOST', `must be a host name or IP address, got "${host}"`)
  const port = gatewayPort(env, enabled, apiPort)
  const tlsPort = text(env, 'GATEWAY_TLS_PORT') === undefined ? null : integer(env, 'GATEWAY_TLS_PORT', 0, 0, 65535)
  if (tlsPort !== null && port === null && enabled) throw new ConfigError('GATEWAY_TLS_PORT', 'needs the gateway on: GATEWAY_PORT is off, and HTTPS is served beside the plain-HTTP port that answers ACME challenges')
  if (tlsPort !== null && tlsPort !== 0 && (tlsPort === port || tlsPort === apiPort)) throw new ConfigError('GATEWAY_TLS_PORT', `must differ from GATEWAY_PORT and PORT, got ${tlsPort}`)
  return { port, tlsPort, host, connections: gatewayConnectionLimits(env) }
}

function gatewayConnectionLimits (env: Env): GatewayConnectionLimits {
  const maxConnections = integer(env, 'GATEWAY_MAX_CONNECTIONS', 10_000, 1, 1_000_000)
  const maxConnectionsPerAddress = integer(env, 'GATEWAY_MAX_CONNECTIONS_PER_ADDRESS', 256, 1, 1_000_000)
  if (maxConnectionsPerAddress > maxConnections) throw new ConfigError('GATEWAY_MAX_CONNECTIONS_PER_ADDRESS', `must not exceed GATEWAY_MAX_CONNECTIONS (${maxConnections}), got ${maxConnectionsPerAddress}`)
  return { maxConnections, maxConnectionsPerAddress }
}

function externalGitConfig (env: Env): ExternalGitConfig {
  const allowedHosts = allowedHostList(env, 'HOSTING_GIT_ALLOWED_HOSTS')
  const caFile = text(env, 'HOSTING_GIT_CA_FILE') ?? null
  if (caFile !== null) {
    let pem: string
    try { pem = readFileSync(caFile, 'utf8') } catch (error) { throw new ConfigError('HOSTING_GIT_CA_FILE', `cannot be read: ${(error as Error).message}`) }
    if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new ConfigError('HOSTING_GIT_CA_FILE', `must hold PEM certificates: ${caFile} has none`)
  }
  return { allowedHosts, caFile: caFile === null ? null : resolve(caFile) }
}

function hostingConfig (env: Env, dataDir: string, apiPort: number, apiHost: string): HostingConfig {
  const enabled = flag(env, 'HOSTING_ENABLED', true)
  const driver = text(env, 'HOSTING_DRIVER') ?? 'process'
  if (driver !== 'process' && driver !== 'container') throw new ConfigError('HOSTING_DRIVER', `must be process or container, got "${driver}"`)
  const appsDomain = (text(env, 'HOSTING_APPS_DOMAIN') ?? 'apps.localhost').toLowerCase().replace(/\.$/, '')
  if (!DNS_NAME.test(appsDomain)) throw new ConfigError('HOSTING_APPS_DOMAIN', `must be a domain name, got "${appsDomain}"`)
  const socketPath = text(env, 'HOSTING_DOCKER_SOCKET')
  const baseImage = text(env, 'HOSTING_BASE_IMAGE')
  if (driver === 'container' && socketPath === undefined) throw new ConfigError('HOSTING_DOCKER_SOCKET', 'must be set with HOSTING_DRIVER=container: the Docker or Podman API socket')
  if (driver === 'container' && baseImage === undefined) throw new ConfigError('HOSTING_BASE_IMAGE', 'must be set with HOSTING_DRIVER=container: the image apps build on, e.g. node:20-slim')
  if (socketPath !== undefined && !socketPath.startsWith('/')) throw new ConfigError('HOSTING_DOCKER_SOCKET', `must be an absolute path to a Unix socket, got "${socketPath}"`)
  const cpus = Number(text(env, 'HOSTING_INSTANCE_CPUS') ?? '1')
  if (!(cpus > 0 && cpus <= 64)) throw new ConfigError('HOSTING_INSTANCE_CPUS', 'must be a number of cores above 0 and at most 64')
  return {
    enabled,
    driver,
    dir: resolve(dataDir, text(env, 'HOSTING_DIR') ?? 'hosting'),
    appsDomain,
    gateway: gatewayConfig(env, enabled, apiPort, apiHost),
    instanceLimits: { memoryMb: integer(env, 'HOSTING_INSTANCE_MEMORY_MB', 512, 16, 1024 * 1024), cpus, pids: integer(env, 'HOSTING_INSTANCE_PIDS', 256, 8, 1_000_000) },
    healthTimeoutMs: integer(env, 'HOSTING_HEALTH_TIMEOUT_SECONDS', 60, 1, 3600) * 1000,
    stopGraceMs: integer(env, 'HOSTING_STOP_GRACE_SECONDS', 10, 0, 600) * 1000,
    stopAppsOnExit: flag(env, 'HOSTING_STOP_APPS_ON_EXIT', false),
    container: socketPath !== undefined && baseImage !== undefined ? { socketPath, baseImage } : null,
    externalGit: externalGitConfig(env),
    appAllowedRanges: appAllowedRanges(env),
    buildTimeoutMs: integer(env, 'HOSTING_BUILD_TIMEOUT_SECONDS', 900, 1, 86_400) * 1000,
    buildsPerProject: integer(env, 'HOSTING_BUILDS_PER_PROJECT', 1, 1, 100),
    logs: {
      linesPerSecond: integer(env, 'HOSTING_LOG_LINES_PER_SECOND', 500, 1, 1_000_000),
      bufferLines: integer(env, 'HOSTING_LOG_BUFFER_LINES', 2000, 10, 1_000_000),
      retentionLines: integer(env, 'HOSTING_LOG_RETENTION_LINES', 10_000, 100, 10_000_000),
      retentionMs: integer(env, 'HOSTING_LOG_RETENTION_DAYS', 14, 1, 3650) * 86_400_000
    }
  }
}

function appAllowedRanges (env: Env): Ipv4Range[] {
  const entries = (text(env, 'HOSTING_APP_ALLOWED_RANGES') ?? '').split(',').map((entry) => entry.trim()).filter((entry) => entry !== '')
  return entries.map((entry) => {
    const range = parseIpv4Range(entry)
    if (range === null) throw new ConfigError('HOSTING_APP_ALLOWED_RANGES', `must be a comma-separated list of IPv4 addresses and CIDR ranges (10.1.2.3, 10.1.0.0/16; apps have no IPv6 route), got "${entry}"`)
    const conflict = allowanceConflict(range)
    if (conflict !== null) throw new ConfigError('HOSTING_APP_ALLOWED_RANGES', `cannot allow "${entry}": ${conflict}`)
    return range
  })
}

/** `192.0.2.1`, `192.0.2.1:5353`, `2001:db8::1` or `[2001:db8::1]:5353`, as node:dns takes them. */
function resolverAddress (entry: string): boolean {
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry)
  const withPort = /^([^:]+):(\d{1,5})$/.exec(entry)
  const [address, port] = bracketed !== null ? [bracketed[1], bracketed[2]] : withPort !== null ? [withPort[1], withPort[2]] : [entry, undefined]
  return isIP(address) !== 0 && (port === undefined || (Number(port) >= 1 && Number(port) <= 65535))
}

function hostingTlsConfig (env: Env): HostingTlsConfig {
  const directory = text(env, 'HOSTING_ACME_DIRECTORY_URL')
  const email = text(env, 'HOSTING_ACME_EMAIL') ?? null
  if (email !== null && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email)) throw new ConfigError('HOSTING_ACME_EMAIL', `must be an email address, got "${email}"`)
  const caFile = text(env, 'HOSTING_ACME_CA_FILE')
  let acmeCaCertificates: string | null = null
  if (caFile !== undefined) {
    try { acmeCaCertificates = readFileSync(caFile, 'utf8') } catch (error) { throw new ConfigError('HOSTING_ACME_CA_FILE', `cannot be read: ${(error as Error).message}`) }
    if (!acmeCaCertificates.includes('-----BEGIN CERTIFICATE-----')) throw new ConfigError('HOSTING_ACME_CA_FILE', `must hold PEM certificates: ${caFile} has none`)
  }
  const dnsResolvers = (text(env, 'HOSTING_DNS_RESOLVERS') ?? '').split(',').map((entry) => entry.trim()).filter((entry) => entry !== '')
  const badResolver = dnsResolvers.find((entry) => !resolverAddress(entry))
  if (badResolver !== undefined) throw new ConfigError('HOSTING_DNS_RESOLVERS', `must be a comma-separated list of IP addresses, each with an optional :port, got "${badResolver}"`)
  return {
    acmeDirectoryUrl: directory === undefined ? null : parseHttpUrl('HOSTING_ACME_DIRECTORY_URL', directory).href,
    acmeEmail: email,
    acmeCaCertificates,
    dnsResolvers
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
    hosting: hostingConfig(env, dataDir, port, host),
    hostingTls: hostingTlsConfig(env),
    jobs: {
      slots: integer(env, 'JOB_WORKER_SLOTS', 2, 1, 256),
      longSlots: integer(env, 'JOB_WORKER_LONG_SLOTS', 2, 1, 256)
    },
    webhooks: parseWebhooksConfig(env),
    llm: parseLlmConfig(env)
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
