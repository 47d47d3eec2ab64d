import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  CreateDeployKeyBody, DeployKeyParams, GitResponses, ProtectedBranchBody, ProtectedBranchParams, ProtectedTagBody, RepoParams,
  UpdateProtectedBranchBody, UpdateProtectedTagBody
} from '../../schemas/git.js'
import { gitErrors } from '../../services/git/errors.js'
import { created, deleted, ok } from '../replies.js'

/** What writing a pattern rule may meet. */
const BRANCH_RULE_WRITES = [gitErrors.invalidBranchPattern, gitErrors.ruleExists]
const TAG_RULE_WRITES = [gitErrors.invalidTagPattern, gitErrors.ruleExists]

/** A repository's deploy keys and protected-branch and protected-tag rules: `git.admin` to change them. */
const settingRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { deployKeys, protection, tagProtection } = app.git
  const tags = ['git']
  app.routeDefaults({ permission: 'git.admin' })

  app.get('/deploy-keys', {
    schema: {
      operationId: 'listGitDeployKeys',
      tags,
      summary: 'The repository\'s deploy keys (never their tokens)',
      params: RepoParams,
      response: GitResponses.deployKeys
    }
  }, async (request) => ok(await deployKeys.list(request.scope.repository)))

  app.post('/deploy-keys', {
    config: { errors: [gitErrors.deployKeyExists, gitErrors.tooManyDeployKeys] },
    schema: {
      operationId: 'createGitDeployKey',
      tags,
      summary: 'Add a deploy key: an SSH public key and an HTTP token shown once',
      description: 'Read-only unless `readOnly: false`. ' +
        'The key is validated as for user SSH keys and may be a deploy key of one repository only. ' +
        'The token in this answer is the password for git over HTTP.',
      params: RepoParams,
      body: CreateDeployKeyBody,
      response: GitResponses.deployKeyCreated
    }
  }, async (request, reply) => created(reply, await deployKeys.create(request.scope.repository, request.caller.user.userId, request.body)))

  app.delete('/deploy-keys/:keyId', {
    config: { errors: [gitErrors.deployKeyNotFound] },
    schema: {
      operationId: 'deleteGitDeployKey',
      tags,
      summary: 'Remove a deploy key; its key and token stop working at once',
      params: DeployKeyParams,
      response: GitResponses.deleted
    }
  }, async (request) => {
    await deployKeys.delete(request.scope.repository, request.params.keyId)
    return deleted(request.params.keyId)
  })

  app.get('/protected-branches', {
    config: { permission: 'git.read' },
    schema: {
      operationId: 'listGitProtectedBranches',
      tags,
      summary: 'Protected-branch rules',
      params: RepoParams,
      response: GitResponses.protectedBranches
    }
  }, async (request) => ok(await protection.list(request.scope.repository)))

  app.post('/protected-branches', {
    config: { errors: [...BRANCH_RULE_WRITES, gitErrors.tooManyRules] },
    schema: {
      operationId: 'createGitProtectedBranch',
      tags,
      summary: 'Protect the branches matching a pattern',
      description: 'By default writers may push but not force-push or delete. ' +
        'Enforced inside git on every push (a pre-receive hook) and by the branch routes.',
      params: RepoParams,
      body: ProtectedBranchBody,
      response: GitResponses.protectedBranchCreated
    }
  }, async (request, reply) => created(reply, await protection.create(request.scope.repository, request.body)))

  app.put('/protected-branches/:ruleId', {
    config: { errors: [...BRANCH_RULE_WRITES, gitErrors.ruleNotFound] },
    schema: {
      operationId: 'updateGitProtectedBranch',
      tags,
      summary: 'Change a protected-branch rule',
      description: 'Applies from the next push on.',
      params: ProtectedBranchParams,
      body: UpdateProtectedBranchBody,
      response: GitResponses.protectedBranch
    }
  }, async (request) => ok(await protection.update(request.scope.repository, request.params.ruleId, request.body)))

  app.delete('/protected-branches/:ruleId', {
    config: { errors: [gitErrors.ruleNotFound] },
    schema: {
      operationId: 'deleteGitProtectedBranch',
      tags,
      summary: 'Remove a protected-branch rule',
      params: ProtectedBranchParams,
      response: GitResponses.deleted
    }
  }, async (request) => {
    await protection.delete(request.scope.repository, request.params.ruleId)
    return deleted(request.params.ruleId)
  })

  app.get('/protected-tags', {
    config: { permission: 'git.read' },
    schema: {
      operationId: 'listGitProtectedTags',
      tags,
      summary: 'Protected-tag rules',
      params: RepoParams,
      response: GitResponses.protectedTags
    }
  }, async (request) => ok(await tagProtection.list(request.scope.repository)))

  app.post('/protected-tags', {
    config: { errors: [...TAG_RULE_WRITES, gitErrors.tooManyRules] },
    schema: {
      operationId: 'createGitProtectedTag',
      tags,
      summary: 'Protect the tags matching a pattern',
      description: 'By default only `git.admin` holders create matching tags and nobody moves or deletes them. ' +
        'Enforced inside git on every push (the pre-receive hook) and by the tag routes.',
      params: RepoParams,
      body: ProtectedTagBody,
      response: GitResponses.protectedTagCreated
    }
  }, async (request, reply) => created(reply, await tagProtection.create(request.scope.repository, request.body)))

  app.put('/protected-tags/:ruleId', {
    config: { errors: [...TAG_RULE_WRITES, gitErrors.ruleNotFound] },
    schema: {
      operationId: 'updateGitProtectedTag',
      tags,
      summary: 'Change a protected-tag rule',
      description: 'Applies from the next push on.',
      params: ProtectedBranchParams,
      body: UpdateProtectedTagBody,
      response: GitResponses.protectedTag
    }
  }, async (request) => ok(await tagProtection.update(request.scope.repository, request.params.ruleId, request.body)))

  app.delete('/protected-tags/:ruleId', {
    config: { errors: [gitErrors.ruleNotFound] },
    schema: {
      operationId: 'deleteGitProtectedTag',
      tags,
      summary: 'Remove a protected-tag rule',
      params: ProtectedBranchParams,
      response: GitResponses.deleted
    }
  }, async (request) => {
    await tagProtection.delete(request.scope.repository, request.params.ruleId)
    return deleted(request.params.ruleId)
  })
}

export default settingRoutes
