import { Type } from '@sinclair/typebox'

/** Limits of the realtime family, used by both the schemas and the services. */
export const REALTIME_LIMITS = { subscriptionsLength: 16_384, lastEventIdLength: 32 } as const

export const RealtimeParams = Type.Object({
  projectId: Type.String({ pattern: '^[0-9A-Za-z_-]{1,64}$' })
})

export const RealtimeQuery = Type.Object({
  subscriptions: Type.String({
    minLength: 2,
    maxLength: REALTIME_LIMITS.subscriptionsLength,
    description: 'A JSON list of subscriptions, each `{ "collection": name, "record"?: id, "filter"?: filter }`; ' +
      'a filter is the data API\'s MongoDB-style JSON over the collection\'s fields'
  }),
  lastEventId: Type.Optional(Type.String({
    maxLength: REALTIME_LIMITS.lastEventIdLength,
    description: 'Where to resume, for clients that cannot send the Last-Event-ID header; the header wins'
  }))
})

export const RealtimeHeaders = Type.Object({
  'last-event-id': Type.Optional(Type.String({ maxLength: REALTIME_LIMITS.lastEventIdLength, description: 'The id of the last event received: the stream resumes after it' }))
})

export const RealtimeResponses = {
  stream: {
    200: {
      description: 'Server-Sent Events: `ready`, then `create`, `update` and `delete` events (each with an `id`), ' +
        '`gap` when what was missed is no longer kept, and `end` before the server ends the stream',
      content: {
        'text/event-stream': {
          schema: Type.String({
            description: 'Each record event\'s `data` is `{ subscriptions, collection, record, at }`: the indexes of the subscriptions it matched ' +
              'and the record as the caller\'s get or list rule shows it; comments keep the connection alive'
          })
        }
      }
    }
  }
}
