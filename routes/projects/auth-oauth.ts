import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ProjectIdParams } from '../../schemas/projects.js'
import { OauthProviderBody, OauthProviderParams, OauthResponses } from '../../schemas/project-oauth.js'
import { commonErrors } from '../../services/platform/errors.js'
import { projectErrors } from '../../services/projects/errors.js'
import { deleted, ok } from '../replies.js'

/**
 * `/api/projects/:projectId/auth/oauth-providers`: a project's OpenID
 * providers for its end users; client secrets are sealed and never returned.
 */
const authOauthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { oauthProviders } = app.projectAuth
  const tags = ['projects']
  app.routeDefaults({ parent: 'project', permission: 'project.auth.manage' })

  app.get('', {
    schema: {
      operationId: 'listProjectOauthProviderSettings',
      tags,
      summary: 'The project\'s end-user sign-in providers (never their secrets)',
      params: ProjectIdParams,
      response: OauthResponses.providers
    }
  }, async (request) => ok(await oauthProviders.list(request.scope.project.id)))

  app.get('/:provider', {
    config: { errors: [projectErrors.oauthProviderNotFound] },
    schema: {
      operationId: 'getProjectOauthProvider',
      tags,
      summary: 'One end-user sign-in provider (never its secret)',
      params: OauthProviderParams,
      response: OauthResponses.provider
    }
  }, async (request) => ok(await oauthProviders.get(request.scope.project.id, request.params.provider)))

  app.put('/:provider', {
    config: { errors: [commonErrors.validationFailed, projectErrors.oauthHostRefused] },
    schema: {
      operationId: 'putProjectOauthProvider',
      tags,
      summary: 'Create or replace an end-user sign-in provider (OpenID Connect)',
      description: 'The issuer and endpoints are resolved and refused when internal, unless the operator allowed them ' +
        '(`PROJECT_OAUTH_ALLOWED_HOSTS`); every call at sign-in goes through the same check. A client secret left out ' +
        'keeps the stored one while issuer and client id stay the same.',
      params: OauthProviderParams,
      body: OauthProviderBody,
      response: OauthResponses.provider
    }
  }, async (request) => ok(await oauthProviders.put(request.scope.project.id, request.params.provider, request.body)))

  app.delete('/:provider', {
    config: { errors: [projectErrors.oauthProviderNotFound] },
    schema: {
      operationId: 'deleteProjectOauthProvider',
      tags,
      summary: 'Remove an end-user sign-in provider',
      params: OauthProviderParams,
      response: OauthResponses.deleted
    }
  }, async (request) => {
    await oauthProviders.remove(request.scope.project.id, request.params.provider)
    return deleted(request.params.provider)
  })
}

export default authOauthRoutes
