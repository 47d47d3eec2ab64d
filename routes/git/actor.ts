import type { FastifyRequest } from 'fastify'
import type { RepoActor } from '../../services/git/access.js'
import type { WriteLevel } from '../../services/git/pattern-rules.js'

/** The caller acting in the route's repository, with the permissions the repository parent resolved for them. */
export function actorOf (request: FastifyRequest): RepoActor {
  return { userId: request.caller.user.userId, permissions: request.scope.permissions }
}

/** How far a writer may go past protection rules: `git.admin` holders further than writers. */
export function writeLevelOf (request: FastifyRequest): WriteLevel {
  return request.scope.permissions.has('git.admin') ? 'admin' : 'write'
}
