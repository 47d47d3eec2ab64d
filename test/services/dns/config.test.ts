import t from 'tap'
import { readFileSync } from 'node:fs'
import { Value } from '@sinclair/typebox/value'
import { ConfigError } from '../../../services/platform/config-env.js'
import { DnsConfig, parseDnsConfig } from '../../../services/dns/config.js'

/** The variables the schema says its settings come from. */
function variables (schema: Record<string, unknown>): string[] {
  const own = typeof schema.variable === 'string' ? [schema.variable] : []
  const properties = Object.values((schema.properties ?? {}) as Record<string, Record<string, unknown>>)
  return [...own, ...properties.flatMap(variables)]
}

t.test('the parser gives what the schema describes, defaults and all', async (t) => {
  const full = {
    DNS_PORT: '5353',
    DNS_HOST: '::',
    DNS_NAMESERVERS: 'NS1.Example.com., ns2.example.net',
    DNS_AXFR_ALLOW: '192.0.2.9, ::1',
    DNS_GATEWAY_HOST: 'GW.example.net.',
    DNS_GATEWAY_IPV4: '192.0.2.80',
    DNS_GATEWAY_IPV6: '2001:db8::80',
    DNS_PROVIDER_PRIVATE_HOSTS: '10.0.0.5, PDNS.internal,[::1]',
    DNS_RRL_RESPONSES_PER_SECOND: '20',
    DNS_RRL_SLIP: '3',
    DNS_RRL_IPV4_PREFIX: '32',
    DNS_RRL_IPV6_PREFIX: '64',
    DNS_RRL_EXEMPT: '127.0.0.1, 10.0.0.0/8'
  }
  for (const env of [{}, full]) t.ok(Value.Check(DnsConfig, parseDnsConfig(env)), JSON.stringify(env))
  t.same(variables(DnsConfig).sort(), Object.keys(full).sort(), 'each setting names the one variable it is read from')
})

t.test('each variable is in the README\'s configuration table, and a bad value names it', async (t) => {
  const readme = readFileSync(new URL('../../../README.md', import.meta.url), 'utf8')
  const table = readme.slice(readme.indexOf('## Configuration'), readme.indexOf('\n## ', readme.indexOf('## Configuration') + 1))
  for (const variable of variables(DnsConfig)) t.ok(table.includes(`\`${variable}\``), `${variable} is documented`)
  const bad: Record<string, string> = {
    DNS_PORT: '53a',
    DNS_HOST: 'localhost',
    DNS_NAMESERVERS: ' , ',
    DNS_AXFR_ALLOW: '10.0.0.0/8',
    DNS_GATEWAY_HOST: 'http://gw.example.com',
    DNS_GATEWAY_IPV4: '2001:db8::1',
    DNS_GATEWAY_IPV6: '192.0.2.1',
    DNS_RRL_RESPONSES_PER_SECOND: 'lots',
    DNS_RRL_SLIP: '11',
    DNS_RRL_IPV4_PREFIX: '33',
    DNS_RRL_IPV6_PREFIX: '8',
    DNS_RRL_EXEMPT: 'localhost',
    DNS_PROVIDER_PRIVATE_HOSTS: '10.0.0.0/99'
  }
  for (const [variable, value] of Object.entries(bad)) {
    const error = (() => { try { parseDnsConfig({ [variable]: value }) } catch (caught) { return caught } })()
    t.ok(error instanceof ConfigError && error.variable === variable && error.message.startsWith(`Invalid configuration: ${variable} `), `${variable}=${value} is refused, naming it`)
  }
})
