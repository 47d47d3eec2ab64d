import t from 'tap'
import { readFileSync } from 'node:fs'
import { Value } from '@sinclair/typebox/value'
import { ConfigError } from '../../../services/platform/config-env.js'
import { RealtimeConfig, parseRealtimeConfig } from '../../../services/realtime/config.js'

function variables (schema: Record<string, unknown>): string[] {
  const own = typeof schema.variable === 'string' ? [schema.variable] : []
  const properties = Object.values((schema.properties ?? {}) as Record<string, Record<string, unknown>>)
  return [...own, ...properties.flatMap(variables)]
}

const full = {
  REALTIME_RETAINED_EVENTS: '5000',
  REALTIME_POLL_MS: '100',
  REALTIME_RECHECK_MS: '60000',
  REALTIME_HEARTBEAT_MS: '5000',
  REALTIME_MAX_SUBSCRIPTIONS: '50',
  REALTIME_MAX_CONNECTIONS_PER_USER: '4'
}

t.test('the parser gives what the schema describes, defaults and all', async (t) => {
  for (const env of [{}, full]) t.ok(Value.Check(RealtimeConfig, parseRealtimeConfig(env)), JSON.stringify(env))
  t.same(variables(RealtimeConfig).sort(), Object.keys(full).sort(), 'each setting names the one variable it is read from')
  t.same(parseRealtimeConfig(full), { retainedEvents: 5000, pollMs: 100, heartbeatMs: 5000, recheckMs: 60_000, maxSubscriptionsPerConnection: 50, maxConnectionsPerUser: 4 })
  t.same(parseRealtimeConfig({}), { retainedEvents: 1000, pollMs: 250, heartbeatMs: 15_000, recheckMs: 30_000, maxSubscriptionsPerConnection: 20, maxConnectionsPerUser: 10 })
})

t.test('each variable is in the README\'s configuration table, and a bad value names it', async (t) => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
  const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1))
  for (const variable of variables(RealtimeConfig)) t.ok(table.includes(`\`${variable}\``), `${variable} is documented`)
  const bad: Record<string, string> = {
    REALTIME_RETAINED_EVENTS: '5',
    REALTIME_POLL_MS: 'often',
    REALTIME_RECHECK_MS: '0',
    REALTIME_HEARTBEAT_MS: '10',
    REALTIME_MAX_SUBSCRIPTIONS: '0',
    REALTIME_MAX_CONNECTIONS_PER_USER: '-1'
  }
  for (const [variable, value] of Object.entries(bad)) {
    const error = (() => { try { parseRealtimeConfig({ [variable]: value }) } catch (caught) { return caught } })()
    t.ok(error instanceof ConfigError && error.variable === variable && error.message.startsWith(`Invalid configuration: ${variable} `), `${variable}=${value} is refused, naming it`)
  }
})
