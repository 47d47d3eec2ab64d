import type { FastifyRequest } from 'fastify'
import { unauthorized } from '../services/errors.js'

/**
 * The one reader of the Authorization header. Every credential kind arrives
 * as `Bearer <token>`; what the token is (platform JWT, PAT, project JWT,
 * service token) is told apart by its form, by whoever verifies it. Git
 * clients send a token as the password of `Basic` instead: reading that form
 * belongs here too, beside this one, when the git family needs it.
 */
const BEARER = /^Bearer ([^\s]{1,8192})$/i

/** The bearer token, or null when the request has no Authorization header; any other form is refused. */
export function optionalBearer (request: FastifyRequest, what: string): string | null {
  const header = request.headers.authorization
  if (header === undefined) return null
  const match = BEARER.exec(header.trim())
  if (match === null) throw missingBearer(what)
  return match[1]
}

/** The bearer token a route requires. */
export function requiredBearer (request: FastifyRequest, what: string): string {
  const token = optionalBearer(request, what)
  if (token === null) throw missingBearer(what)
  return token
}

function missingBearer (what: string): Error {
  return unauthorized('APP_UNAUTHORIZED', `Authorization: Bearer <${what}> is required`)
}
