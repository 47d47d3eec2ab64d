import { Type, type Static } from '@sinclair/typebox'
import { Envelope, errorResponses } from './envelope.js'

export const HealthStatus = Type.Object({
  status: Type.Literal('ok'),
  uptimeSeconds: Type.Number()
})

export const ReadyStatus = Type.Object({
  status: Type.Literal('ready'),
  store: Type.Union([Type.Literal('sqlite'), Type.Literal('mongodb')])
})

export const HealthResponses = { 200: Envelope(HealthStatus) }
export const ReadyResponses = { 200: Envelope(ReadyStatus), ...errorResponses(503) }

export type HealthStatusType = Static<typeof HealthStatus>
