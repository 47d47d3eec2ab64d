import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  LoginBody, LoginResponses, LogoutResponses, MeResponses, RefreshBody, RefreshResponses, RegisterBody, RegisterResponses
} from '../../schemas/auth.js'
import { normalizeEmail } from '../../services/identity/users.js'
import { platformCaller } from '../../plugins/auth.js'
import apiKeyRoutes from './api-keys.js'
import sshKeyRoutes from './ssh-keys.js'
import oauthRoutes from './oauth.js'

const sessionRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { users, sessions, rateLimiter } = app.identity
  const limit = app.config.authRateLimit

  app.post('/register', {
    config: { auth: 'none' },
    schema: { operationId: 'registerPlatformUser', tags: ['auth'], summary: 'Register a platform user', description: 'Creates an account; sign in with `POST /api/auth/login` afterwards. Passwords are at least 8 characters and not the email. Rate-limited per address; an email already registered is 409 `APP_EMAIL_TAKEN`.', body: RegisterBody, response: RegisterResponses }
  }, async (request, reply) => {
    await rateLimiter.hit('register', request.ip, limit)
    return reply.code(201).send({ success: true as const, data: await users.register(request.body) })
  })

  app.post('/login', {
    config: { auth: 'none' },
    schema: { operationId: 'loginPlatformUser', tags: ['auth'], summary: 'Log in; returns a platform JWT and a refresh token', description: 'Returns a short-lived platform JWT and a single-use refresh token. Rate-limited per address and per email.', body: LoginBody, response: LoginResponses }
  }, async (request) => {
    await rateLimiter.hit('login-ip', request.ip, limit)
    await rateLimiter.hit('login-email', normalizeEmail(request.body.email), limit)
    const { user, sessionEpoch } = await users.authenticate(request.body.email, request.body.password)
    return { success: true as const, data: { user, ...await sessions.start(user.id, null, sessionEpoch) } }
  })

  app.post('/refresh', {
    config: { auth: 'none' },
    schema: { operationId: 'refreshPlatformSession', tags: ['auth'], summary: 'Trade a refresh token for a new access token and refresh token', description: 'Refresh tokens rotate: the one sent dies, and reusing a dead one (after a short grace for double submits) ends its whole session.', body: RefreshBody, response: RefreshResponses }
  }, async (request) => {
    await rateLimiter.hit('refresh', request.ip, limit)
    return { success: true as const, data: await sessions.refresh(request.body.refreshToken) }
  })

  app.post('/logout', {
    config: { auth: 'none' },
    schema: { operationId: 'logoutPlatformSession', tags: ['auth'], summary: 'End the session of a refresh token', description: 'Ends the session the refresh token belongs to; its access tokens expire on their own.', body: RefreshBody, response: LogoutResponses }
  }, async (request) => {
    await sessions.logout(request.body.refreshToken)
    return { success: true as const, data: { loggedOut: true as const } }
  })

  app.get('/me', {
    config: { auth: 'platform' },
    schema: { operationId: 'getPlatformMe', tags: ['auth'], summary: 'The calling platform user', description: 'The account of the platform JWT or personal access token sent.', response: MeResponses }
  }, async (request) => ({ success: true as const, data: await users.get(platformCaller(request).userId) }))

  await app.register(apiKeyRoutes, { prefix: '/api-keys' })
  await app.register(sshKeyRoutes, { prefix: '/ssh-keys' })
  await app.register(oauthRoutes, { prefix: '/oauth' })
}

export default sessionRoutes
