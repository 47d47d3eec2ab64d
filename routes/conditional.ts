/** Conditional requests and safe retries, one way for every family: versions as ETags, If-Match, Idempotency-Key. */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { commonErrors } from '../services/platform/errors.js'
import type { Ok } from './replies.js'

/** The answer with its view's version as the ETag (`"3"`), which If-Match sends back. */
export function tagged<T extends { version: number }> (reply: FastifyReply, answer: Ok<T>): Ok<T> {
  void reply.header('etag', `"${answer.data.version}"`)
  return answer
}

/** If-Match as a version: `"3"` (or `W/"3"`, or `3`); absent or `*` (any current representation, RFC 9110) asks for none. */
export function ifMatch (request: FastifyRequest): number | undefined {
  const header = request.headers['if-match']
  if (header === undefined || header.trim() === '*') return undefined
  const match = /^(?:W\/)?"?(\d{1,15})"?$/.exec(header.trim())
  if (match === null) throw commonErrors.invalidIfMatch()
  return Number(match[1])
}

/** The Idempotency-Key the route's headers schema let through, if any. */
export function idempotencyKey (request: FastifyRequest): string | undefined {
  const key = request.headers['idempotency-key']
  return typeof key === 'string' ? key : undefined
}
