import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  CreateDeployKeyBody, DeployKeyParams, GitResponses, ProtectedBranchBody, ProtectedBranchParams, RepoParams, UpdateProtectedBranchBody
} from '../../schemas/git.js'
import { platformCaller } from '../../plugins/auth.js'
import { createdAt } from '../location.js'

/** A repository's deploy keys and protected-branch rules: `git.admin`. */
const settingRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { repositories, deployKeys, protection } = app.git
  const tags = ['git']
  const repoOf = async (params: { projectId: string, repoSlug: string }) => await repositories.get(params.projectId, params.repoSlug)
  const preHandler = app.requireProjectPermission('git.admin')

  app.get('/deploy-keys', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'listGitDeployKeys', tags, summary: 'The repository\'s deploy keys (never their tokens)', description: 'Needs `git.admin`.', params: RepoParams, response: GitResponses.deployKeys }
  }, async (request) => ({ success: true as const, data: await deployKeys.list(await repoOf(request.params)) }))

  app.post('/deploy-keys', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'createGitDeployKey', tags, summary: 'Add a deploy key: an SSH public key and an HTTP token shown once', description: 'Needs `git.admin`. Read-only unless `readOnly: false`. The key is validated as for user SSH keys (400 `APP_INVALID_SSH_KEY`) and may be a deploy key of one repository only (409 `APP_GIT_DEPLOY_KEY_EXISTS`). The token in this answer is the password for git over HTTP.', params: RepoParams, body: CreateDeployKeyBody, response: GitResponses.deployKeyCreated }
  }, async (request, reply) => {
    const key = await deployKeys.create(await repoOf(request.params), platformCaller(request).userId, request.body)
    return reply.code(201).header('location', createdAt(request, key.id)).send({ success: true as const, data: key })
  })

  app.delete('/deploy-keys/:keyId', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'deleteGitDeployKey', tags, summary: 'Remove a deploy key; its key and token stop working at once', description: 'Needs `git.admin`.', params: DeployKeyParams, response: GitResponses.deleted }
  }, async (request) => {
    await deployKeys.delete(await repoOf(request.params), request.params.keyId)
    return { success: true as const, data: { id: request.params.keyId, deleted: true as const } }
  })

  app.get('/protected-branches', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('git.read'),
    schema: { operationId: 'listGitProtectedBranches', tags, summary: 'Protected-branch rules', description: 'Needs `git.read`.', params: RepoParams, response: GitResponses.protectedBranches }
  }, async (request) => ({ success: true as const, data: await protection.list(await repoOf(request.params)) }))

  app.post('/protected-branches', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'createGitProtectedBranch', tags, summary: 'Protect the branches matching a pattern', description: 'Needs `git.admin`. By default writers may push but not force-push or delete. Enforced inside git on every push (a pre-receive hook) and by the branch routes.', params: RepoParams, body: ProtectedBranchBody, response: GitResponses.protectedBranchCreated }
  }, async (request, reply) => {
    const rule = await protection.create(await repoOf(request.params), request.body)
    return reply.code(201).header('location', createdAt(request, rule.id)).send({ success: true as const, data: rule })
  })

  app.put('/protected-branches/:ruleId', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'updateGitProtectedBranch', tags, summary: 'Change a protected-branch rule', description: 'Needs `git.admin`. Applies from the next push on.', params: ProtectedBranchParams, body: UpdateProtectedBranchBody, response: GitResponses.protectedBranch }
  }, async (request) => ({ success: true as const, data: await protection.update(await repoOf(request.params), request.params.ruleId, request.body) }))

  app.delete('/protected-branches/:ruleId', {
    config: { auth: 'platform' },
    preHandler,
    schema: { operationId: 'deleteGitProtectedBranch', tags, summary: 'Remove a protected-branch rule', description: 'Needs `git.admin`.', params: ProtectedBranchParams, response: GitResponses.deleted }
  }, async (request) => {
    await protection.delete(await repoOf(request.params), request.params.ruleId)
    return { success: true as const, data: { id: request.params.ruleId, deleted: true as const } }
  })
}

export default settingRoutes
