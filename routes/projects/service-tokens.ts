import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CreateServiceTokenBody, ProjectIdParams, ProjectResponses, ServiceTokenParams } from '../../schemas/projects.js'
import { platformCaller } from '../../plugins/auth.js'
import { createdAt } from '../location.js'

/**
 * Service tokens let a project's own server call `POST /api/p/:projectId/auth/verify`.
 * Shown once, stored as a hash, revocable at once — what an operator expects of a server credential.
 */
const serviceTokenRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { serviceTokens } = app.projectAuth
  const tags = ['projects']

  app.get('', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('project.tokens.manage'),
    schema: { operationId: 'listServiceTokens', tags, summary: 'The project\'s active service tokens (never the token values)', description: 'Needs `project.tokens.manage`. Lists each token\'s name, hint and dates; the values are never stored.', params: ProjectIdParams, response: ProjectResponses.tokenList }
  }, async (request) => ({ success: true as const, data: await serviceTokens.list(request.params.projectId) }))

  app.post('', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('project.tokens.manage'),
    schema: { operationId: 'createServiceToken', tags, summary: 'Issue a service token; the value is shown only in this response', description: 'Needs `project.tokens.manage`. The value (`<SERVICE_TOKEN_PREFIX>_…`) is in this answer only; the project\'s servers send it as `Authorization: Bearer` to `POST /api/p/{projectId}/auth/verify`.', params: ProjectIdParams, body: CreateServiceTokenBody, response: ProjectResponses.tokenCreated }
  }, async (request, reply) => {
    const token = await serviceTokens.create(request.params.projectId, { ...request.body, createdBy: platformCaller(request).userId })
    return reply.code(201).header('location', createdAt(request, token.id)).send({ success: true as const, data: token })
  })

  app.delete('/:tokenId', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('project.tokens.manage'),
    schema: { operationId: 'revokeServiceToken', tags, summary: 'Revoke a service token; it stops working at once', description: 'Needs `project.tokens.manage`. The token is refused from the next request on.', params: ServiceTokenParams, response: ProjectResponses.deleted }
  }, async (request) => {
    await serviceTokens.revoke(request.params.projectId, request.params.tokenId)
    return { success: true as const, data: { id: request.params.tokenId, deleted: true as const } }
  })
}

export default serviceTokenRoutes
