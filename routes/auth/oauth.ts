import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyBaseLogger } from 'fastify'
import {
  ExchangeSsoTicketResponses, ListSsoProvidersResponses, SsoCallbackParams, SsoCallbackResponses, SsoExchangeBody, SsoProviderParams, SsoStartQuery, StartSsoResponses
} from '../../schemas/sso.js'
import { systemClock } from '../../services/clock.js'
import { SingleSignOn, type SsoRedirect } from '../../services/identity/sso.js'

// A form post from a provider is a handful of short fields; Apple's is the largest.
const FORM_BODY_LIMIT = 16 * 1024

// A user cancelling or replaying a link is routine; an unreachable provider needs an operator; anything else is a bug.
function logFailure (log: FastifyBaseLogger, { failure }: SsoRedirect): void {
  if (failure === null) return
  const level = failure.code === 'APP_SSO_FAILED' ? 'error' : failure.code === 'APP_SSO_PROVIDER_UNAVAILABLE' ? 'warn' : 'info'
  log[level]({ code: failure.code, err: failure.cause }, 'SSO sign-in did not complete')
}

const oauthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { users, sessions, rateLimiter } = app.identity
  const { config } = app
  const sso = new SingleSignOn(app.store, {
    clock: systemClock,
    providers: config.ssoProviders,
    callbackUrl: (provider) => `${config.publicUrl}${app.prefix}/${provider}/callback`,
    landingUrl: config.ssoRedirectUrl,
    allowedRedirectOrigins: config.ssoAllowedRedirects,
    users,
    sessions,
    revokeCredentials: app.identity.revokeCredentials
  })
  await sso.init()

  app.get('/providers', {
    config: { auth: 'none' },
    schema: { operationId: 'listSsoProviders', tags: ['auth'], summary: 'The SSO providers this server is configured for', description: 'Only the providers configured on this server (Google, Microsoft, Apple), each with the URL that starts its sign-in.', response: ListSsoProvidersResponses }
  }, async () => ({ success: true as const, data: sso.providers().map((p) => ({ ...p, startUrl: `${app.prefix}/${p.id}/start` })) }))

  app.get('/:provider/start', {
    config: { auth: 'none' },
    schema: { operationId: 'startSso', tags: ['auth'], summary: 'Start SSO: redirects to the identity provider', description: 'Redirects the browser to the provider. `redirectTo` picks where to land afterwards among the origins the server allows. If the provider cannot be reached, redirects to the landing URL with `?error=`.', params: SsoProviderParams, querystring: SsoStartQuery, response: StartSsoResponses }
  }, async (request, reply) => {
    const redirect = await sso.start(request.params.provider, request.query.redirectTo)
    logFailure(request.log, redirect)
    return reply.redirect(redirect.location, 302)
  })

  // Apple posts its answer as a form (response_mode=form_post); only the callback accepts that content type.
  await app.register(async (scope) => {
    const callbacks = scope.withTypeProvider<TypeBoxTypeProvider>()
    callbacks.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string', bodyLimit: FORM_BODY_LIMIT }, (_request, body, done) => {
      done(null, Object.fromEntries(new URLSearchParams(body as string)))
    })

    callbacks.get('/:provider/callback', {
      config: { auth: 'none' },
      schema: { operationId: 'completeSso', tags: ['auth'], summary: 'Identity-provider callback (query); redirects with a one-time ticket', description: 'Where the provider sends the browser back. Redirects to the landing URL with `?ticket=` (trade it at `POST /api/auth/oauth/exchange` within 60 s) or with `?error=APP_SSO_…`.', params: SsoProviderParams, querystring: SsoCallbackParams, response: SsoCallbackResponses }
    }, async (request, reply) => {
      const redirect = await sso.callback(request.params.provider, request.query)
      logFailure(request.log, redirect)
      return reply.redirect(redirect.location, 302)
    })

    callbacks.post('/:provider/callback', {
      config: { auth: 'none' },
      schema: { operationId: 'completeSsoFormPost', tags: ['auth'], summary: 'Identity-provider callback (form post, Apple); redirects with a one-time ticket', description: 'The same callback for providers that post their answer as a form (Sign in with Apple, `response_mode=form_post`).', consumes: ['application/x-www-form-urlencoded'], params: SsoProviderParams, body: SsoCallbackParams, response: SsoCallbackResponses }
    }, async (request, reply) => {
      const redirect = await sso.callback(request.params.provider, request.body)
      logFailure(request.log, redirect)
      return reply.redirect(redirect.location, 302)
    })
  })

  app.post('/exchange', {
    config: { auth: 'none' },
    schema: { operationId: 'exchangeSsoTicket', tags: ['auth'], summary: 'Trade a one-time SSO ticket for a platform JWT and a refresh token', description: 'A ticket is single use and expires after 60 s. Rate-limited per address.', body: SsoExchangeBody, response: ExchangeSsoTicketResponses }
  }, async (request) => {
    await rateLimiter.hit('sso-exchange', request.ip, config.authRateLimit)
    return { success: true as const, data: await sso.exchange(request.body.ticket) }
  })
}

export default oauthRoutes
