import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyReply, FastifyRequest, HookHandlerDoneFunction } from 'fastify'
import { systemClock } from '../services/clock.js'
import { unauthorized } from '../services/errors.js'
import { newId } from '../services/ids.js'
import { ProjectAuth } from '../services/projects/project-auth.js'
import { PROJECTS_COLLECTION } from '../services/projects/projects.js'
import { ProjectTokens } from '../services/projects/project-tokens.js'
import { ProjectUsers, type ProjectUser } from '../services/projects/project-users.js'
import { ServiceTokens, type ServiceTokenIdentity } from '../services/projects/service-tokens.js'
import { RefreshSessions } from '../services/identity/sessions.js'
import { NO_FIELDS, readDeny } from '../services/collections/access.js'
import { PROJECT_USERS_TABLE } from '../services/projects/naming.js'
import { projectAuthSchemas } from '../schemas/project-auth.js'
import { requiredBearer } from './credentials.js'

export interface ProjectAuthServices {
  auth: ProjectAuth
  users: ProjectUsers
  tokens: ProjectTokens
  sessions: RefreshSessions
  serviceTokens: ServiceTokens
}

declare module 'fastify' {
  interface FastifyInstance {
    projectAuth: ProjectAuthServices
    /** onRequest: a project JWT of `params.projectId`, while the project has auth on, of a user still holding that session. */
    requireProjectUser: (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void
    /** onRequest: a service token of `params.projectId`. */
    requireServiceToken: (request: FastifyRequest, reply: FastifyReply, done: HookHandlerDoneFunction) => void
  }
  interface FastifyRequest {
    projectUser: ProjectUser | null
  }
}

/** For callback-style hooks: the bearer token, or null once `done` has been given the refusal. */
function bearerOrRefuse (request: FastifyRequest, what: string, done: HookHandlerDoneFunction): string | null {
  try {
    return requiredBearer(request, what)
  } catch (error) {
    done(error as Error)
    return null
  }
}

/**
 * Credentials of a project's own world: end-user JWTs, signed with a key
 * derived for that one project (so a token of project A cannot even verify
 * on project B, and never as a platform token), and service tokens for the
 * project's servers. Each decorator accepts only its own kind.
 */
async function projectAuthPlugin (app: FastifyInstance): Promise<void> {
  const { config } = app
  // A sign-up's record is written by the records service (registered later), so it meets the `_users` definition.
  const users = new ProjectUsers(app.store, async (projectId, account, profile) => await app.records.createUser(projectId, account, profile))
  const tokens = new ProjectTokens({
    keyFor: (projectId) => app.deriveSecretKey(`jwt:project:${projectId}`),
    clock: systemClock,
    issuer: config.tokenIssuer,
    ttlSeconds: config.projectTokenTtlSeconds
  })
  const serviceTokens = new ServiceTokens(app.store, { clock: systemClock, newId, prefix: config.serviceTokenPrefix })
  await serviceTokens.init()
  // An end user's session lives as long as its refresh tokens, each refresh asking auth for a fresh project JWT.
  const sessions: RefreshSessions = new RefreshSessions(app.store, 'project_refresh_tokens', {
    clock: systemClock,
    newId,
    issueAccess: async (userId, _familyId, projectId, sessionEpoch) => await auth.issueAccess(userId, projectId ?? '', sessionEpoch),
    refreshTtlSeconds: config.refreshTokenTtlSeconds,
    reuseGraceSeconds: config.refreshReuseGraceSeconds
  })
  await sessions.init()
  // Resolved per request: the projects service is decorated by the permissions plugin, which depends on this one.
  const auth: ProjectAuth = new ProjectAuth({
    users,
    tokens,
    sessions,
    clock: systemClock,
    stateStamp: (collection) => app.store.stateStamp(collection),
    projectsCollection: PROJECTS_COLLECTION,
    findProject: async (projectId) => await app.projects.findById(projectId),
    hiddenFromUsers: async (projectId) => {
      const definition = await app.collections.definitions.find(projectId, PROJECT_USERS_TABLE)
      return definition === null ? NO_FIELDS : readDeny(definition.methods)
    },
    sweepDeleted: async (projectId) => { await app.projects.purge(projectId) }
  })
  for (const schema of projectAuthSchemas) app.addSchema(schema)

  app.decorate('projectAuth', { auth, users, tokens, sessions, serviceTokens })
  app.decorateRequest('projectUser', null)

  // Callback style, like requireServiceToken: a user remembered in the current state is accepted without a promise.
  app.decorate('requireProjectUser', (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const { projectId } = request.params as { projectId: string }
    const token = bearerOrRefuse(request, 'project JWT', done)
    if (token === null) return
    const known = auth.verifyKnown(projectId, token)?.user
    if (known !== undefined) {
      request.projectUser = known
      done()
      return
    }
    auth.endUser(projectId, token).then((user) => { request.projectUser = user; done() }, done)
  })

  // Callback style: a token remembered in the current state is accepted without a promise (see authenticateKnown).
  app.decorate('requireServiceToken', (request: FastifyRequest, _reply: FastifyReply, done: HookHandlerDoneFunction) => {
    const { projectId } = request.params as { projectId: string }
    const accept = (found: ServiceTokenIdentity | null): void => {
      done(found === null || found.projectId !== projectId ? unauthorized('APP_INVALID_SERVICE_TOKEN', 'Service token is invalid, revoked, expired or for another project') : undefined)
    }
    const token = bearerOrRefuse(request, 'service token', done)
    if (token === null) return
    const known = serviceTokens.authenticateKnown(token)
    if (known !== undefined) accept(known)
    else serviceTokens.authenticate(token).then(accept, done)
  })
}

/** The end user behind requireProjectUser. */
export function projectUser (request: FastifyRequest): ProjectUser {
  if (request.projectUser === null) throw new Error('route is missing its project-user hook')
  return request.projectUser
}

export default fp(projectAuthPlugin, { name: 'plinth-project-auth', fastify: '5.x', dependencies: ['plinth-config', 'plinth-store', 'plinth-secrets'] })
