import t from 'tap'
import { readFileSync } from 'node:fs'
import { Value } from '@sinclair/typebox/value'
import { ConfigError } from '../../../services/platform/config-env.js'
import { ProjectEmailConfig, parseProjectEmailConfig } from '../../../services/projects/email-config.js'

function variables (schema: Record<string, unknown>): string[] {
  const own = typeof schema.variable === 'string' ? [schema.variable] : []
  const properties = Object.values((schema.properties ?? {}) as Record<string, Record<string, unknown>>)
  return [...own, ...properties.flatMap(variables)]
}

const full = {
  PROJECT_SMTP_ALLOWED_HOSTS: 'Relay.Internal., 127.0.0.1, 10.0.0.0/8',
  PROJECT_EMAIL_LINK_TTL_MINUTES: '15',
  PROJECT_EMAIL_PER_ADDRESS_LIMIT: '3',
  PROJECT_SMTP_TIMEOUT_SECONDS: '5'
}

t.test('the parser gives what the schema describes, defaults and all', async (t) => {
  for (const env of [{}, full]) t.ok(Value.Check(ProjectEmailConfig, parseProjectEmailConfig(env)), JSON.stringify(env))
  t.same(variables(ProjectEmailConfig).sort(), Object.keys(full).sort(), 'each setting names the one variable it is read from')
  t.same(parseProjectEmailConfig(full), { allowedHosts: ['relay.internal', '127.0.0.1', '10.0.0.0/8'], linkTtlSeconds: 900, perAddressLimit: 3, timeoutMs: 5000 })
  t.same(parseProjectEmailConfig({}), { allowedHosts: [], linkTtlSeconds: 1800, perAddressLimit: 5, timeoutMs: 20_000 })
})

t.test('each variable is in the README\'s configuration table, and a bad value names it', async (t) => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
  const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1))
  for (const variable of variables(ProjectEmailConfig)) t.ok(table.includes(`\`${variable}\``), `${variable} is documented`)
  const bad: Record<string, string> = {
    PROJECT_SMTP_ALLOWED_HOSTS: 'smtp://relay.internal:25',
    PROJECT_EMAIL_LINK_TTL_MINUTES: '0',
    PROJECT_EMAIL_PER_ADDRESS_LIMIT: 'many',
    PROJECT_SMTP_TIMEOUT_SECONDS: '1000'
  }
  for (const [variable, value] of Object.entries(bad)) {
    const error = (() => { try { parseProjectEmailConfig({ [variable]: value }) } catch (caught) { return caught } })()
    t.ok(error instanceof ConfigError && error.variable === variable && error.message.startsWith(`Invalid configuration: ${variable} `), `${variable}=${value} is refused, naming it`)
  }
})
