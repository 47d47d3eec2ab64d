import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { Static, TSchema } from '@sinclair/typebox'
import {
  CreateDeployKeyBody, DeployKeyParams, GitResponses, ProtectedBranchBody, ProtectedBranchParams, ProtectedTagBody, RepoParams,
  UpdateProtectedBranchBody, UpdateProtectedTagBody
} from '../../schemas/git.js'
import type { DeclaredError } from '../../services/platform/errors.js'
import { gitErrors } from '../../services/git/errors.js'
import type { Repo } from '../../services/git/repositories.js'
import { created, deleted, ok } from '../replies.js'

type App = Parameters<FastifyPluginAsyncTypebox>[0]

/** The service behind one kind of pattern rule (services/git/pattern-rules.ts). */
interface RuleService<Body extends TSchema, Update extends TSchema> {
  list: (repo: Repo) => Promise<unknown>
  create: (repo: Repo, input: Static<Body>) => Promise<{ id: string }>
  update: (repo: Repo, ruleId: string, input: Static<Update>) => Promise<unknown>
  delete: (repo: Repo, ruleId: string) => Promise<void>
}

/** One kind of pattern rule as the contract names it: protected branches, protected tags. */
interface RuleKind<Body extends TSchema, Update extends TSchema> {
  rules: RuleService<Body, Update>
  /** The path segment, `protected-branches`. */
  path: string
  /** Names the operations: `ProtectedBranch` gives `createGitProtectedBranch`; the plural names the list. */
  operation: { one: string, many: string }
  /** As in "Change a protected-branch rule". */
  noun: string
  /** As in "Protect the branches matching a pattern". */
  refs: string
  createDescription: string
  patternError: DeclaredError
  body: Body
  updateBody: Update
  responses: { list: { 200: TSchema }, created: { 201: TSchema }, one: { 200: TSchema } }
}

/**
 * The four routes of one kind of pattern rule: anyone with `git.read` lists
 * them, `git.admin` (the folder's default) writes them.
 */
function ruleRoutes<Body extends TSchema, Update extends TSchema> (app: App, kind: RuleKind<Body, Update>): void {
  const { rules, noun } = kind
  const tags = ['git']
  const writes = [kind.patternError, gitErrors.ruleExists]
  const Noun = noun[0].toUpperCase() + noun.slice(1)

  app.get(`/${kind.path}`, {
    config: { permission: 'git.read' },
    schema: {
      operationId: `listGit${kind.operation.many}`,
      tags,
      summary: `${Noun} rules`,
      params: RepoParams,
      response: kind.responses.list
    }
  }, async (request) => ok(await rules.list(request.scope.repository)))

  app.post(`/${kind.path}`, {
    config: { errors: [...writes, gitErrors.tooManyRules] },
    schema: {
      operationId: `createGit${kind.operation.one}`,
      tags,
      summary: `Protect the ${kind.refs} matching a pattern`,
      description: kind.createDescription,
      params: RepoParams,
      body: kind.body,
      response: kind.responses.created
    }
  }, async (request, reply) => created(reply, await rules.create(request.scope.repository, request.body as Static<Body>)))

  app.put(`/${kind.path}/:ruleId`, {
    config: { errors: [...writes, gitErrors.ruleNotFound] },
    schema: {
      operationId: `updateGit${kind.operation.one}`,
      tags,
      summary: `Change a ${noun} rule`,
      description: 'Applies from the next push on.',
      params: ProtectedBranchParams,
      body: kind.updateBody,
      response: kind.responses.one
    }
  }, async (request) => ok(await rules.update(request.scope.repository, request.params.ruleId, request.body as Static<Update>)))

  app.delete(`/${kind.path}/:ruleId`, {
    config: { errors: [gitErrors.ruleNotFound] },
    schema: {
      operationId: `deleteGit${kind.operation.one}`,
      tags,
      summary: `Remove a ${noun} rule`,
      params: ProtectedBranchParams,
      response: GitResponses.deleted
    }
  }, async (request) => {
    await rules.delete(request.scope.repository, request.params.ruleId)
    return deleted(request.params.ruleId)
  })
}

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

  ruleRoutes(app, {
    rules: protection,
    path: 'protected-branches',
    operation: { one: 'ProtectedBranch', many: 'ProtectedBranches' },
    noun: 'protected-branch',
    refs: 'branches',
    createDescription: 'By default writers may push but not force-push or delete. ' +
      'Enforced inside git on every push (a pre-receive hook) and by the branch routes.',
    patternError: gitErrors.invalidBranchPattern,
    body: ProtectedBranchBody,
    updateBody: UpdateProtectedBranchBody,
    responses: { list: GitResponses.protectedBranches, created: GitResponses.protectedBranchCreated, one: GitResponses.protectedBranch }
  })

  ruleRoutes(app, {
    rules: tagProtection,
    path: 'protected-tags',
    operation: { one: 'ProtectedTag', many: 'ProtectedTags' },
    noun: 'protected-tag',
    refs: 'tags',
    createDescription: 'By default only `git.admin` holders create matching tags and nobody moves or deletes them. ' +
      'Enforced inside git on every push (the pre-receive hook) and by the tag routes.',
    patternError: gitErrors.invalidTagPattern,
    body: ProtectedTagBody,
    updateBody: UpdateProtectedTagBody,
    responses: { list: GitResponses.protectedTags, created: GitResponses.protectedTagCreated, one: GitResponses.protectedTag }
  })
}

export default settingRoutes
