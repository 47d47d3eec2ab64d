import type { FastifyRequest } from 'fastify'
import { commonErrors } from '../services/platform/errors.js'

/**
 * The one reader of the Authorization header. Every credential kind arrives
 * as `Bearer <token>`; what the token is (platform JWT, PAT, project JWT,
 * service token) is told apart by its form, by whoever verifies it. Git
 * clients send a token as the password of `Basic` instead (`gitCredential`).
 */
const BEARER = /^Bearer ([^\s]{1,8192})$/i
const BASIC = /^Basic ([A-Za-z0-9+/]{1,11000}={0,2})$/i

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
  return commonErrors.unauthorized({ why: `Authorization: Bearer <${what}> is required` })
}

/**
 * The token a git client sends: the password of HTTP Basic (the user name is
 * whatever the client put there and is ignored, as with PATs on other git
 * hosts), the user name when the password is empty (`https://<token>@host/…`),
 * or a Bearer token (`http.extraHeader`). Null without an Authorization header.
 */
export function gitCredential (request: FastifyRequest): string | null {
  const header = request.headers.authorization
  if (header === undefined) return null
  const basic = BASIC.exec(header.trim())
  if (basic === null) return requiredBearer(request, 'token')
  const decoded = Buffer.from(basic[1], 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  const user = colon === -1 ? decoded : decoded.slice(0, colon)
  const password = colon === -1 ? '' : decoded.slice(colon + 1)
  const token = password === '' ? user : password
  if (token === '') throw commonErrors.unauthorized({ why: 'Give a personal access token, platform JWT or deploy key token as the password' })
  return token
}

/** The credentials a bearer token can be, told apart by form: a prefix, or a JWT's `type` claim. */
export type CredentialKind = 'platformJwt' | 'pat' | 'projectJwt' | 'serviceToken'

/**
 * What a bearer token looks like, read from its form alone (a JWT's payload
 * is decoded, not verified): never trusted, only used to say, when a
 * credential is refused, that it is of another kind than the route takes.
 * Null when it looks like none of them.
 */
export function claimedKind (token: string, prefixes: { pat: string, serviceToken: string }): CredentialKind | null {
  if (token.startsWith(`${prefixes.pat}_`)) return 'pat'
  if (token.startsWith(`${prefixes.serviceToken}_`)) return 'serviceToken'
  const parts = token.split('.')
  if (parts.length !== 3) return null
  try {
    const type = (JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as { type?: unknown }).type
    return type === 'project' ? 'projectJwt' : type === 'platform' ? 'platformJwt' : null
  } catch {
    return null
  }
}

const KIND_NAMES: Record<CredentialKind, string> = {
  platformJwt: 'a platform access token',
  pat: 'a personal access token',
  projectJwt: 'a project (end-user) token',
  serviceToken: 'a project service token'
}

/** Where each kind of route gets the credential it takes, for a refusal to point there. */
const WANTED = {
  platform: 'a platform access token (POST /api/auth/login) or a personal access token (POST /api/auth/api-keys)',
  projectUser: 'an end user\'s project token of this project (POST /api/p/:projectId/auth/login)'
} as const

/** The refusal of a token of another kind than the route takes; null when it is of that kind, or of none. */
export function wrongKindMessage (kind: CredentialKind | null, wanted: keyof typeof WANTED): string | null {
  const fits = wanted === 'platform' ? kind === 'platformJwt' || kind === 'pat' : kind === 'projectJwt'
  if (kind === null || fits) return null
  return `${KIND_NAMES[kind]} was sent where ${WANTED[wanted]} is needed`.replace(/^a/, 'A')
}
