import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import type { FastifyBaseLogger } from 'fastify'
import { SsoCallbackParams, SsoExchangeBody, SsoProviderParams, SsoResponses, SsoStartQuery } from '../../schemas/sso.js'
import { commonErrors } from '../../services/platform/errors.js'
import { identityErrors, SSO_FAILURES } from '../../services/identity/errors.js'
import type { SsoRedirect } from '../../services/identity/sso.js'
import { acceptFormCallbacks, formPostedTo, SignInCookie } from '../../http/sign-in-cookie.js'
import { ok } from '../replies.js'

const tags = ['auth']

// A user cancelling or replaying a link is routine; an unreachable provider needs an operator; anything else is a bug.
function logFailure (log: FastifyBaseLogger, { failure }: SsoRedirect): void {
  if (failure === null) return
  const level = failure.code === identityErrors.ssoFailed.code
    ? 'error'
    : failure.code === identityErrors.ssoProviderUnavailable.code ? 'warn' : 'info'
  log[level]({ code: failure.code, err: failure.cause }, 'SSO sign-in did not complete')
}

// What a sign-in lands with in `?error=` when it did not complete, as the contract lists them.
const STARTED = SsoResponses.started([identityErrors.ssoProviderUnavailable, identityErrors.ssoFailed])
const COMPLETED = SsoResponses.completed([...SSO_FAILURES, identityErrors.ssoFailed])

/** `/api/auth/oauth/…`: single sign-on with the OpenID providers the server is configured for. */
const oauthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { sso, rateLimiter } = app.identity
  const limit = app.config.identity.authRateLimit
  const cookie = new SignInCookie(app.config.publicUrl)
  const cookiePath = `${app.prefix}/`

  app.get('/providers', {
    schema: {
      operationId: 'listSsoProviders',
      tags,
      summary: 'The SSO providers this server is configured for',
      description: 'Only the providers configured on this server (Google, Microsoft, Apple), each with the URL that starts its sign-in.',
      response: SsoResponses.providers
    }
  }, async () => ok(sso.providers().map((provider) => ({ ...provider, startUrl: `${app.prefix}/${provider.id}/start` }))))

  app.get('/:provider/start', {
    config: { errors: [identityErrors.ssoProviderNotFound, identityErrors.ssoRedirectNotAllowed] },
    schema: {
      operationId: 'startSso',
      tags,
      summary: 'Start SSO: redirects to the identity provider',
      description: 'Sets an HttpOnly cookie that binds the sign-in to this browser, then redirects to the provider. ' +
        '`codeChallenge` is the S256 challenge of a verifier the app keeps: the ticket the sign-in lands with is traded only with it. ' +
        '`redirectTo` picks where to land afterwards among the origins the server allows. ' +
        'If the provider cannot be reached, redirects to the landing URL with `?error=`.',
      params: SsoProviderParams,
      querystring: SsoStartQuery,
      response: STARTED
    }
  }, async (request, reply) => {
    const redirect = await sso.start(request.params.provider, request.query.codeChallenge, request.query.redirectTo)
    logFailure(request.log, redirect)
    if (redirect.started !== null) cookie.set(reply, cookiePath, redirect.started)
    return reply.redirect(redirect.location, 302)
  })

  // Apple posts its answer as a form (response_mode=form_post); only the callback accepts that content type.
  await app.register(async (scope) => {
    const callbacks = scope.withTypeProvider<TypeBoxTypeProvider>()
    acceptFormCallbacks(scope)

    callbacks.get('/:provider/callback', {
      config: { errors: [identityErrors.ssoProviderNotFound] },
      schema: {
        operationId: 'completeSso',
        tags,
        summary: 'Identity-provider callback (query); redirects with a one-time ticket',
        description: 'Where the provider sends the browser back. Redirects to the landing URL with `?ticket=` ' +
          '(trade it at `POST /api/auth/oauth/exchange` within 60 s) or with `?error=`.',
        params: SsoProviderParams,
        querystring: SsoCallbackParams,
        response: COMPLETED
      }
    }, async (request, reply) => {
      const redirect = await sso.callback(request.params.provider, request.query, cookie.binding(request, request.query.state))
      logFailure(request.log, redirect)
      cookie.clear(reply, cookiePath, request.query.state)
      return reply.redirect(redirect.location, 302)
    })

    callbacks.post('/:provider/callback', {
      config: { errors: [identityErrors.ssoProviderNotFound] },
      schema: {
        operationId: 'completeSsoFormPost',
        tags,
        summary: 'Identity-provider callback (form post, Apple): sends the browser to the query callback',
        description: 'For providers that post their answer as a form (Sign in with Apple, `response_mode=form_post`). ' +
          'A cross-site post carries no SameSite cookie, so the browser is sent on to `GET …/callback` with the same fields.',
        consumes: ['application/x-www-form-urlencoded'],
        params: SsoProviderParams,
        body: SsoCallbackParams,
        response: SsoResponses.formPosted
      }
    }, async (request, reply) => {
      sso.requireProvider(request.params.provider)
      return reply.redirect(formPostedTo(`${app.prefix}/${request.params.provider}/callback`, request.body), 303)
    })
  })

  app.post('/exchange', {
    config: { errors: [commonErrors.rateLimited, identityErrors.invalidSsoTicket] },
    schema: {
      operationId: 'exchangeSsoTicket',
      tags,
      summary: 'Trade a one-time SSO ticket for a platform JWT and a refresh token',
      description: 'A ticket works once, for 60 s, with the verifier of the `codeChallenge` its sign-in started with ' +
        '(a wrong one uses the ticket up). Rate-limited per address.',
      body: SsoExchangeBody,
      response: SsoResponses.exchanged
    }
  }, async (request) => {
    await rateLimiter.hit('sso-exchange', request.ip, limit)
    return ok(await sso.exchange(request.body.ticket, request.body.codeVerifier))
  })
}

export default oauthRoutes
