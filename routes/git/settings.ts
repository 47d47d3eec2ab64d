import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import {
  CreateDeployKeyBody, DeployKeyParams, GitResponses, ProtectedBranchBody, ProtectedBranchParams, ProtectedTagBody, RepoParams, UpdateProtectedBranchBody, UpdateProtectedTagBody
} from '../../schemas/git.js'
import { platformCaller } from '../../plugins/auth.js'
import { repoOfRequest } from '../../plugins/git.js'
import { createdAt } from '../location.js'

/** A repository's deploy keys and protected-branch and protected-tag rules: `git.admin`. */
const settingRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { deployKeys, protection, tagProtection } = app.git
  const tags = ['git']
  const repoOf = (request: FastifyRequest) => repoOfRequest(request).repo
  const preHandler = app.requireRepoPermission('git.admin')

  app.get('/deploy-keys', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'listGitDeployKeys', tags, summary: 'The repository\'s deploy keys (never their tokens)', description: 'Needs `git.admin`.', params: RepoParams, response: GitResponses.deployKeys }
  }, async (request) => ({ success: true as const, data: await deployKeys.list(repoOf(request)) }))

  app.post('/deploy-keys', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'createGitDeployKey', tags, summary: 'Add a deploy key: an SSH public key and an HTTP token shown once', description: 'Needs `git.admin`. Read-only unless `readOnly: false`. The key is validated as for user SSH keys (400 `APP_INVALID_SSH_KEY`) and may be a deploy key of one repository only (409 `APP_GIT_DEPLOY_KEY_EXISTS`). The token in this answer is the password for git over HTTP.', params: RepoParams, body: CreateDeployKeyBody, response: GitResponses.deployKeyCreated }
  }, async (request, reply) => {
    const key = await deployKeys.create(repoOf(request), platformCaller(request).userId, request.body)
    return reply.code(201).header('location', createdAt(request, key.id)).send({ success: true as const, data: key })
  })

  app.delete('/deploy-keys/:keyId', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'deleteGitDeployKey', tags, summary: 'Remove a deploy key; its key and token stop working at once', description: 'Needs `git.admin`.', params: DeployKeyParams, response: GitResponses.deleted }
  }, async (request) => {
    await deployKeys.delete(repoOf(request), request.params.keyId)
    return { success: true as const, data: { id: request.params.keyId, deleted: true as const } }
  })

  app.get('/protected-branches', {
    config: { auth: 'platform' },
    preHandler: app.requireRepoPermission('git.read'),
    schema: { operationId: 'listGitProtectedBranches', tags, summary: 'Protected-branch rules', description: 'Needs `git.read`.', params: RepoParams, response: GitResponses.protectedBranches }
  }, async (request) => ({ success: true as const, data: await protection.list(repoOf(request)) }))

  app.post('/protected-branches', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'createGitProtectedBranch', tags, summary: 'Protect the branches matching a pattern', description: 'Needs `git.admin`. By default writers may push but not force-push or delete. Enforced inside git on every push (a pre-receive hook) and by the branch routes.', params: RepoParams, body: ProtectedBranchBody, response: GitResponses.protectedBranchCreated }
  }, async (request, reply) => {
    const rule = await protection.create(repoOf(request), request.body)
    return reply.code(201).header('location', createdAt(request, rule.id)).send({ success: true as const, data: rule })
  })

  app.put('/protected-branches/:ruleId', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'updateGitProtectedBranch', tags, summary: 'Change a protected-branch rule', description: 'Needs `git.admin`. Applies from the next push on.', params: ProtectedBranchParams, body: UpdateProtectedBranchBody, response: GitResponses.protectedBranch }
  }, async (request) => ({ success: true as const, data: await protection.update(repoOf(request), request.params.ruleId, request.body) }))

  app.delete('/protected-branches/:ruleId', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'deleteGitProtectedBranch', tags, summary: 'Remove a protected-branch rule', description: 'Needs `git.admin`.', params: ProtectedBranchParams, response: GitResponses.deleted }
  }, async (request) => {
    await protection.delete(repoOf(request), request.params.ruleId)
    return { success: true as const, data: { id: request.params.ruleId, deleted: true as const } }
  })

  app.get('/protected-tags', {
    config: { auth: 'platform' },
    preHandler: app.requireRepoPermission('git.read'),
    schema: { operationId: 'listGitProtectedTags', tags, summary: 'Protected-tag rules', description: 'Needs `git.read`.', params: RepoParams, response: GitResponses.protectedTags }
  }, async (request) => ({ success: true as const, data: await tagProtection.list(repoOf(request)) }))

  app.post('/protected-tags', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'createGitProtectedTag', tags, summary: 'Protect the tags matching a pattern', description: 'Needs `git.admin`. By default only `git.admin` holders create matching tags and nobody moves or deletes them. Enforced inside git on every push (the pre-receive hook) and by the tag routes (403 `APP_GIT_TAG_PROTECTED`).', params: RepoParams, body: ProtectedTagBody, response: GitResponses.protectedTagCreated }
  }, async (request, reply) => {
    const rule = await tagProtection.create(repoOf(request), request.body)
    return reply.code(201).header('location', createdAt(request, rule.id)).send({ success: true as const, data: rule })
  })

  app.put('/protected-tags/:ruleId', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'updateGitProtectedTag', tags, summary: 'Change a protected-tag rule', description: 'Needs `git.admin`. Applies from the next push on.', params: ProtectedBranchParams, body: UpdateProtectedTagBody, response: GitResponses.protectedTag }
  }, async (request) => ({ success: true as const, data: await tagProtection.update(repoOf(request), request.params.ruleId, request.body) }))

  app.delete('/protected-tags/:ruleId', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'deleteGitProtectedTag', tags, summary: 'Remove a protected-tag rule', description: 'Needs `git.admin`.', params: ProtectedBranchParams, response: GitResponses.deleted }
  }, async (request) => {
    await tagProtection.delete(repoOf(request), request.params.ruleId)
    return { success: true as const, data: { id: request.params.ruleId, deleted: true as const } }
  })
}

export default settingRoutes
