import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CreateServiceTokenBody, ProjectIdParams, ProjectResponses, ServiceTokenParams } from '../../schemas/projects.js'
import { commonErrors } from '../../services/platform/errors.js'
import { identityErrors } from '../../services/identity/errors.js'
import { projectErrors } from '../../services/projects/errors.js'
import { created, deleted, ok } from '../replies.js'

/**
 * Service tokens let a project's own server call `POST /api/p/:projectId/auth/verify`.
 * Shown once, stored as a hash, revocable at once — what an operator expects of a server credential.
 */
const serviceTokenRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { serviceTokens } = app.projectAuth
  const tags = ['projects']
  app.routeDefaults({ parent: 'project', permission: 'project.tokens.manage' })

  app.get('', {
    schema: {
      operationId: 'listServiceTokens',
      tags,
      summary: 'The project\'s active service tokens (never the token values)',
      description: 'Each token\'s name, hint and dates; the values are never stored.',
      params: ProjectIdParams,
      response: ProjectResponses.tokenList
    }
  }, async (request) => ok(await serviceTokens.list(request.scope.project.id)))

  app.post('', {
    config: { errors: [commonErrors.invalidName, identityErrors.invalidExpiry, projectErrors.tooManyServiceTokens] },
    schema: {
      operationId: 'createServiceToken',
      tags,
      summary: 'Issue a service token; the value is shown only in this response',
      description: 'The value (`<SERVICE_TOKEN_PREFIX>_…`) is in this answer only; the project\'s servers send it ' +
        'as `Authorization: Bearer` to `POST /api/p/{projectId}/auth/verify`.',
      params: ProjectIdParams,
      body: CreateServiceTokenBody,
      response: ProjectResponses.tokenCreated
    }
  }, async (request, reply) => {
    const token = await serviceTokens.create(request.scope.project.id, { ...request.body, createdBy: request.caller.user.userId })
    return created(reply, token)
  })

  app.delete('/:tokenId', {
    config: { errors: [projectErrors.serviceTokenNotFound] },
    schema: {
      operationId: 'revokeServiceToken',
      tags,
      summary: 'Revoke a service token; it stops working at once',
      description: 'The token is refused from the next request on.',
      params: ServiceTokenParams,
      response: ProjectResponses.deleted
    }
  }, async (request) => {
    await serviceTokens.revoke(request.scope.project.id, request.params.tokenId)
    return deleted(request.params.tokenId)
  })
}

export default serviceTokenRoutes
