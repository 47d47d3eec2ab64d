import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { CreateBranchBody, CreateTagBody, GitResponses, RefNameQuery, RepoParams } from '../../schemas/git.js'
import { platformCaller } from '../../plugins/auth.js'
import { repoOfRequest } from '../../plugins/git.js'
import type { WriteLevel } from '../../services/git/protection.js'

/** Branches and tags. Deletes name the ref in `?name=`, so names with slashes need no escaping in the path. */
const refRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { refs } = app.git
  const tags = ['git']
  const repoOf = (request: FastifyRequest) => repoOfRequest(request).repo
  const level = (request: FastifyRequest): WriteLevel => repoOfRequest(request).permissions.has('git.admin') ? 'admin' : 'write'

  app.get('/branches', {
    config: { auth: 'platform' },
    preHandler: app.requireRepoPermission('git.read'),
    schema: { operationId: 'listGitBranches', tags, summary: 'Branches with the commit each points at', description: 'Needs `git.read`. Marks the default branch and the branches a protected-branch rule matches.', params: RepoParams, response: GitResponses.branches }
  }, async (request) => ({ success: true as const, data: await refs.branches(repoOf(request)) }))

  app.post('/branches', {
    config: { auth: 'platform' },
    preHandler: app.requireRepoPermission('git.write'),
    schema: { operationId: 'createGitBranch', tags, summary: 'Create a branch from a branch, tag or commit', description: 'Needs `git.write`. `from` defaults to the default branch. Names follow `git check-ref-format` (400 `APP_GIT_INVALID_REF_NAME`); an existing branch is 409 `APP_GIT_REF_CONFLICT`; a protected branch the caller may not push to is 403 `APP_GIT_BRANCH_PROTECTED`.', params: RepoParams, body: CreateBranchBody, response: GitResponses.branchCreated }
  }, async (request, reply) => {
    const branch = await refs.createBranch(repoOf(request), level(request), request.body)
    return reply.code(201).send({ success: true as const, data: branch })
  })

  app.delete('/branches', {
    config: { auth: 'platform' },
    preHandler: app.requireRepoPermission('git.write'),
    schema: { operationId: 'deleteGitBranch', tags, summary: 'Delete a branch named in ?name=', description: 'Needs `git.write`. The default branch cannot be deleted (400 `APP_GIT_DEFAULT_BRANCH`), nor a protected branch whose rule forbids it (403 `APP_GIT_BRANCH_PROTECTED`).', params: RepoParams, querystring: RefNameQuery, response: GitResponses.refDeleted }
  }, async (request) => {
    await refs.deleteBranch(repoOf(request), level(request), request.query.name)
    return { success: true as const, data: { name: request.query.name, deleted: true as const } }
  })

  app.get('/tags', {
    config: { auth: 'platform' },
    preHandler: app.requireRepoPermission('git.read'),
    schema: { operationId: 'listGitTags', tags, summary: 'Tags, lightweight and annotated', description: 'Needs `git.read`. Each with the commit it points at; annotated tags with their message and tagger.', params: RepoParams, response: GitResponses.tags }
  }, async (request) => ({ success: true as const, data: await refs.tags(repoOf(request)) }))

  app.post('/tags', {
    config: { auth: 'platform' },
    preHandler: app.requireRepoPermission('git.write'),
    schema: { operationId: 'createGitTag', tags, summary: 'Create a tag; annotated when a message is given', description: 'Needs `git.write`. `target` defaults to the default branch; with `message` the tag is annotated, with the caller as tagger. An existing tag is 409 `APP_GIT_REF_CONFLICT`.', params: RepoParams, body: CreateTagBody, response: GitResponses.tagCreated }
  }, async (request, reply) => {
    const tag = await refs.createTag(repoOf(request), level(request), await app.git.signature(platformCaller(request).userId), request.body)
    return reply.code(201).send({ success: true as const, data: tag })
  })

  app.delete('/tags', {
    config: { auth: 'platform' },
    preHandler: app.requireRepoPermission('git.write'),
    schema: { operationId: 'deleteGitTag', tags, summary: 'Delete a tag named in ?name=', description: 'Needs `git.write`.', params: RepoParams, querystring: RefNameQuery, response: GitResponses.refDeleted }
  }, async (request) => {
    await refs.deleteTag(repoOf(request), level(request), request.query.name)
    return { success: true as const, data: { name: request.query.name, deleted: true as const } }
  })
}

export default refRoutes
