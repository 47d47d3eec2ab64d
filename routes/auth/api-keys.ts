import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CreateApiKeyBody, CreateApiKeyResponses, KeyParams, ListApiKeysResponses, RevokeApiKeyResponses } from '../../schemas/auth.js'
import { platformCaller } from '../../plugins/auth.js'
import { createdAt } from '../location.js'

const apiKeyRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { apiKeys } = app.identity

  app.get('', {
    config: { auth: 'platform' },
    schema: { operationId: 'listApiKeys', tags: ['auth'], summary: 'List your personal access tokens (never the tokens themselves)', description: 'Each token\'s name, hint, scopes and dates; the values are never stored.', response: ListApiKeysResponses }
  }, async (request) => ({ success: true as const, data: await apiKeys.list(platformCaller(request).userId) }))

  app.post('', {
    config: { auth: 'session' },
    schema: { operationId: 'createApiKey', tags: ['auth'], summary: 'Create a personal access token; the token is shown once', description: 'Needs a signed-in session (a personal access token cannot create another: 403 `APP_PAT_NOT_ALLOWED`). `scopes` narrow what the token may do to permissions from the catalogue.', body: CreateApiKeyBody, response: CreateApiKeyResponses }
  }, async (request, reply) => {
    const key = await apiKeys.create(platformCaller(request).userId, request.body)
    return reply.code(201).header('location', createdAt(request, key.id)).send({ success: true as const, data: key })
  })

  app.delete('/:keyId', {
    config: { auth: 'session' },
    schema: { operationId: 'revokeApiKey', tags: ['auth'], summary: 'Revoke a personal access token at once', description: 'Needs a signed-in session. The token is refused from the next request on.', params: KeyParams, response: RevokeApiKeyResponses }
  }, async (request) => {
    await apiKeys.revoke(platformCaller(request).userId, request.params.keyId)
    return { success: true as const, data: { revoked: true as const } }
  })
}

export default apiKeyRoutes
