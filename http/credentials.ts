import type { FastifyRequest } from 'fastify'
import { commonErrors, type AppError } from '../services/platform/errors.js'

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
 * credential is refused, which refusal it gets.
 * Null when it looks like none of them.
 */
export function claimedKind (token: string, prefixes: { pat: string, serviceToken: string }): CredentialKind | null {
  return claimed(token, prefixes).kind
}

/** The kind a token looks like and, for a project JWT, the project its `pid` claim names: one read of its payload. */
function claimed (token: string, prefixes: { pat: string, serviceToken: string }): { kind: CredentialKind | null, projectId?: unknown } {
  if (token.startsWith(`${prefixes.pat}_`)) return { kind: 'pat' }
  if (token.startsWith(`${prefixes.serviceToken}_`)) return { kind: 'serviceToken' }
  const parts = token.split('.')
  if (parts.length !== 3) return { kind: null }
  try {
    const { type, pid } = JSON.parse(Buffer.from(parts[1], 'base64url').toString('utf8')) as { type?: unknown, pid?: unknown }
    return type === 'project' ? { kind: 'projectJwt', projectId: pid } : { kind: type === 'platform' ? 'platformJwt' : null }
  } catch {
    return { kind: null }
  }
}

const KIND_NAMES: Record<CredentialKind, string> = {
  platformJwt: 'a platform access token',
  pat: 'a personal access token',
  projectJwt: 'a project (end-user) token',
  serviceToken: 'a project service token'
}

const PLATFORM = 'a platform access token (POST /api/auth/login) or a personal access token (POST /api/auth/api-keys)'
const PROJECT_USER = 'an end user\'s project token of this project (POST /api/p/:projectId/auth/login)'

/**
 * Where each kind of route gets the credential it takes, for a refusal to
 * point there, and the kinds it takes as the contract's security schemes
 * name them (plugins/route-auth.ts), for a client to pick another token by.
 */
const WANTED = {
  platform: { says: PLATFORM, kinds: ['platformJwt', 'pat'], schemes: ['platformToken'] },
  projectUser: { says: PROJECT_USER, kinds: ['projectJwt'], schemes: ['projectUserToken'] },
  data: { says: `${PROJECT_USER}, ${PLATFORM}, or none`, kinds: ['projectJwt', 'platformJwt', 'pat'], schemes: ['projectUserToken', 'platformToken'] }
} as const satisfies Record<string, { says: string, kinds: readonly CredentialKind[], schemes: readonly string[] }>

export type TokenRoute = keyof typeof WANTED

/**
 * The refusal of a token that no refresh can make right on this route: one
 * of another kind than the route takes, or an end user's token of another
 * project than `projectId`. Read from the token's form alone: such a token
 * fails verification anyway, so the claim only picks which refusal it gets
 * (expiry, APP_INVALID_TOKEN, is worth a refresh; this is not). Null when the
 * token is of a kind taken here, or looks like none.
 */
export function wrongToken (token: string, prefixes: { pat: string, serviceToken: string }, route: TokenRoute, projectId?: string): AppError | null {
  const wanted = WANTED[route]
  const { kind, projectId: claimedProject } = claimed(token, prefixes)
  if (kind === null) return null
  const schemes = [...wanted.schemes]
  if (!(wanted.kinds as readonly CredentialKind[]).includes(kind)) {
    return commonErrors.wrongTokenKind({ why: `${KIND_NAMES[kind]} was sent where ${wanted.says} is needed`.replace(/^a/, 'A'), schemes })
  }
  if (kind !== 'projectJwt' || projectId === undefined || typeof claimedProject !== 'string' || claimedProject === projectId) return null
  return commonErrors.wrongTokenKind({ why: `A project (end-user) token of another project was sent where ${wanted.says} is needed`, schemes })
}
