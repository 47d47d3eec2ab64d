import { Type, type Static } from '@sinclair/typebox'
import { integer, type Env } from '../platform/config-env.js'

/**
 * The realtime family's settings (services/realtime/, docs/realtime.md),
 * each with the variable it is read from, as `loadConfig().realtime`.
 */
export const RealtimeConfig = Type.Object({
  retainedEvents: Type.Integer({ minimum: 10, variable: 'REALTIME_RETAINED_EVENTS', description: 'How many of a project\'s latest record events are kept for clients resuming with Last-Event-ID; an older gap is told to reload' }),
  pollMs: Type.Integer({ minimum: 20, variable: 'REALTIME_POLL_MS', description: 'How often each API process reads the shared event log for writes made through other processes (its own writes reach its subscribers at once)' }),
  heartbeatMs: Type.Integer({ minimum: 100, variable: 'REALTIME_HEARTBEAT_MS', description: 'How often an open stream is kept alive: an SSE comment, or a WebSocket ping; a socket that has answered neither of the last two pings by then is closed' }),
  recheckMs: Type.Integer({ minimum: 100, variable: 'REALTIME_RECHECK_MS', description: 'How often an open stream\'s credential is checked again (user deleted or disabled, session ended); its expiry ends the stream at once' }),
  maxSubscriptionsPerConnection: Type.Integer({ minimum: 1, variable: 'REALTIME_MAX_SUBSCRIPTIONS', description: 'Subscriptions one stream may hold' }),
  maxConnectionsPerUser: Type.Integer({ minimum: 1, variable: 'REALTIME_MAX_CONNECTIONS_PER_USER', description: 'Streams one caller (end user, platform user, or anonymous address) may hold open across every API process on the store' })
})
export type RealtimeConfig = Static<typeof RealtimeConfig>

export function parseRealtimeConfig (env: Env): RealtimeConfig {
  return {
    retainedEvents: integer(env, 'REALTIME_RETAINED_EVENTS', 1000, 10, 1_000_000),
    pollMs: integer(env, 'REALTIME_POLL_MS', 250, 20, 60_000),
    heartbeatMs: integer(env, 'REALTIME_HEARTBEAT_MS', 15_000, 100, 600_000),
    recheckMs: integer(env, 'REALTIME_RECHECK_MS', 30_000, 100, 3_600_000),
    maxSubscriptionsPerConnection: integer(env, 'REALTIME_MAX_SUBSCRIPTIONS', 20, 1, 1000),
    maxConnectionsPerUser: integer(env, 'REALTIME_MAX_CONNECTIONS_PER_USER', 10, 1, 10_000)
  }
}
