import { isIP } from 'node:net'
import { Type, type Static } from '@sinclair/typebox'
import { ConfigError, text, type Env } from '../platform/config-env.js'

/**
 * Where Prometheus scrapes the server (docs/operations.md, "Metrics"), each
 * with the variable it is read from, as `loadConfig().metrics`. Neither set:
 * no metrics are kept and nothing is served.
 */
export const MetricsConfig = Type.Object({
  token: Type.Union([Type.String(), Type.Null()], { variable: 'METRICS_TOKEN', description: 'The bearer token `GET /metrics` on the API\'s own port asks for (at least 24 characters); unset, the API port serves no metrics' }),
  listen: Type.Union([Type.Object({ host: Type.String(), port: Type.Integer() }), Type.Null()], { variable: 'METRICS_LISTEN', description: '`address:port` of a separate listener serving `/metrics` with no token, for a scraper on a private network' })
})
export type MetricsConfig = Static<typeof MetricsConfig>

const MIN_TOKEN_LENGTH = 24

function listen (env: Env): MetricsConfig['listen'] {
  const raw = text(env, 'METRICS_LISTEN')
  if (raw === undefined) return null
  const match = /^\[?([^\]]+?)\]?:(\d{1,5})$/.exec(raw)
  const port = match === null ? NaN : Number(match[2])
  if (match === null || isIP(match[1]) === 0 || port > 65535) {
    throw new ConfigError('METRICS_LISTEN', `must be an IP address and a port, such as 127.0.0.1:9464 or [::1]:9464, got "${raw}"`)
  }
  return { host: match[1], port }
}

export function parseMetricsConfig (env: Env): MetricsConfig {
  const token = text(env, 'METRICS_TOKEN') ?? null
  if (token !== null && (token.length < MIN_TOKEN_LENGTH || /\s/.test(token))) {
    throw new ConfigError('METRICS_TOKEN', `must be at least ${MIN_TOKEN_LENGTH} characters without spaces (generate one with \`openssl rand -hex 24\`)`)
  }
  return { token, listen: listen(env) }
}
