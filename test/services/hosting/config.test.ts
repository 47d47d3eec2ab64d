import t from 'tap'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Value } from '@sinclair/typebox/value'
import { ConfigError } from '../../../services/platform/config-env.js'
import { HostingConfig, HostingTlsConfig, parseHostingConfig, parseHostingTlsConfig } from '../../../services/hosting/config.js'

/** The variables a schema names, through nested objects, nullable unions and arrays. */
function variables (schema: Record<string, unknown>): string[] {
  const own = typeof schema.variable === 'string' ? [schema.variable] : []
  const children = [...Object.values((schema.properties ?? {}) as Record<string, Record<string, unknown>>), ...((schema.anyOf ?? []) as Array<Record<string, unknown>>)]
  return [...own, ...children.flatMap(variables)]
}

const context = { dataDir: '/srv/plinth', apiPort: 8080, apiHost: '127.0.0.1' }
const dir = mkdtempSync(join(tmpdir(), 'plinth-hosting-config-'))
t.teardown(() => rmSync(dir, { recursive: true, force: true }))
const pem = join(dir, 'ca.pem')
writeFileSync(pem, '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n')

const full = {
  HOSTING_ENABLED: 'true',
  HOSTING_DRIVER: 'container',
  HOSTING_DIR: 'apps',
  HOSTING_APPS_DOMAIN: 'Apps.Example.com.',
  GATEWAY_PORT: '8001',
  GATEWAY_TLS_PORT: '8443',
  GATEWAY_HOST: '0.0.0.0',
  GATEWAY_MAX_CONNECTIONS: '500',
  GATEWAY_MAX_CONNECTIONS_PER_ADDRESS: '50',
  HOSTING_INSTANCE_MEMORY_MB: '256',
  HOSTING_INSTANCE_CPUS: '0.5',
  HOSTING_INSTANCE_PIDS: '64',
  HOSTING_HEALTH_TIMEOUT_SECONDS: '30',
  HOSTING_STOP_GRACE_SECONDS: '5',
  HOSTING_STOP_APPS_ON_EXIT: 'on',
  HOSTING_DOCKER_SOCKET: '/run/podman.sock',
  HOSTING_BASE_IMAGE: 'node:20-slim',
  HOSTING_GIT_ALLOWED_HOSTS: 'git.internal, 10.0.0.0/8',
  HOSTING_GIT_CA_FILE: pem,
  HOSTING_APP_ALLOWED_RANGES: '10.1.2.3, 10.20.0.0/16',
  HOSTING_BUILD_TIMEOUT_SECONDS: '60',
  HOSTING_BUILDS_PER_PROJECT: '2',
  HOSTING_LOG_LINES_PER_SECOND: '100',
  HOSTING_LOG_BUFFER_LINES: '400',
  HOSTING_LOG_RETENTION_LINES: '1000',
  HOSTING_LOG_RETENTION_DAYS: '2'
}
const fullTls = {
  HOSTING_ACME_DIRECTORY_URL: 'https://acme.example.com/dir',
  HOSTING_ACME_EMAIL: 'ops@example.com',
  HOSTING_ACME_CA_FILE: pem,
  HOSTING_DNS_RESOLVERS: '192.0.2.53, [2001:db8::1]:5353'
}

t.test('the parsers give what the schemas describe, defaults and all', async (t) => {
  for (const env of [{}, full]) t.ok(Value.Check(HostingConfig, parseHostingConfig(env, context)), JSON.stringify(env))
  for (const env of [{}, fullTls]) t.ok(Value.Check(HostingTlsConfig, parseHostingTlsConfig(env)), JSON.stringify(env))
  t.same(variables(HostingConfig).sort(), Object.keys(full).sort(), 'each hosting setting names the one variable it is read from')
  t.same(variables(HostingTlsConfig).sort(), Object.keys(fullTls).sort(), 'each TLS setting names the one variable it is read from')
  t.match(parseHostingConfig(full, context), {
    dir: '/srv/plinth/apps',
    appsDomain: 'apps.example.com',
    gateway: { port: 8001, tlsPort: 8443, host: '0.0.0.0', connections: { maxConnections: 500, maxConnectionsPerAddress: 50 } },
    container: { socketPath: '/run/podman.sock', baseImage: 'node:20-slim' },
    appAllowedRanges: [{ network: '10.1.2.3', prefix: 32 }, { network: '10.20.0.0', prefix: 16 }],
    logs: { retentionMs: 2 * 86_400_000 }
  })
  t.match(parseHostingConfig({}, context), { enabled: true, driver: 'process', dir: '/srv/plinth/hosting', gateway: { port: 8000, tlsPort: null, host: '127.0.0.1' }, container: null })
})

t.test('each variable is in the README\'s configuration table, and a bad value names it', async (t) => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
  const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1))
  for (const variable of [...variables(HostingConfig), ...variables(HostingTlsConfig)]) t.ok(table.includes(`\`${variable}\``), `${variable} is documented`)
  const bad: Array<[string, Record<string, string>]> = [
    ['HOSTING_DRIVER', { HOSTING_DRIVER: 'vm' }],
    ['HOSTING_APPS_DOMAIN', { HOSTING_APPS_DOMAIN: 'not a domain' }],
    ['GATEWAY_PORT', { GATEWAY_PORT: '8080' }],
    ['GATEWAY_TLS_PORT', { GATEWAY_PORT: 'off', GATEWAY_TLS_PORT: '8443' }],
    ['GATEWAY_MAX_CONNECTIONS_PER_ADDRESS', { GATEWAY_MAX_CONNECTIONS: '10', GATEWAY_MAX_CONNECTIONS_PER_ADDRESS: '11' }],
    ['HOSTING_DOCKER_SOCKET', { HOSTING_DRIVER: 'container', HOSTING_BASE_IMAGE: 'node:20-slim' }],
    ['HOSTING_INSTANCE_CPUS', { HOSTING_INSTANCE_CPUS: '0' }],
    ['HOSTING_GIT_CA_FILE', { HOSTING_GIT_CA_FILE: join(dir, 'missing.pem') }],
    ['HOSTING_APP_ALLOWED_RANGES', { HOSTING_APP_ALLOWED_RANGES: '2001:db8::/32' }],
    ['HOSTING_ACME_EMAIL', { HOSTING_ACME_EMAIL: 'nobody' }],
    ['HOSTING_ACME_CA_FILE', { HOSTING_ACME_CA_FILE: join(dir, 'missing.pem') }],
    ['HOSTING_DNS_RESOLVERS', { HOSTING_DNS_RESOLVERS: 'resolver.example' }]
  ]
  for (const [variable, env] of bad) {
    const error = (() => { try { parseHostingConfig(env, context); parseHostingTlsConfig(env) } catch (caught) { return caught } })()
    t.ok(error instanceof ConfigError && error.variable === variable && error.message.startsWith(`Invalid configuration: ${variable} `), `${JSON.stringify(env)} is refused, naming ${variable}`)
  }
})
