import { readFileSync } from 'node:fs'
import { isIP } from 'node:net'
import { resolve } from 'node:path'
import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { allowedHostList, ConfigError, DNS_NAME, flag, integer, parseHttpUrl, text, type Env } from '../platform/config-env.js'
import { allowanceConflict, parseIpv4Range } from './network/plan.js'

/** Where `npm start` routes to its apps when GATEWAY_PORT is unset: beside the API's 8080, not on it. */
export const DEFAULT_GATEWAY_PORT = 8000

const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

export const GatewayConnectionLimits = Type.Object({
  maxConnections: Type.Integer({ minimum: 1, variable: 'GATEWAY_MAX_CONNECTIONS', description: 'Open client connections in all, HTTP and HTTPS together; past it, new ones are closed at once' }),
  maxConnectionsPerAddress: Type.Integer({ minimum: 1, variable: 'GATEWAY_MAX_CONNECTIONS_PER_ADDRESS', description: 'Open client connections from one IPv4 address or one IPv6 /64' })
})
export type GatewayConnectionLimits = Static<typeof GatewayConnectionLimits>

export const ExternalGitConfig = Type.Object({
  allowedHosts: Type.Array(Type.String(), { variable: 'HOSTING_GIT_ALLOWED_HOSTS', description: 'Host names (`git.internal`, `*.corp.example`), addresses and CIDR ranges external git sources may reach although they are internal' }),
  caFile: Nullable(Type.String({ variable: 'HOSTING_GIT_CA_FILE', description: 'PEM roots a clone of an external source trusts instead of the system\'s (a private CA); null for the system\'s' }))
}, { description: 'What an external git source may reach (docs/hosting.md)' })
export type ExternalGitConfig = Static<typeof ExternalGitConfig>

export const HostingLogsConfig = Type.Object({
  linesPerSecond: Type.Integer({ minimum: 1, variable: 'HOSTING_LOG_LINES_PER_SECOND', description: 'Lines one instance or build may log a second; the rest are dropped and counted' }),
  bufferLines: Type.Integer({ minimum: 10, variable: 'HOSTING_LOG_BUFFER_LINES', description: 'Lines one instance or build may have waiting for the store; past it they are dropped and counted' }),
  retentionLines: Type.Integer({ minimum: 100, variable: 'HOSTING_LOG_RETENTION_LINES', description: 'Lines kept per app and kind (build, runtime), the newest' }),
  retentionMs: Type.Integer({ minimum: 86_400_000, variable: 'HOSTING_LOG_RETENTION_DAYS', description: 'Lines older than this are deleted' })
}, { description: 'How much of an app\'s output is taken in and kept (docs/hosting.md, "Logs")' })
export type HostingLogsConfig = Static<typeof HostingLogsConfig>

/**
 * The hosting family's settings (services/hosting/, docs/hosting.md), each
 * with the variable it is read from, as `loadConfig().hosting`.
 */
export const HostingConfig = Type.Object({
  enabled: Type.Boolean({ variable: 'HOSTING_ENABLED', description: 'When off, the hosting family answers `hostingErrors.disabled` (404) and nothing runs' }),
  driver: Type.Union([Type.Literal('process'), Type.Literal('container')], { variable: 'HOSTING_DRIVER', description: 'Child processes (the default) or containers over the Docker Engine API' }),
  dir: Type.String({ variable: 'HOSTING_DIR', description: 'Sources being built, artifacts and static trees; defaults to DATA_DIR/hosting' }),
  appsDomain: Type.String({ variable: 'HOSTING_APPS_DOMAIN', description: 'Every app answers at `<name>.<domain>` through the gateway' }),
  gateway: Type.Object({
    port: Nullable(Type.Integer({ minimum: 0, maximum: 65535, variable: 'GATEWAY_PORT', description: 'With hosting on, the gateway listens here (DEFAULT_GATEWAY_PORT when unset, `off` for none, 0 picks a free one); null: no listener' })),
    tlsPort: Nullable(Type.Integer({ minimum: 0, maximum: 65535, variable: 'GATEWAY_TLS_PORT', description: 'HTTPS only with a TLS port' })),
    host: Type.String({ variable: 'GATEWAY_HOST', description: 'The gateway\'s listening address; HOST when unset' }),
    connections: GatewayConnectionLimits
  }),
  instanceLimits: Type.Object({
    memoryMb: Type.Integer({ minimum: 16, variable: 'HOSTING_INSTANCE_MEMORY_MB', description: 'Memory of each instance' }),
    cpus: Type.Number({ exclusiveMinimum: 0, maximum: 64, variable: 'HOSTING_INSTANCE_CPUS', description: 'Cores of each instance' }),
    pids: Type.Integer({ minimum: 8, variable: 'HOSTING_INSTANCE_PIDS', description: 'Processes of each instance' })
  }),
  healthTimeoutMs: Type.Integer({ minimum: 1000, variable: 'HOSTING_HEALTH_TIMEOUT_SECONDS', description: 'How long a new instance has to answer its health check' }),
  stopGraceMs: Type.Integer({ minimum: 0, variable: 'HOSTING_STOP_GRACE_SECONDS', description: 'SIGTERM, then SIGKILL after this long' }),
  stopAppsOnExit: Type.Boolean({
    variable: 'HOSTING_STOP_APPS_ON_EXIT',
    description: 'Stop every app instance when the server shuts down. Off by default: instances outlive the server, and the next start adopts them, so a restart or an upgrade costs the apps nothing'
  }),
  container: Nullable(Type.Object({
    socketPath: Type.String({ variable: 'HOSTING_DOCKER_SOCKET', description: 'The engine\'s Unix socket; required with HOSTING_DRIVER=container' }),
    baseImage: Type.String({ variable: 'HOSTING_BASE_IMAGE', description: 'The image apps build on; required with HOSTING_DRIVER=container' })
  })),
  externalGit: ExternalGitConfig,
  appAllowedRanges: Type.Array(Type.Object({ network: Type.String(), prefix: Type.Integer({ minimum: 0, maximum: 32 }) }), {
    variable: 'HOSTING_APP_ALLOWED_RANGES',
    description: 'Internal IPv4 addresses and ranges apps and their builds may reach from their network namespaces'
  }),
  buildTimeoutMs: Type.Integer({ minimum: 1000, variable: 'HOSTING_BUILD_TIMEOUT_SECONDS', description: 'A build still running after this long is stopped and fails' }),
  buildsPerProject: Type.Integer({ minimum: 1, maximum: 100, variable: 'HOSTING_BUILDS_PER_PROJECT', description: 'Builds of one project running at once, on all nodes together' }),
  logs: HostingLogsConfig
})
export type HostingConfig = Static<typeof HostingConfig>

/**
 * Hosting's TLS settings: how custom hostnames are verified and where their
 * certificates come from (docs/hosting.md), as `loadConfig().hostingTls`.
 */
export const HostingTlsConfig = Type.Object({
  acmeDirectoryUrl: Nullable(Type.String({ variable: 'HOSTING_ACME_DIRECTORY_URL', description: 'The ACME CA\'s directory; null leaves certificates off' })),
  acmeEmail: Nullable(Type.String({ variable: 'HOSTING_ACME_EMAIL', description: 'The ACME account\'s contact, if any' })),
  acmeCaCertificates: Nullable(Type.String({ variable: 'HOSTING_ACME_CA_FILE', description: 'Read at start: PEM roots the ACME client alone trusts (a private or test CA) instead of the system\'s' })),
  dnsResolvers: Type.Array(Type.String(), { variable: 'HOSTING_DNS_RESOLVERS', description: 'The resolvers hostname verification asks (`ip` or `ip:port`); empty means the system\'s' })
})
export type HostingTlsConfig = Static<typeof HostingTlsConfig>

/** What hosting's settings are read beside: the API's own listener and DATA_DIR. */
export interface HostingConfigContext { dataDir: string, apiPort: number, apiHost: string }

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

/** A PEM file read at start, refused naming its variable when it cannot be read or holds no certificate. */
function pemFile (variable: string, path: string): string {
  let pem: string
  try { pem = readFileSync(path, 'utf8') } catch (error) { throw new ConfigError(variable, `cannot be read: ${(error as Error).message}`) }
  if (!pem.includes('-----BEGIN CERTIFICATE-----')) throw new ConfigError(variable, `must hold PEM certificates: ${path} has none`)
  return pem
}

function externalGitConfig (env: Env): ExternalGitConfig {
  const allowedHosts = allowedHostList(env, 'HOSTING_GIT_ALLOWED_HOSTS')
  const caFile = text(env, 'HOSTING_GIT_CA_FILE') ?? null
  if (caFile !== null) pemFile('HOSTING_GIT_CA_FILE', caFile)
  return { allowedHosts, caFile: caFile === null ? null : resolve(caFile) }
}

function appAllowedRanges (env: Env): HostingConfig['appAllowedRanges'] {
  const entries = (text(env, 'HOSTING_APP_ALLOWED_RANGES') ?? '').split(',').map((entry) => entry.trim()).filter((entry) => entry !== '')
  return entries.map((entry) => {
    const range = parseIpv4Range(entry)
    if (range === null) throw new ConfigError('HOSTING_APP_ALLOWED_RANGES', `must be a comma-separated list of IPv4 addresses and CIDR ranges (10.1.2.3, 10.1.0.0/16; apps have no IPv6 route), got "${entry}"`)
    const conflict = allowanceConflict(range)
    if (conflict !== null) throw new ConfigError('HOSTING_APP_ALLOWED_RANGES', `cannot allow "${entry}": ${conflict}`)
    return range
  })
}

export function parseHostingConfig (env: Env, { dataDir, apiPort, apiHost }: HostingConfigContext): HostingConfig {
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

/** `192.0.2.1`, `192.0.2.1:5353`, `2001:db8::1` or `[2001:db8::1]:5353`, as node:dns takes them. */
function resolverAddress (entry: string): boolean {
  const bracketed = /^\[([^\]]+)\](?::(\d{1,5}))?$/.exec(entry)
  const withPort = /^([^:]+):(\d{1,5})$/.exec(entry)
  const [address, port] = bracketed !== null ? [bracketed[1], bracketed[2]] : withPort !== null ? [withPort[1], withPort[2]] : [entry, undefined]
  return isIP(address) !== 0 && (port === undefined || (Number(port) >= 1 && Number(port) <= 65535))
}

export function parseHostingTlsConfig (env: Env): HostingTlsConfig {
  const directory = text(env, 'HOSTING_ACME_DIRECTORY_URL')
  const email = text(env, 'HOSTING_ACME_EMAIL') ?? null
  if (email !== null && !/^[^@\s]+@[^@\s]+\.[^@\s]+$/.test(email)) throw new ConfigError('HOSTING_ACME_EMAIL', `must be an email address, got "${email}"`)
  const caFile = text(env, 'HOSTING_ACME_CA_FILE')
  const acmeCaCertificates = caFile === undefined ? null : pemFile('HOSTING_ACME_CA_FILE', caFile)
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
