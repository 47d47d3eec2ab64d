import type { FastifyPluginAsyncTypebox, TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { ProjectAuthParams } from '../../schemas/project-auth.js'
import { OauthCallbackQuery, OauthExchangeBody, OauthProviderParams, OauthResponses, OauthStartQuery } from '../../schemas/project-oauth.js'
import { commonErrors } from '../../services/platform/errors.js'
import { identityErrors } from '../../services/identity/errors.js'
import { projectErrors } from '../../services/projects/errors.js'
import { OAUTH_FAILURES } from '../../services/projects/oauth-sign-in.js'
import { acceptFormCallbacks, formPostedTo, SignInCookie } from '../../http/sign-in-cookie.js'
import { SsoCallbackParams, SsoResponses } from '../../schemas/sso.js'
import { ok } from '../replies.js'

const tags = ['project auth']
const PROJECT = [commonErrors.projectNotFound, projectErrors.authDisabled]

/** `/api/p/:projectId/auth/oauth/…`: end users' sign-in through the project's OpenID providers (docs/projects.md). */
const oauthSignInRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { oauthSignIn } = app.projectAuth
  const { rateLimiter } = app.identity
  const limit = app.config.identity.authRateLimit
  const cookie = new SignInCookie(app.config.publicUrl)
  const cookiePath = (projectId: string) => `/api/p/${encodeURIComponent(projectId)}/auth/oauth/`

  app.get('/providers', {
    config: { errors: PROJECT },
    schema: {
      operationId: 'listProjectOauthProviders',
      tags,
      summary: 'The project\'s enabled sign-in providers, each with the URL that starts its sign-in',
      params: ProjectAuthParams,
      response: OauthResponses.signInProviders
    }
  }, async (request) => {
    const { projectId } = request.params
    const providers = await oauthSignIn.signInProviders(projectId)
    return ok(providers.map((provider) => ({ ...provider, startUrl: `/api/p/${projectId}/auth/oauth/${provider.id}/start` })))
  })

  app.get('/:provider/start', {
    config: {
      errors: [
        ...PROJECT, commonErrors.rateLimited, projectErrors.oauthProviderNotFound, projectErrors.oauthProviderDisabled,
        projectErrors.oauthRedirectNotAllowed, identityErrors.ssoProviderUnavailable
      ]
    },
    schema: {
      operationId: 'startProjectOauth',
      tags,
      summary: 'Start an end user\'s sign-in: redirects to the project\'s provider',
      description: 'Sets an HttpOnly cookie that binds the sign-in to this browser, then redirects to the provider. ' +
        '`redirectTo` must be on one of the project\'s `allowedOrigins`. Rate-limited per client address.',
      params: OauthProviderParams,
      querystring: OauthStartQuery,
      response: OauthResponses.started
    }
  }, async (request, reply) => {
    const { projectId, provider } = request.params
    await rateLimiter.hit('project-oauth-start', `${projectId}:${request.ip}`, limit)
    const started = await oauthSignIn.start(projectId, provider, request.query.redirectTo, request.query.codeChallenge)
    cookie.set(reply, cookiePath(projectId), started)
    return reply.redirect(started.location, 302)
  })

  // Apple posts its answer as a form (response_mode=form_post); only the callback accepts that content type.
  await app.register(async (scope) => {
    const callbacks = scope.withTypeProvider<TypeBoxTypeProvider>()
    acceptFormCallbacks(scope)

    callbacks.get('/:provider/callback', {
      config: { errors: [...PROJECT, projectErrors.oauthProviderNotFound, identityErrors.ssoInvalidState] },
      schema: {
        operationId: 'completeProjectOauth',
        tags,
        summary: 'Provider callback: redirects to the sign-in\'s redirectTo with a one-time ticket',
        description: 'A state that is unknown, used, expired or started in another browser is refused with 400. ' +
          'Otherwise redirects with `?ticket=` (trade it at `POST …/auth/oauth/exchange` within 60 s) or `?error=`.',
        params: OauthProviderParams,
        querystring: OauthCallbackQuery,
        response: OauthResponses.completed([...OAUTH_FAILURES, identityErrors.ssoFailed])
      }
    }, async (request, reply) => {
      const { projectId, provider } = request.params
      const landing = await oauthSignIn.callback(projectId, provider, request.query, cookie.binding(request, request.query.state))
      if (landing.failure !== null) {
        const level = landing.failure.code === identityErrors.ssoFailed.code ? 'error' : 'info'
        request.log[level]({ code: landing.failure.code, err: landing.failure.cause }, 'an end user\'s OAuth sign-in did not complete')
      }
      cookie.clear(reply, cookiePath(projectId), request.query.state)
      return reply.redirect(landing.location, 302)
    })

    callbacks.post('/:provider/callback', {
      config: { errors: PROJECT },
      schema: {
        operationId: 'completeProjectOauthFormPost',
        tags,
        summary: 'Provider callback (form post, Apple): sends the browser to the query callback',
        description: 'For providers that post their answer as a form (Sign in with Apple, `response_mode=form_post`). ' +
          'A cross-site post carries no SameSite cookie, so the browser is sent on to `GET …/callback` with the same fields.',
        consumes: ['application/x-www-form-urlencoded'],
        params: OauthProviderParams,
        body: SsoCallbackParams,
        response: SsoResponses.formPosted
      }
    }, async (request, reply) => {
      const { projectId, provider } = request.params
      return reply.redirect(formPostedTo(`${cookiePath(projectId)}${provider}/callback`, request.body), 303)
    })
  })

  app.post('/exchange', {
    config: {
      errors: [
        ...PROJECT, commonErrors.rateLimited, identityErrors.invalidSsoTicket, projectErrors.userDisabled, projectErrors.emailNotVerified
      ]
    },
    schema: {
      operationId: 'exchangeProjectOauthTicket',
      tags,
      summary: 'Trade a one-time sign-in ticket for the project\'s session',
      description: 'A ticket works once, for 60 s, with the verifier of the `codeChallenge` its sign-in started with ' +
        '(a wrong one uses the ticket up). Answers what login answers. Rate-limited per client address.',
      params: ProjectAuthParams,
      body: OauthExchangeBody,
      response: OauthResponses.exchanged
    }
  }, async (request) => {
    await rateLimiter.hit('project-oauth-exchange', `${request.params.projectId}:${request.ip}`, limit)
    return ok(await oauthSignIn.exchange(request.params.projectId, request.body.ticket, request.body.codeVerifier))
  })
}

export default oauthSignInRoutes
