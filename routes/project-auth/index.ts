import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ProjectAuthParams, ProjectAuthResponses, ProjectLoginBody, ProjectPasswordBody, ProjectRefreshBody, ProjectRegisterBody, VerifyBody } from '../../schemas/project-auth.js'
import { normalizeEmail } from '../../services/identity/users.js'
import { projectUser } from '../../plugins/project-auth.js'

/** `/api/p/:projectId/auth`: a project's end users, public while the project has auth on. */
const projectAuthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { auth } = app.projectAuth
  const { rateLimiter } = app.identity
  const limit = app.config.authRateLimit
  const tags = ['project auth']

  app.post('/register', {
    config: { auth: 'none' },
    schema: { operationId: 'registerProjectUser', tags, summary: 'Register an end user; returns the user, a project JWT and a refresh token', description: 'Public while the project has end-user auth on (403 `APP_PROJECT_AUTH_DISABLED` otherwise). `extraFields` are the user\'s own fields of the `_users` collection: declared ones meet its definition as a data-API create does, undeclared ones are kept as sent unless its `signUpFields` is `strict` (then 400 `APP_UNKNOWN_FIELD`). Rate-limited per project and address.', params: ProjectAuthParams, body: ProjectRegisterBody, response: ProjectAuthResponses.registered }
  }, async (request, reply) => {
    await rateLimiter.hit('project-register', `${request.params.projectId}:${request.ip}`, limit)
    return reply.code(201).send({ success: true as const, data: await auth.register(request.params.projectId, request.body) })
  })

  app.post('/login', {
    config: { auth: 'none' },
    schema: { operationId: 'loginProjectUser', tags, summary: 'Log an end user in; returns a project JWT and a refresh token', description: 'Public while the project has end-user auth on. Rate-limited per project and address, and per account across addresses.', params: ProjectAuthParams, body: ProjectLoginBody, response: ProjectAuthResponses.loggedIn }
  }, async (request) => {
    const { projectId } = request.params
    await rateLimiter.hit('project-login', `${projectId}:${request.ip}`, limit)
    // Per account too, across addresses: a window's cooldown, never a lock a stranger could hold an account in.
    await rateLimiter.hit('project-login-email', `${projectId}:${normalizeEmail(request.body.email)}`, limit)
    return { success: true as const, data: await auth.login(projectId, request.body.email, request.body.password) }
  })

  app.post('/refresh', {
    config: { auth: 'none' },
    schema: { operationId: 'refreshProjectSession', tags, summary: 'Trade a refresh token for a new project JWT and refresh token (the old one dies; reusing it ends the session)', description: 'Refresh tokens rotate: the one sent dies, and reusing a dead one (after a short grace for double submits) ends its whole session.', params: ProjectAuthParams, body: ProjectRefreshBody, response: ProjectAuthResponses.refreshed }
  }, async (request) => {
    await rateLimiter.hit('project-refresh', `${request.params.projectId}:${request.ip}`, limit)
    return { success: true as const, data: await auth.refresh(request.params.projectId, request.body.refreshToken) }
  })

  app.post('/logout', {
    config: { auth: 'none' },
    schema: { operationId: 'logoutProjectSession', tags, summary: 'End the session of a refresh token', description: 'Ends the session the refresh token belongs to.', params: ProjectAuthParams, body: ProjectRefreshBody, response: ProjectAuthResponses.loggedOut }
  }, async (request) => {
    await auth.logout(request.params.projectId, request.body.refreshToken)
    return { success: true as const, data: { loggedOut: true as const } }
  })

  app.post('/password', {
    config: { auth: 'projectUser' },
    schema: { operationId: 'changeProjectUserPassword', tags, summary: 'Change the password; every other session of the user ends and a new one is returned', description: 'Needs the end user\'s project JWT and current password (403 `APP_WRONG_PASSWORD` if wrong). Every other session of the user ends; the answer carries a new one.', params: ProjectAuthParams, body: ProjectPasswordBody, response: ProjectAuthResponses.passwordChanged }
  }, async (request) => {
    const { projectId } = request.params
    await rateLimiter.hit('project-password', `${projectId}:${projectUser(request).id}`, limit)
    return { success: true as const, data: await auth.changePassword(projectId, projectUser(request).id, request.body.currentPassword, request.body.newPassword) }
  })

  app.get('/me', {
    config: { auth: 'projectUser' },
    schema: { operationId: 'getProjectMe', tags, summary: 'The end user holding this project JWT', description: 'The user holding the project JWT, without the fields the `_users` read rules deny.', params: ProjectAuthParams, response: ProjectAuthResponses.me }
  }, async (request) => ({ success: true as const, data: await auth.profile(request.params.projectId, projectUser(request)) }))

  app.post('/verify', {
    config: { auth: 'serviceToken' },
    schema: { operationId: 'verifyProjectToken', tags, summary: 'For the project\'s servers: whether a project JWT is valid here, and whose it is', description: 'Needs a service token of the project. Answers `valid: false` for anything that is not a live project JWT of this project (expired, tampered, of another project, a platform token), or while auth is off.', params: ProjectAuthParams, body: VerifyBody, response: ProjectAuthResponses.verified }
  }, async (request) => ({ success: true as const, data: await auth.verify(request.params.projectId, request.body.token) }))
}

export default projectAuthRoutes
