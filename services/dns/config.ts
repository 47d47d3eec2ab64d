import { isIP } from 'node:net'
import { Type, type Static } from '@sinclair/typebox'
import { allowedHostList, ConfigError, DNS_NAME, integer, list, text, type Env } from '../platform/config-env.js'
import { exemptEntry } from './rate-limit.js'

/**
 * The DNS family's settings, each with the variable it is read from (the
 * README's configuration table lists them), as `loadConfig().dns`.
 */
export const DnsConfig = Type.Object({
  port: Type.Union([Type.Integer({ minimum: 0, maximum: 65535 }), Type.Null()], { variable: 'DNS_PORT', description: 'The built-in authoritative server\'s UDP and TCP port: null leaves it off, 0 takes a free port (tests)' }),
  host: Type.String({ variable: 'DNS_HOST', description: 'The IP address it listens on' }),
  nameservers: Type.Array(Type.String(), { minItems: 1, variable: 'DNS_NAMESERVERS', description: 'The zones\' NS names; the first is the SOA\'s primary' }),
  axfrAllow: Type.Array(Type.String(), { variable: 'DNS_AXFR_ALLOW', description: 'Addresses allowed to transfer whole zones (AXFR); everyone else is refused' }),
  gateway: Type.Object({
    host: Type.Union([Type.String(), Type.Null()], { variable: 'DNS_GATEWAY_HOST', description: 'The host name CNAMEs point at, when set' }),
    ipv4: Type.Array(Type.String(), { variable: 'DNS_GATEWAY_IPV4', description: 'The IPv4 addresses an apex gets' }),
    ipv6: Type.Array(Type.String(), { variable: 'DNS_GATEWAY_IPV6', description: 'The IPv6 addresses an apex gets' })
  }, { description: 'What hostnames are pointed at' }),
  providerPrivateHosts: Type.Array(Type.String(), { variable: 'DNS_PROVIDER_PRIVATE_HOSTS', description: 'Host names, *.suffix wildcards, addresses and CIDR ranges provider endpoints may reach although they are internal; every other internal address is refused' }),
  rateLimit: Type.Object({
    responsesPerSecond: Type.Integer({ minimum: 0, variable: 'DNS_RRL_RESPONSES_PER_SECOND', description: 'UDP answers a second per client network; 0 turns response-rate limiting off' }),
    slip: Type.Integer({ minimum: 0, variable: 'DNS_RRL_SLIP', description: 'Every Nth answer past the rate is sent truncated (TC) instead of dropped, so real clients retry over TCP; 0 drops them all' }),
    ipv4Prefix: Type.Integer({ minimum: 8, maximum: 32, variable: 'DNS_RRL_IPV4_PREFIX', description: 'The IPv4 prefix length that makes one client network' }),
    ipv6Prefix: Type.Integer({ minimum: 16, maximum: 128, variable: 'DNS_RRL_IPV6_PREFIX', description: 'The IPv6 prefix length that makes one client network' }),
    exempt: Type.Array(Type.String(), { variable: 'DNS_RRL_EXEMPT', description: 'Addresses and networks never limited' })
  }, { description: 'Response-rate limiting of the built-in server\'s UDP answers' })
})
export type DnsConfig = Static<typeof DnsConfig>

const hostName = (entry: string) => entry.toLowerCase().replace(/\.$/, '')

function addresses (env: Env, name: string, family: 4 | 6): string[] {
  const entries = list(env, name)
  const bad = entries.find((entry) => isIP(entry) !== family)
  if (bad !== undefined) throw new ConfigError(name, `must be a comma-separated list of IPv${family} addresses, got "${bad}"`)
  return entries
}

export function parseDnsConfig (env: Env): DnsConfig {
  const host = text(env, 'DNS_HOST') ?? '127.0.0.1'
  if (isIP(host) === 0) throw new ConfigError('DNS_HOST', `must be an IP address to listen on, got "${host}"`)
  const nameservers = text(env, 'DNS_NAMESERVERS') === undefined ? ['ns1.plinth.localhost', 'ns2.plinth.localhost'] : list(env, 'DNS_NAMESERVERS', hostName)
  const badName = nameservers.find((entry) => !DNS_NAME.test(entry))
  if (nameservers.length === 0 || badName !== undefined) throw new ConfigError('DNS_NAMESERVERS', `must be a comma-separated list of host names, got "${badName ?? ''}"`)
  const axfrAllow = list(env, 'DNS_AXFR_ALLOW')
  const badAddress = axfrAllow.find((entry) => isIP(entry) === 0)
  if (badAddress !== undefined) throw new ConfigError('DNS_AXFR_ALLOW', `must be a comma-separated list of IP addresses, got "${badAddress}"`)
  const gatewayHost = text(env, 'DNS_GATEWAY_HOST') === undefined ? null : hostName(text(env, 'DNS_GATEWAY_HOST') ?? '')
  if (gatewayHost !== null && !DNS_NAME.test(gatewayHost)) throw new ConfigError('DNS_GATEWAY_HOST', `must be a host name, got "${gatewayHost}"`)
  return {
    port: text(env, 'DNS_PORT') === undefined ? null : integer(env, 'DNS_PORT', 0, 0, 65535),
    host,
    nameservers,
    axfrAllow,
    gateway: { host: gatewayHost, ipv4: addresses(env, 'DNS_GATEWAY_IPV4', 4), ipv6: addresses(env, 'DNS_GATEWAY_IPV6', 6) },
    providerPrivateHosts: allowedHostList(env, 'DNS_PROVIDER_PRIVATE_HOSTS'),
    rateLimit: parseRateLimit(env)
  }
}

function parseRateLimit (env: Env): DnsConfig['rateLimit'] {
  const exempt = list(env, 'DNS_RRL_EXEMPT')
  const badExempt = exempt.find((entry) => exemptEntry(entry) === null)
  if (badExempt !== undefined) throw new ConfigError('DNS_RRL_EXEMPT', `must be a comma-separated list of IP addresses and networks (192.0.2.0/24), got "${badExempt}"`)
  return {
    responsesPerSecond: integer(env, 'DNS_RRL_RESPONSES_PER_SECOND', 50, 0, 1_000_000),
    slip: integer(env, 'DNS_RRL_SLIP', 2, 0, 10),
    ipv4Prefix: integer(env, 'DNS_RRL_IPV4_PREFIX', 24, 8, 32),
    ipv6Prefix: integer(env, 'DNS_RRL_IPV6_PREFIX', 56, 16, 128),
    exempt
  }
}
