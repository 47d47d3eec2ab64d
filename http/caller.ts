import type { FastifyRequest } from 'fastify'
import type { DataCaller } from '../services/collections/access.js'
import type { GitCaller } from '../services/git/access.js'
import type { ProjectUser } from '../services/projects/project-users.js'

export interface PlatformAuth {
  userId: string
  via: 'jwt' | 'pat'
  keyId?: string
  scopes?: string[]
}

/**
 * Who is calling, as the route's `config.auth` resolved it (`request.caller`,
 * set up by plugins/route-auth.ts): each member exists only under its kinds,
 * and reading another is a bug in the route, answered as one.
 */
export interface RequestCaller {
  /** A platform user, by JWT or PAT (auth `platform`, `session`). */
  readonly user: PlatformAuth
  /** An end user of the route's project, by project JWT (auth `projectUser`). */
  readonly endUser: ProjectUser
  /** The data API's caller: nobody, an end user or a platform admin (auth `data`). */
  readonly data: DataCaller
  /** A git client: nobody, a user or a deploy key (auth `git`). */
  readonly git: GitCaller
}

type Resolved = { -readonly [K in keyof RequestCaller]?: RequestCaller[K] }

/** The request's one slot for what its credential hook resolved; plugins/route-auth.ts declares it on every request. */
export const kResolvedCaller = Symbol('plinth.resolvedCaller')

type WithSlot = FastifyRequest & { [kResolvedCaller]: Resolved | null }

/** Called by a credential's onRequest hook once it has checked the credential. */
export function setCaller<K extends keyof RequestCaller> (request: FastifyRequest, member: K, value: RequestCaller[K]): void {
  const slot = request as WithSlot
  const resolved = slot[kResolvedCaller]
  if (resolved === null) slot[kResolvedCaller] = { [member]: value }
  else resolved[member] = value
}

/** What the hook resolved for `member`, or undefined when the route's credential kind has none (for cross-cutting hooks). */
export function resolvedCaller<K extends keyof RequestCaller> (request: FastifyRequest, member: K): RequestCaller[K] | undefined {
  return (request as WithSlot)[kResolvedCaller]?.[member]
}
