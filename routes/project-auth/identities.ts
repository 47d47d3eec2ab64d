import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ProjectAuthParams } from '../../schemas/project-auth.js'
import { OauthProviderParams, OauthResponses } from '../../schemas/project-oauth.js'
import { commonErrors } from '../../services/platform/errors.js'
import { projectErrors } from '../../services/projects/errors.js'
import { deleted, ok } from '../replies.js'

const tags = ['project auth']
const PROJECT = [commonErrors.projectNotFound, projectErrors.authDisabled]

/** `/api/p/:projectId/auth/me/identities`: the provider identities the signed-in end user signs in with (docs/projects.md). */
const identityRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { oauthSignIn } = app.projectAuth

  app.get('/', {
    config: { auth: 'projectUser', errors: PROJECT },
    schema: {
      operationId: 'listProjectOauthIdentities',
      tags,
      summary: 'The provider identities the signed-in end user signs in with',
      description: 'Each with the provider\'s id, when it was linked and the address the provider proved then.',
      params: ProjectAuthParams,
      response: OauthResponses.identities
    }
  }, async (request) => ok(await oauthSignIn.identitiesOf(request.params.projectId, request.caller.endUser.id)))

  app.delete('/:provider', {
    config: { auth: 'projectUser', errors: [...PROJECT, projectErrors.oauthIdentityNotFound, projectErrors.oauthLastSignInMethod] },
    schema: {
      operationId: 'unlinkProjectOauthIdentity',
      tags,
      summary: 'Unlink the signed-in end user\'s identity at a provider',
      description: 'Removes every identity of the user at that provider (a later sign-in there with the same verified address links ' +
        'the account again, as a first one would). Refused while it is the user\'s only way in: no password, and no identity at ' +
        'another enabled provider.',
      params: OauthProviderParams,
      response: OauthResponses.deleted
    }
  }, async (request) => {
    const { projectId, provider } = request.params
    await oauthSignIn.unlink(projectId, request.caller.endUser.id, provider)
    return deleted(provider)
  })
}

export default identityRoutes
