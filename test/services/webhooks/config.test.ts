import t from 'tap'
import { readFileSync } from 'node:fs'
import { Value } from '@sinclair/typebox/value'
import { ConfigError } from '../../../services/platform/config-env.js'
import { parseWebhooksConfig, WebhooksConfig } from '../../../services/webhooks/config.js'

function variables (schema: Record<string, unknown>): string[] {
  const own = typeof schema.variable === 'string' ? [schema.variable] : []
  const properties = Object.values((schema.properties ?? {}) as Record<string, Record<string, unknown>>)
  return [...own, ...properties.flatMap(variables)]
}

const full = {
  WEBHOOK_ALLOWED_HOSTS: 'Hooks.Internal., *.corp.example, 127.0.0.1, [::1], 10.0.0.0/8',
  WEBHOOK_TIMEOUT_SECONDS: '5',
  WEBHOOK_MAX_ATTEMPTS: '3',
  WEBHOOK_MAX_AGE_HOURS: '6',
  WEBHOOK_DISABLE_AFTER_FAILURES: '4',
  WEBHOOK_DISABLE_AFTER_HOURS: '12',
  WEBHOOK_RETENTION_DAYS: '7'
}

t.test('the parser gives what the schema describes, defaults and all', async (t) => {
  for (const env of [{}, full]) t.ok(Value.Check(WebhooksConfig, parseWebhooksConfig(env)), JSON.stringify(env))
  t.same(variables(WebhooksConfig).sort(), Object.keys(full).sort(), 'each setting names the one variable it is read from')
  t.same(parseWebhooksConfig(full), { allowedHosts: ['hooks.internal', '*.corp.example', '127.0.0.1', '::1', '10.0.0.0/8'], timeoutMs: 5000, maxAttempts: 3, maxAgeMs: 6 * 3_600_000, disableAfterFailures: 4, disableAfterMs: 12 * 3_600_000, retentionMs: 7 * 86_400_000 })
  t.same(parseWebhooksConfig({}), { allowedHosts: [], timeoutMs: 10_000, maxAttempts: 12, maxAgeMs: 24 * 3_600_000, disableAfterFailures: 10, disableAfterMs: 72 * 3_600_000, retentionMs: 30 * 86_400_000 })
})

t.test('each variable is in the README\'s configuration table, and a bad value names it', async (t) => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
  const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1))
  for (const variable of variables(WebhooksConfig)) t.ok(table.includes(`\`${variable}\``), `${variable} is documented`)
  const bad: Record<string, string> = {
    WEBHOOK_ALLOWED_HOSTS: 'http://hooks.internal',
    WEBHOOK_TIMEOUT_SECONDS: '0',
    WEBHOOK_MAX_ATTEMPTS: 'many',
    WEBHOOK_MAX_AGE_HOURS: '0',
    WEBHOOK_DISABLE_AFTER_FAILURES: '0',
    WEBHOOK_DISABLE_AFTER_HOURS: '-1',
    WEBHOOK_RETENTION_DAYS: '1000'
  }
  for (const [variable, value] of Object.entries(bad)) {
    const error = (() => { try { parseWebhooksConfig({ [variable]: value }) } catch (caught) { return caught } })()
    t.ok(error instanceof ConfigError && error.variable === variable && error.message.startsWith(`Invalid configuration: ${variable} `), `${variable}=${value} is refused, naming it`)
  }
})
