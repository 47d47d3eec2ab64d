import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  ProjectAuthParams, ProjectAuthResponses, ProjectLoginBody, ProjectPasswordBody, ProjectRefreshBody, ProjectRegisterBody, VerifyBody
} from '../../schemas/project-auth.js'
import { commonErrors } from '../../services/platform/errors.js'
import { identityErrors } from '../../services/identity/errors.js'
import { normalizeEmail } from '../../services/identity/users.js'
import { projectErrors } from '../../services/projects/errors.js'
import { ok } from '../replies.js'
import emailFlowRoutes from './email.js'
import oauthSignInRoutes from './oauth.js'
import identityRoutes from './identities.js'

const tags = ['project auth']
/** What every sign-in route may meet first: too many attempts, a project that is not there or has auth off. */
const SIGN_IN = [commonErrors.rateLimited, commonErrors.projectNotFound, projectErrors.authDisabled]

/** `/api/p/:projectId/auth`: a project's end users, public while the project has auth on. */
const projectAuthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { auth } = app.projectAuth
  const { rateLimiter } = app.identity
  const limit = app.config.identity.authRateLimit
  app.routeDefaults({ auth: 'none' })

  app.post('/register', {
    config: {
      errors: [
        ...SIGN_IN, identityErrors.invalidEmail, identityErrors.weakPassword, identityErrors.emailTaken, projectErrors.reservedField,
        projectErrors.emailNotVerified,
        projectErrors.extraFieldsTooLarge
      ]
    },
    schema: {
      operationId: 'registerProjectUser',
      tags,
      summary: 'Register an end user; returns the user, a project JWT and a refresh token',
      description: 'Public while the project has end-user auth on. `extraFields` are the user\'s own fields of the `_users` collection: ' +
        'declared ones meet its definition as a data-API create does (refused with that API\'s codes), ' +
        'undeclared ones are kept as sent unless its `signUpFields` is `strict`. Rate-limited per project and address.',
      params: ProjectAuthParams,
      body: ProjectRegisterBody,
      response: ProjectAuthResponses.registered
    }
  }, async (request, reply) => {
    await rateLimiter.hit('project-register', `${request.params.projectId}:${request.ip}`, limit)
    void reply.code(201)
    return ok(await auth.register(request.params.projectId, request.body))
  })

  app.post('/login', {
    config: { errors: [...SIGN_IN, identityErrors.invalidCredentials, projectErrors.userDisabled, projectErrors.emailNotVerified] },
    schema: {
      operationId: 'loginProjectUser',
      tags,
      summary: 'Log an end user in; returns a project JWT and a refresh token',
      description: 'Public while the project has end-user auth on. Rate-limited per project and address, and per account across addresses.',
      params: ProjectAuthParams,
      body: ProjectLoginBody,
      response: ProjectAuthResponses.session
    }
  }, async (request) => {
    const { projectId } = request.params
    await rateLimiter.hit('project-login', `${projectId}:${request.ip}`, limit)
    // Per account too, across addresses: a window's cooldown, never a lock a stranger could hold an account in.
    await rateLimiter.hit('project-login-email', `${projectId}:${normalizeEmail(request.body.email)}`, limit)
    return ok(await auth.login(projectId, request.body.email, request.body.password))
  })

  app.post('/refresh', {
    config: { errors: [...SIGN_IN, identityErrors.invalidRefreshToken, projectErrors.emailNotVerified] },
    schema: {
      operationId: 'refreshProjectSession',
      tags,
      summary: 'Trade a refresh token for a new project JWT and refresh token (the old one dies; reusing it ends the session)',
      description: 'Refresh tokens rotate: the one sent dies, and reusing a dead one ' +
        '(after a short grace for double submits) ends its whole session.',
      params: ProjectAuthParams,
      body: ProjectRefreshBody,
      response: ProjectAuthResponses.session
    }
  }, async (request) => {
    await rateLimiter.hit('project-refresh', `${request.params.projectId}:${request.ip}`, limit)
    return ok(await auth.refresh(request.params.projectId, request.body.refreshToken))
  })

  app.post('/logout', {
    schema: {
      operationId: 'logoutProjectSession',
      tags,
      summary: 'End the session of a refresh token',
      description: 'Ends the session the refresh token belongs to; an unknown token is no error.',
      params: ProjectAuthParams,
      body: ProjectRefreshBody,
      response: ProjectAuthResponses.loggedOut
    }
  }, async (request) => {
    await auth.logout(request.params.projectId, request.body.refreshToken)
    return ok({ loggedOut: true as const })
  })

  app.post('/password', {
    config: { auth: 'projectUser', errors: [commonErrors.rateLimited, projectErrors.wrongPassword, identityErrors.weakPassword] },
    schema: {
      operationId: 'changeProjectUserPassword',
      tags,
      summary: 'Change the password; every other session of the user ends and a new one is returned',
      description: 'With the end user\'s project JWT and current password. ' +
        'Every other session of the user ends; the answer carries a new one.',
      params: ProjectAuthParams,
      body: ProjectPasswordBody,
      response: ProjectAuthResponses.session
    }
  }, async (request) => {
    const { projectId } = request.params
    const { id } = request.caller.endUser
    await rateLimiter.hit('project-password', `${projectId}:${id}`, limit)
    return ok(await auth.changePassword(projectId, id, request.body.currentPassword, request.body.newPassword))
  })

  app.get('/me', {
    config: { auth: 'projectUser' },
    schema: {
      operationId: 'getProjectMe',
      tags,
      summary: 'The end user holding this project JWT',
      description: 'The user holding the project JWT, without the fields the `_users` read rules deny.',
      params: ProjectAuthParams,
      response: ProjectAuthResponses.me
    }
  }, async (request) => ok(await auth.profile(request.params.projectId, request.caller.endUser)))

  app.post('/verify', {
    config: { auth: 'serviceToken' },
    schema: {
      operationId: 'verifyProjectToken',
      tags,
      summary: 'For the project\'s servers: whether a project JWT is valid here, and whose it is',
      description: 'Called with a service token of the project. Answers `valid: false` for anything that is not a live project JWT ' +
        'of this project (expired, tampered, of another project, a platform token), or while auth is off.',
      params: ProjectAuthParams,
      body: VerifyBody,
      response: ProjectAuthResponses.verified
    }
  }, async (request) => ok(await auth.verify(request.params.projectId, request.body.token)))

  await app.register(emailFlowRoutes)
  await app.register(oauthSignInRoutes, { prefix: '/oauth' })
  await app.register(identityRoutes, { prefix: '/me/identities' })
}

export default projectAuthRoutes
