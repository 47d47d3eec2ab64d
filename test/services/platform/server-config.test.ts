import t from 'tap'
import { readFileSync } from 'node:fs'
import { availableParallelism } from 'node:os'
import { resolve } from 'node:path'
import { Value } from '@sinclair/typebox/value'
import { ConfigError } from '../../../services/platform/config-env.js'
import { startupFailure } from '../../../services/platform/startup-failure.js'
import { parseServerConfig, ServerConfig } from '../../../services/platform/server-config.js'

function variables (schema: Record<string, unknown>): string[] {
  const own = typeof schema.variable === 'string' ? [schema.variable] : []
  const properties = Object.values((schema.properties ?? {}) as Record<string, Record<string, unknown>>)
  return [...own, ...properties.flatMap(variables)]
}

const KEY = Buffer.alloc(32, 7).toString('base64')
const RETIRED = 'ab'.repeat(32)

const full = {
  WORKERS: '3',
  PORT: '9000',
  HOST: '::',
  DATA_DIR: '/srv/plinth',
  PUBLIC_URL: 'https://API.example.com/',
  MONGODB_URL: 'mongodb+srv://db.example.com',
  MONGODB_DB: 'prod',
  MONGODB_QUERY_TIMEOUT_MS: '2500',
  MONGODB_CONNECT_TIMEOUT_SECONDS: '5',
  STORE_SWEEP_PAGE_SIZE: '250',
  STORE_BUSY_TIMEOUT_MS: '750',
  LOG_LEVEL: 'warn',
  BODY_LIMIT: '2048',
  PLINTH_MASTER_KEY: KEY,
  PLINTH_MASTER_KEY_RETIRED: ` ${RETIRED} ,`,
  CONNECTION_TIMEOUT_SECONDS: '30',
  REQUEST_TIMEOUT_SECONDS: '600',
  HEADERS_TIMEOUT_SECONDS: '600',
  KEEP_ALIVE_TIMEOUT_SECONDS: '65',
  TRUST_PROXY: '10.0.0.0/8, ::1',
  CORS_ORIGINS: 'https://Console.Example.com'
}

const defaults = {
  workers: availableParallelism(),
  lead: true,
  port: 8080,
  host: '127.0.0.1',
  dataDir: resolve('./data'),
  publicUrl: 'http://127.0.0.1:8080',
  tokenIssuer: 'plinth',
  mongodbUrl: null,
  mongodbDb: 'plinth',
  mongodbQueryTimeoutMs: 10_000,
  mongodbConnectTimeoutSeconds: 60,
  storeSweepPageSize: 1000,
  storeBusyTimeoutMs: 5000,
  logLevel: 'info',
  bodyLimit: 1024 * 1024,
  masterKey: null,
  retiredMasterKeys: [],
  timeouts: { connectionSeconds: 60, requestSeconds: 300, headersSeconds: 20, keepAliveSeconds: 72 },
  trustProxy: false,
  corsOrigins: []
}

t.test('the parser gives what the schema describes, defaults and all', async (t) => {
  for (const env of [{}, full, { TRUST_PROXY: '3', CORS_ORIGINS: '*' }]) t.ok(Value.Check(ServerConfig, parseServerConfig(env)), JSON.stringify(env))
  t.same(variables(ServerConfig).sort(), Object.keys(full).sort(), 'each setting names the one variable it is read from')
  t.same(parseServerConfig({}), defaults)
  t.same(parseServerConfig(full), {
    workers: 3,
    lead: true,
    port: 9000,
    host: '::',
    dataDir: '/srv/plinth',
    publicUrl: 'https://api.example.com',
    tokenIssuer: 'https://api.example.com',
    mongodbUrl: 'mongodb+srv://db.example.com',
    mongodbDb: 'prod',
    mongodbQueryTimeoutMs: 2500,
    mongodbConnectTimeoutSeconds: 5,
    storeSweepPageSize: 250,
    storeBusyTimeoutMs: 750,
    logLevel: 'warn',
    bodyLimit: 2048,
    masterKey: KEY,
    retiredMasterKeys: [RETIRED],
    timeouts: { connectionSeconds: 30, requestSeconds: 600, headersSeconds: 600, keepAliveSeconds: 65 },
    trustProxy: ['10.0.0.0/8', '::1'],
    corsOrigins: ['https://console.example.com']
  })
  t.equal(parseServerConfig({ HOST: '::1', PORT: '0' }).publicUrl, 'http://[::1]:0', 'an IPv6 host is bracketed in the default public URL')
  t.equal(parseServerConfig({ HOST: '0.0.0.0' }).publicUrl, 'http://127.0.0.1:8080', 'a wildcard host advertises loopback')
  t.equal(parseServerConfig({ TRUST_PROXY: '32' }).trustProxy, 32, 'a hop count')
  t.same(parseServerConfig({ CORS_ORIGINS: ' * ' }).corsOrigins, ['*'], 'any origin')
  t.equal(parseServerConfig({ DATA_DIR: 'relative' }).dataDir, resolve('relative'), 'DATA_DIR is made absolute')
})

t.test('each variable is in the README\'s configuration table, and a bad value names it with exit code 78', async (t) => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
  const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1))
  for (const variable of variables(ServerConfig)) t.ok(table.includes(`\`${variable}\``), `${variable} is documented`)
  const bad: Array<[string, Record<string, string>]> = [
    ['WORKERS', { WORKERS: '0' }],
    ['PORT', { PORT: '65536' }],
    ['HOST', { HOST: 'bad host;rm' }],
    ['PUBLIC_URL', { PUBLIC_URL: 'ftp://api.example.com' }],
    ['MONGODB_URL', { MONGODB_URL: 'postgres://db' }],
    ['MONGODB_DB', { MONGODB_DB: 'a.b' }],
    ['MONGODB_QUERY_TIMEOUT_MS', { MONGODB_QUERY_TIMEOUT_MS: '99' }],
    ['MONGODB_CONNECT_TIMEOUT_SECONDS', { MONGODB_CONNECT_TIMEOUT_SECONDS: '3601' }],
    ['STORE_SWEEP_PAGE_SIZE', { STORE_SWEEP_PAGE_SIZE: '0' }],
    ['STORE_BUSY_TIMEOUT_MS', { STORE_BUSY_TIMEOUT_MS: '60001' }],
    ['LOG_LEVEL', { LOG_LEVEL: 'loud' }],
    ['BODY_LIMIT', { BODY_LIMIT: '1023' }],
    ['PLINTH_MASTER_KEY', { MONGODB_URL: 'mongodb://db:27017' }],
    ['PLINTH_MASTER_KEY_RETIRED', { PLINTH_MASTER_KEY_RETIRED: `${KEY},short` }],
    ['CONNECTION_TIMEOUT_SECONDS', { CONNECTION_TIMEOUT_SECONDS: 'soon' }],
    ['REQUEST_TIMEOUT_SECONDS', { REQUEST_TIMEOUT_SECONDS: '0' }],
    ['HEADERS_TIMEOUT_SECONDS', { HEADERS_TIMEOUT_SECONDS: '30', REQUEST_TIMEOUT_SECONDS: '10' }],
    ['KEEP_ALIVE_TIMEOUT_SECONDS', { KEEP_ALIVE_TIMEOUT_SECONDS: '3601' }],
    ['TRUST_PROXY', { TRUST_PROXY: '33' }],
    ['CORS_ORIGINS', { CORS_ORIGINS: '*, https://app.example.com' }]
  ]
  for (const [variable, env] of bad) {
    const error = (() => { try { parseServerConfig(env) } catch (caught) { return caught } })()
    t.ok(error instanceof ConfigError && error.variable === variable && error.message.startsWith(`Invalid configuration: ${variable} `), `${JSON.stringify(env)} is refused, naming ${variable}`)
    t.same(startupFailure(error, null), { line: (error as Error).message, exitCode: 78 }, `${variable}: one line, EX_CONFIG`)
  }
  // DATA_DIR takes any path, made absolute: it has no bad value to give.
  t.same(bad.map(([variable]) => variable).sort(), Object.keys(full).filter((name) => name !== 'DATA_DIR').sort(), 'every other variable has its bad value here')
})
