import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AuthResponses, LoginBody, RefreshBody, RegisterBody } from '../../schemas/auth.js'
import { commonErrors } from '../../services/platform/errors.js'
import { identityErrors } from '../../services/identity/errors.js'
import { normalizeEmail } from '../../services/identity/users.js'
import { ok } from '../replies.js'
import { apiKeyRoutes, sshKeyRoutes } from './credentials.js'
import oauthRoutes from './oauth.js'

const tags = ['auth']

/** `/api/auth/…`: platform users' accounts, sessions and credentials. */
const authRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { users, sessions, rateLimiter } = app.identity
  const limit = app.config.identity.authRateLimit
  app.routeDefaults({ auth: 'none' })

  app.post('/register', {
    config: { errors: [commonErrors.rateLimited, identityErrors.invalidEmail, identityErrors.weakPassword, identityErrors.emailTaken] },
    schema: {
      operationId: 'registerPlatformUser',
      tags,
      summary: 'Register a platform user',
      description: 'Creates an account; sign in with `POST /api/auth/login` afterwards. ' +
        'Passwords are at least 8 characters and not the email. Rate-limited per address.',
      body: RegisterBody,
      response: AuthResponses.registered
    }
  }, async (request, reply) => {
    await rateLimiter.hit('register', request.ip, limit)
    void reply.code(201)
    return ok(await users.register(request.body))
  })

  app.post('/login', {
    config: { errors: [commonErrors.rateLimited, identityErrors.invalidCredentials] },
    schema: {
      operationId: 'loginPlatformUser',
      tags,
      summary: 'Log in; returns a platform JWT and a refresh token',
      description: 'Returns a short-lived platform JWT and a single-use refresh token. Rate-limited per address and per email.',
      body: LoginBody,
      response: AuthResponses.loggedIn
    }
  }, async (request) => {
    await rateLimiter.hit('login-ip', request.ip, limit)
    await rateLimiter.hit('login-email', normalizeEmail(request.body.email), limit)
    const { user, sessionEpoch } = await users.authenticate(request.body.email, request.body.password)
    return ok({ user, ...await sessions.start(user.id, null, sessionEpoch) })
  })

  app.post('/refresh', {
    config: { errors: [commonErrors.rateLimited, identityErrors.invalidRefreshToken] },
    schema: {
      operationId: 'refreshPlatformSession',
      tags,
      summary: 'Trade a refresh token for a new access token and refresh token',
      description: 'Refresh tokens rotate: the one sent dies, and reusing a dead one ' +
        '(after a short grace for double submits) ends its whole session.',
      body: RefreshBody,
      response: AuthResponses.refreshed
    }
  }, async (request) => {
    await rateLimiter.hit('refresh', request.ip, limit)
    return ok(await sessions.refresh(request.body.refreshToken))
  })

  app.post('/logout', {
    schema: {
      operationId: 'logoutPlatformSession',
      tags,
      summary: 'End the session of a refresh token',
      description: 'Ends the session the refresh token belongs to; its access tokens expire on their own. An unknown token is no error.',
      body: RefreshBody,
      response: AuthResponses.loggedOut
    }
  }, async (request) => {
    await sessions.logout(request.body.refreshToken)
    return ok({ loggedOut: true as const })
  })

  app.get('/me', {
    config: { auth: 'platform' },
    schema: {
      operationId: 'getPlatformMe',
      tags,
      summary: 'The calling platform user',
      description: 'The account of the platform JWT or personal access token sent.',
      response: AuthResponses.me
    }
  }, async (request) => ok(await users.get(request.caller.user.userId)))

  await app.register(apiKeyRoutes, { prefix: '/api-keys' })
  await app.register(sshKeyRoutes, { prefix: '/ssh-keys' })
  await app.register(oauthRoutes, { prefix: '/oauth' })
}

export default authRoutes
