import { errorCatalogue, fieldIssue } from '../platform/errors.js'

/** Every code the realtime family answers with, once (docs/realtime.md). */
export const realtimeErrors = errorCatalogue('realtime', {
  invalidSubscription: {
    code: 'APP_REALTIME_INVALID_SUBSCRIPTION',
    status: 400,
    message: ({ path, why }: { path: string, why: string }) => `${path} ${why}`,
    details: ({ path, why }) => fieldIssue(path, why),
    description: 'the subscriptions are not a JSON list of { collection, record?, filter? }'
  },
  tooManySubscriptions: {
    code: 'APP_REALTIME_TOO_MANY_SUBSCRIPTIONS',
    status: 400,
    message: ({ limit }: { limit: number }) => `One stream holds at most ${limit} subscriptions`,
    details: ({ limit }) => ({ limit }),
    description: 'the stream asks for more subscriptions than REALTIME_MAX_SUBSCRIPTIONS'
  },
  tooManyConnections: {
    code: 'APP_REALTIME_TOO_MANY_CONNECTIONS',
    status: 429,
    message: ({ limit }: { limit: number }) => `This caller already holds ${limit} realtime streams; close one first`,
    details: ({ limit }) => ({ limit }),
    description: 'the caller already holds REALTIME_MAX_CONNECTIONS_PER_USER streams across the deployment'
  }
})
