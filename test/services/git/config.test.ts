import t from 'tap'
import { readFileSync } from 'node:fs'
import { Value } from '@sinclair/typebox/value'
import { ConfigError } from '../../../services/platform/config-env.js'
import { GitConfig, parseGitConfig } from '../../../services/git/config.js'

/** The variables the schema says its settings come from. */
function variables (schema: Record<string, unknown>): string[] {
  const own = typeof schema.variable === 'string' ? [schema.variable] : []
  const properties = Object.values((schema.properties ?? {}) as Record<string, Record<string, unknown>>)
  return [...own, ...properties.flatMap(variables)]
}

const full = {
  GIT_HOSTING_ENABLED: 'off',
  GIT_REPOS_DIR: '/srv/git',
  GIT_SSH_PORT: '2222',
  GIT_SSH_MAX_CONNECTIONS: '100',
  GIT_SSH_MAX_CONNECTIONS_PER_ADDRESS: '10',
  GIT_SSH_AUTH_TIMEOUT_SECONDS: '20',
  GIT_SSH_MAX_AUTH_ATTEMPTS: '3',
  GIT_SSH_IDLE_TIMEOUT_SECONDS: '60'
}

t.test('the parser gives what the schema describes, defaults and all', async (t) => {
  for (const env of [{}, full]) t.ok(Value.Check(GitConfig, parseGitConfig(env, '/data')), JSON.stringify(env))
  t.same(variables(GitConfig).sort(), Object.keys(full).sort(), 'each setting names the one variable it is read from')
  t.match(parseGitConfig({}, '/data'), { enabled: true, reposDir: '/data/git', sshPort: null, sshLimits: { maxConnections: 512, maxConnectionsPerAddress: 32 } })
  t.match(parseGitConfig(full, '/data'), { enabled: false, reposDir: '/srv/git', sshPort: 2222, sshLimits: { maxConnectionsPerAddress: 10, idleTimeoutSeconds: 60 } })
})

t.test('each variable is in the README\'s configuration table, and a bad value names it', async (t) => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
  const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1))
  for (const variable of variables(GitConfig)) t.ok(table.includes(`\`${variable}\``), `${variable} is documented`)
  const bad: Array<[string, Record<string, string>]> = [
    ['GIT_HOSTING_ENABLED', { GIT_HOSTING_ENABLED: 'maybe' }],
    ['GIT_SSH_PORT', { GIT_SSH_PORT: '65536' }],
    ['GIT_SSH_MAX_CONNECTIONS', { GIT_SSH_MAX_CONNECTIONS: '0' }],
    ['GIT_SSH_MAX_CONNECTIONS_PER_ADDRESS', { GIT_SSH_MAX_CONNECTIONS: '10', GIT_SSH_MAX_CONNECTIONS_PER_ADDRESS: '11' }],
    ['GIT_SSH_AUTH_TIMEOUT_SECONDS', { GIT_SSH_AUTH_TIMEOUT_SECONDS: '601' }],
    ['GIT_SSH_MAX_AUTH_ATTEMPTS', { GIT_SSH_MAX_AUTH_ATTEMPTS: 'many' }],
    ['GIT_SSH_IDLE_TIMEOUT_SECONDS', { GIT_SSH_IDLE_TIMEOUT_SECONDS: '0' }]
  ]
  for (const [variable, env] of bad) {
    const error = (() => { try { parseGitConfig(env, '/data') } catch (caught) { return caught } })()
    t.ok(error instanceof ConfigError && error.variable === variable && error.message.startsWith(`Invalid configuration: ${variable} `), `${JSON.stringify(env)} is refused, naming ${variable}`)
  }
})
