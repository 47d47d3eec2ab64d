import type { FastifyRequest } from 'fastify'
import { locationOf } from './replies.js'

/** @deprecated answer with `created(reply, data)` from routes/replies.ts, which sets Location by the one rule. */
export function createdAt (request: FastifyRequest, id: string): string {
  return locationOf(request, id)
}
