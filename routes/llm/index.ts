import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import {
  CreateLlmCredentialBody, LlmModelsQuery, LlmResponses, LlmSettingsPatch, OrgLlmCredentialParams, OrgLlmParams, ProjectLlmCredentialParams,
  ProjectLlmParams, UpdateLlmCredentialBody, type LlmLevel
} from '../../schemas/llm.js'
import { llmErrors } from '../../services/llm/errors.js'
import { organizationScope, projectScope, type LlmScope } from '../../services/llm/scope.js'
import { created, deleted, ok } from '../replies.js'

/**
 * `llm-credentials`, `llm-settings`, `llm-models` and `llm-resolved`, the same
 * routes at two levels: mounted under `/api/organizations/:orgId` and under
 * `/api/projects/:projectId` (routes/index.ts), acting there as a platform user.
 */
const llmRoutes: FastifyPluginAsyncTypebox<{ level: LlmLevel }> = async (app, { level }) => {
  const { credentials, settings, resolution } = app.llm
  const tags = ['llm']
  const Level = level === 'organization' ? 'Organization' : 'Project'
  const where = level === 'organization' ? 'the organization' : 'the project'
  const params = level === 'organization' ? OrgLlmParams : ProjectLlmParams
  const credentialParams = level === 'organization' ? OrgLlmCredentialParams : ProjectLlmCredentialParams
  const scopeOf = (request: FastifyRequest): LlmScope => level === 'organization'
    ? organizationScope(request.scope.organization.orgId)
    : projectScope(request.scope.project.orgId, request.scope.project.id)
  const writes = [llmErrors.credentialInvalid, llmErrors.baseUrlForbidden]

  app.routeDefaults({ auth: 'platform', parent: level })

  app.get('/llm-credentials', {
    config: { permission: 'llm.read' },
    schema: {
      operationId: `list${Level}LlmCredentials`,
      tags,
      summary: `The LLM credentials of ${where}`,
      description: 'Keys are never returned: each is shown masked (`keyHint`).',
      params,
      response: LlmResponses.credentialList
    }
  }, async (request) => ok(await credentials.list(scopeOf(request))))

  app.post('/llm-credentials', {
    config: { permission: 'llm.manage', errors: [...writes, llmErrors.credentialExists, llmErrors.credentialLimit] },
    schema: {
      operationId: `create${Level}LlmCredential`,
      tags,
      summary: `Add an LLM credential to ${where}`,
      description: 'The key is sealed at rest and never shown again; ' +
        '`POST …/llm-credentials/{credentialId}/check` lists the provider\'s models with it.',
      params,
      body: CreateLlmCredentialBody,
      response: LlmResponses.credentialCreated
    }
  }, async (request, reply) => created(reply, await credentials.create(scopeOf(request), request.body)))

  app.get('/llm-credentials/:credentialId', {
    config: { permission: 'llm.read', errors: [llmErrors.credentialNotFound] },
    schema: {
      operationId: `get${Level}LlmCredential`,
      tags,
      summary: 'One LLM credential, its key masked',
      params: credentialParams,
      response: LlmResponses.credential
    }
  }, async (request) => ok(await credentials.get(scopeOf(request), request.params.credentialId)))

  app.patch('/llm-credentials/:credentialId', {
    config: { permission: 'llm.manage', errors: [llmErrors.credentialNotFound, ...writes] },
    schema: {
      operationId: `update${Level}LlmCredential`,
      tags,
      summary: 'Change an LLM credential\'s label, key or base URL',
      description: 'A new key or base URL clears the last check and the cached models.',
      params: credentialParams,
      body: UpdateLlmCredentialBody,
      response: LlmResponses.credential
    }
  }, async (request) => ok(await credentials.update(scopeOf(request), request.params.credentialId, request.body)))

  app.delete('/llm-credentials/:credentialId', {
    config: { permission: 'llm.manage', errors: [llmErrors.credentialNotFound] },
    schema: {
      operationId: `delete${Level}LlmCredential`,
      tags,
      summary: 'Remove an LLM credential',
      params: credentialParams,
      response: LlmResponses.deleted
    }
  }, async (request) => {
    await credentials.delete(scopeOf(request), request.params.credentialId)
    return deleted(request.params.credentialId)
  })

  app.post('/llm-credentials/:credentialId/check', {
    config: { permission: 'llm.manage', errors: [llmErrors.credentialNotFound] },
    schema: {
      operationId: `check${Level}LlmCredential`,
      tags,
      summary: 'Ask the provider for its models with this credential',
      description: '`ok: false` comes with the reason: the provider refused the key, could not be reached, or answered something else. ' +
        'A list that came is cached as the credential\'s models.',
      params: credentialParams,
      response: LlmResponses.check
    }
  }, async (request) => ok(await credentials.check(scopeOf(request), request.params.credentialId)))

  app.get('/llm-models', {
    config: { permission: 'llm.read', errors: [llmErrors.credentialNotFound] },
    schema: {
      operationId: `list${Level}LlmModels`,
      tags,
      summary: `The models of the credentials ${where} uses`,
      description: 'As cached by the last check or refresh of each credential, with context window and prices where the provider says; ' +
        '`allowed` applies the allowed models. `credentialId` narrows to one credential.',
      params,
      querystring: LlmModelsQuery,
      response: LlmResponses.models
    }
  }, async (request) => ok(await resolution.models(scopeOf(request), request.query.credentialId)))

  app.post('/llm-models/refresh', {
    config: { permission: 'llm.manage', errors: [llmErrors.credentialNotFound] },
    schema: {
      operationId: `refresh${Level}LlmModels`,
      tags,
      summary: `Fetch again the model lists of ${where}'s own credentials`,
      description: 'Checks each credential of this level (or the one `credentialId` names) ' +
        'and answers the models as `GET …/llm-models` would.',
      params,
      querystring: LlmModelsQuery,
      response: LlmResponses.models
    }
  }, async (request) => {
    const scope = scopeOf(request)
    await credentials.refresh(scope, request.query.credentialId)
    return ok(await resolution.models(scope, request.query.credentialId))
  })

  app.get('/llm-settings', {
    config: { permission: 'llm.read' },
    schema: {
      operationId: `get${Level}LlmSettings`,
      tags,
      summary: `What ${where} sets itself; null leaves a value to the level above`,
      description: '`GET …/llm-resolved` answers the values in force.',
      params,
      response: LlmResponses.settings
    }
  }, async (request) => ok(await settings.get(scopeOf(request))))

  app.patch('/llm-settings', {
    config: { permission: 'llm.manage', errors: [llmErrors.settingsInvalid] },
    schema: {
      operationId: `update${Level}LlmSettings`,
      tags,
      summary: `Change ${where}'s LLM settings`,
      description: 'Only the fields given change; null clears one back to the level above.',
      params,
      body: LlmSettingsPatch,
      response: LlmResponses.settings
    }
  }, async (request) => ok(await settings.update(scopeOf(request), request.body)))

  app.get('/llm-resolved', {
    config: { permission: 'llm.read' },
    schema: {
      operationId: `get${Level}LlmResolved`,
      tags,
      summary: `The LLM configuration in force for ${where}, each value with where it came from`,
      description: 'Scalars come from the project, else its organization, else the platform; allowed models only narrow; ' +
        'system prompts join; budgets stack. Warnings name a default model that is not allowed or has no credential, ' +
        'and credentials that failed their last check.',
      params,
      response: LlmResponses.resolved
    }
  }, async (request) => ok((await resolution.resolve(scopeOf(request))).view))
}

export default llmRoutes
