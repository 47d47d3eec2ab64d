import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CreateApiKeyBody, CreateApiKeyResponses, KeyParams, ListApiKeysResponses, RevokeApiKeyResponses } from '../../schemas/auth.js'
import { platformCaller } from '../../plugins/auth.js'

const apiKeyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { apiKeys } = app.identity

  app.get('', {
    config: { auth: 'platform' },
    schema: { operationId: 'listApiKeys', tags: ['auth'], summary: 'List your personal access tokens (never the tokens themselves)', response: ListApiKeysResponses }
  }, async (request) => ({ success: true as const, data: await apiKeys.list(platformCaller(request).userId) }))

  app.post('', {
    config: { auth: 'session' },
    schema: { operationId: 'createApiKey', tags: ['auth'], summary: 'Create a personal access token; the token is shown once', body: CreateApiKeyBody, response: CreateApiKeyResponses }
  }, async (request, reply) => reply.code(201).send({ success: true as const, data: await apiKeys.create(platformCaller(request).userId, request.body) }))

  app.delete('/:keyId', {
    config: { auth: 'session' },
    schema: { operationId: 'revokeApiKey', tags: ['auth'], summary: 'Revoke a personal access token at once', params: KeyParams, response: RevokeApiKeyResponses }
  }, async (request) => {
    await apiKeys.revoke(platformCaller(request).userId, request.params.keyId)
    return { success: true as const, data: { revoked: true as const } }
  })
}

export default apiKeyRoutes
