import { ConfigError, UnavailableAtStartError, type Config } from '../config.js'

/** How the server says why it could not start: one line, and the sysexits code a supervisor can act on. */
export interface StartupFailure { line: string, exitCode: number }

const EX_UNAVAILABLE = 69
const EX_NOPERM = 77
const EX_CONFIG = 78

type Ports = Pick<Config, 'port' | 'git' | 'dns' | 'hosting'>

/** The variable that chose `port`: the API's, the gateway's, git over SSH's or DNS's. */
function portVariable (config: Ports, port: number): string | null {
  const chosen: Array<[string, number | null]> = [
    ['PORT', config.port],
    ['GATEWAY_PORT', config.hosting.gateway.port],
    ['GATEWAY_TLS_PORT', config.hosting.gateway.tlsPort],
    ['GIT_SSH_PORT', config.git.sshPort],
    ['DNS_PORT', config.dns.port]
  ]
  return chosen.find(([, value]) => value !== null && value !== 0 && value === port)?.[0] ?? null
}

/**
 * The start-up failures an operator fixes outside the program (a variable, a
 * database, a port), as one line without a stack trace; null for anything
 * else, which is a bug and is printed whole.
 */
export function startupFailure (error: unknown, config: Ports | null): StartupFailure | null {
  if (error instanceof ConfigError) return { line: error.message, exitCode: EX_CONFIG }
  if (error instanceof UnavailableAtStartError) return { line: error.message, exitCode: EX_UNAVAILABLE }
  const { code, port, address } = error as { code?: unknown, port?: unknown, address?: unknown }
  if ((code !== 'EADDRINUSE' && code !== 'EACCES') || typeof port !== 'number' || config === null) return null
  const variable = portVariable(config, port) ?? 'a port'
  const where = typeof address === 'string' ? ` on ${address}` : ''
  return code === 'EADDRINUSE'
    ? { line: `Cannot start: ${variable} ${port} is already in use${where}: another process listens there; stop it or set ${variable} to a free port`, exitCode: EX_UNAVAILABLE }
    : { line: `Cannot start: ${variable} ${port} cannot be bound${where}: permission denied (ports below 1024 need privileges); set ${variable} to another port`, exitCode: EX_NOPERM }
}
