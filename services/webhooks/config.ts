import { Type, type Static } from '@sinclair/typebox'
import { allowedHostList, integer, type Env } from '../platform/config-env.js'

const HOUR = 3_600_000

/**
 * The webhook engine's settings (services/webhooks/, docs/webhooks.md), each
 * with the variable it is read from, as `loadConfig().webhooks`.
 */
export const WebhooksConfig = Type.Object({
  allowedHosts: Type.Array(Type.String(), { variable: 'WEBHOOK_ALLOWED_HOSTS', description: 'Host names, *.suffix wildcards, addresses and CIDR ranges receivers may be at although they are internal (loopback, private, link-local…); every other internal address is refused' }),
  timeoutMs: Type.Integer({ minimum: 1000, variable: 'WEBHOOK_TIMEOUT_SECONDS', description: 'How long one delivery attempt may take, from connecting to the last byte read' }),
  maxAttempts: Type.Integer({ minimum: 1, variable: 'WEBHOOK_MAX_ATTEMPTS', description: 'Attempts per delivery before it is given up as failed' }),
  maxAgeMs: Type.Integer({ minimum: HOUR, variable: 'WEBHOOK_MAX_AGE_HOURS', description: 'No attempt is made this long after a delivery was asked for; it is given up as failed' }),
  disableAfterFailures: Type.Integer({ minimum: 1, variable: 'WEBHOOK_DISABLE_AFTER_FAILURES', description: 'A webhook whose deliveries failed this many times in a row (each after its retries) is disabled' }),
  disableAfterMs: Type.Integer({ minimum: HOUR, variable: 'WEBHOOK_DISABLE_AFTER_HOURS', description: 'A webhook failing this long without one successful attempt is disabled' }),
  retentionMs: Type.Integer({ minimum: 24 * HOUR, variable: 'WEBHOOK_RETENTION_DAYS', description: 'Events, deliveries, the delivery log and notices are kept this long; replays reach this far back' })
})
export type WebhooksConfig = Static<typeof WebhooksConfig>

export function parseWebhooksConfig (env: Env): WebhooksConfig {
  return {
    allowedHosts: allowedHostList(env, 'WEBHOOK_ALLOWED_HOSTS'),
    timeoutMs: integer(env, 'WEBHOOK_TIMEOUT_SECONDS', 10, 1, 60) * 1000,
    maxAttempts: integer(env, 'WEBHOOK_MAX_ATTEMPTS', 12, 1, 50),
    maxAgeMs: integer(env, 'WEBHOOK_MAX_AGE_HOURS', 24, 1, 30 * 24) * HOUR,
    disableAfterFailures: integer(env, 'WEBHOOK_DISABLE_AFTER_FAILURES', 10, 1, 10_000),
    disableAfterMs: integer(env, 'WEBHOOK_DISABLE_AFTER_HOURS', 72, 1, 90 * 24) * HOUR,
    retentionMs: integer(env, 'WEBHOOK_RETENTION_DAYS', 30, 1, 365) * 24 * HOUR
  }
}
