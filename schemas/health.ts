import { Type, type Static } from '@sinclair/typebox'
import { Envelope } from './envelope.js'

export const HealthStatus = Type.Object({
  status: Type.Literal('ok'),
  uptimeSeconds: Type.Number()
})

export const ReadyStatus = Type.Object({
  status: Type.Literal('ready'),
  store: Type.Union([Type.Literal('sqlite'), Type.Literal('mongodb')])
})

/** Each probe's success answer; its error answers come from the codes it declares (`config.errors`). */
export const HealthResponses = {
  live: { 200: Envelope(HealthStatus) },
  ready: { 200: Envelope(ReadyStatus) }
}

export type HealthStatusType = Static<typeof HealthStatus>
