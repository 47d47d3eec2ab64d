import { resolve } from 'node:path'
import { Type, type Static } from '@sinclair/typebox'
import { ConfigError, flag, integer, text, type Env } from '../platform/config-env.js'

const SshLimits = Type.Object({
  maxConnections: Type.Integer({ minimum: 1, maximum: 100_000, variable: 'GIT_SSH_MAX_CONNECTIONS', description: 'Open connections in all; past it, new ones are closed at once' }),
  maxConnectionsPerAddress: Type.Integer({ minimum: 1, maximum: 100_000, variable: 'GIT_SSH_MAX_CONNECTIONS_PER_ADDRESS', description: 'Open connections from one client address, at most GIT_SSH_MAX_CONNECTIONS' }),
  authTimeoutSeconds: Type.Integer({ minimum: 1, maximum: 600, variable: 'GIT_SSH_AUTH_TIMEOUT_SECONDS', description: 'A connection not signed in by then is closed' }),
  maxAuthAttempts: Type.Integer({ minimum: 1, maximum: 100, variable: 'GIT_SSH_MAX_AUTH_ATTEMPTS', description: 'Failed sign-in attempts one connection may make' }),
  idleTimeoutSeconds: Type.Integer({ minimum: 1, maximum: 86_400, variable: 'GIT_SSH_IDLE_TIMEOUT_SECONDS', description: 'A signed-in connection on which no git data moves for this long is closed' })
}, { description: 'What one SSH client may hold (docs/git.md gives the defaults\' reasons)' })
export type SshLimits = Static<typeof SshLimits>

/**
 * The git family's settings, each with the variable it is read from (the
 * README's configuration table lists them), as `loadConfig().git`.
 */
export const GitConfig = Type.Object({
  enabled: Type.Boolean({ variable: 'GIT_HOSTING_ENABLED', description: 'When off, the git family answers 404 and git need not be installed' }),
  reposDir: Type.String({ variable: 'GIT_REPOS_DIR', description: 'Where the bare repositories live, one folder per project; under DATA_DIR unless absolute' }),
  sshPort: Type.Union([Type.Integer({ minimum: 0, maximum: 65535 }), Type.Null()], { variable: 'GIT_SSH_PORT', description: 'Git over SSH listens here, on HOST (0 picks a free port); null, when unset, means no SSH' }),
  sshLimits: SshLimits
})
export type GitConfig = Static<typeof GitConfig>

export function parseGitConfig (env: Env, dataDir: string): GitConfig {
  return {
    enabled: flag(env, 'GIT_HOSTING_ENABLED', true),
    reposDir: resolve(dataDir, text(env, 'GIT_REPOS_DIR') ?? 'git'),
    sshPort: text(env, 'GIT_SSH_PORT') === undefined ? null : integer(env, 'GIT_SSH_PORT', 0, 0, 65535),
    sshLimits: parseSshLimits(env)
  }
}

function parseSshLimits (env: Env): SshLimits {
  const maxConnections = integer(env, 'GIT_SSH_MAX_CONNECTIONS', 512, 1, 100_000)
  const maxConnectionsPerAddress = integer(env, 'GIT_SSH_MAX_CONNECTIONS_PER_ADDRESS', 32, 1, 100_000)
  if (maxConnectionsPerAddress > maxConnections) {
    throw new ConfigError('GIT_SSH_MAX_CONNECTIONS_PER_ADDRESS', `must not exceed GIT_SSH_MAX_CONNECTIONS (${maxConnections}), got ${maxConnectionsPerAddress}`)
  }
  return {
    maxConnections,
    maxConnectionsPerAddress,
    authTimeoutSeconds: integer(env, 'GIT_SSH_AUTH_TIMEOUT_SECONDS', 30, 1, 600),
    maxAuthAttempts: integer(env, 'GIT_SSH_MAX_AUTH_ATTEMPTS', 6, 1, 100),
    idleTimeoutSeconds: integer(env, 'GIT_SSH_IDLE_TIMEOUT_SECONDS', 300, 1, 86_400)
  }
}
