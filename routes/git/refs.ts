import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { CreateBranchBody, CreateTagBody, GitResponses, RefNameQuery, RepoParams } from '../../schemas/git.js'
import { platformCaller } from '../../plugins/auth.js'
import { orgAccess } from '../../plugins/permissions.js'
import type { WriteLevel } from '../../services/git/protection.js'

/** Branches and tags. Deletes name the ref in `?name=`, so names with slashes need no escaping in the path. */
const refRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { repositories, refs } = app.git
  const tags = ['git']
  const repoOf = async (params: { projectId: string, repoSlug: string }) => await repositories.get(params.projectId, params.repoSlug)
  const level = (request: FastifyRequest): WriteLevel => orgAccess(request).permissions.has('git.admin') ? 'admin' : 'write'

  app.get('/branches', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('git.read'),
    schema: { operationId: 'listGitBranches', tags, summary: 'Branches with the commit each points at', description: 'Needs `git.read`. Marks the default branch and the branches a protected-branch rule matches.', params: RepoParams, response: GitResponses.branches }
  }, async (request) => ({ success: true as const, data: await refs.branches(await repoOf(request.params)) }))

  app.post('/branches', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('git.write'),
    schema: { operationId: 'createGitBranch', tags, summary: 'Create a branch from a branch, tag or commit', description: 'Needs `git.write`. `from` defaults to the default branch. Names follow `git check-ref-format` (400 `APP_GIT_INVALID_REF_NAME`); an existing branch is 409 `APP_GIT_REF_CONFLICT`; a protected branch the caller may not push to is 403 `APP_GIT_BRANCH_PROTECTED`.', params: RepoParams, body: CreateBranchBody, response: GitResponses.branchCreated }
  }, async (request, reply) => {
    const branch = await refs.createBranch(await repoOf(request.params), level(request), request.body)
    return reply.code(201).send({ success: true as const, data: branch })
  })

  app.delete('/branches', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('git.write'),
    schema: { operationId: 'deleteGitBranch', tags, summary: 'Delete a branch named in ?name=', description: 'Needs `git.write`. The default branch cannot be deleted (400 `APP_GIT_DEFAULT_BRANCH`), nor a protected branch whose rule forbids it (403 `APP_GIT_BRANCH_PROTECTED`).', params: RepoParams, querystring: RefNameQuery, response: GitResponses.refDeleted }
  }, async (request) => {
    await refs.deleteBranch(await repoOf(request.params), level(request), request.query.name)
    return { success: true as const, data: { name: request.query.name, deleted: true as const } }
  })

  app.get('/tags', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('git.read'),
    schema: { operationId: 'listGitTags', tags, summary: 'Tags, lightweight and annotated', description: 'Needs `git.read`. Each with the commit it points at; annotated tags with their message and tagger.', params: RepoParams, response: GitResponses.tags }
  }, async (request) => ({ success: true as const, data: await refs.tags(await repoOf(request.params)) }))

  app.post('/tags', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('git.write'),
    schema: { operationId: 'createGitTag', tags, summary: 'Create a tag; annotated when a message is given', description: 'Needs `git.write`. `target` defaults to the default branch; with `message` the tag is annotated, with the caller as tagger. An existing tag is 409 `APP_GIT_REF_CONFLICT`.', params: RepoParams, body: CreateTagBody, response: GitResponses.tagCreated }
  }, async (request, reply) => {
    const tag = await refs.createTag(await repoOf(request.params), await app.git.signature(platformCaller(request).userId), request.body)
    return reply.code(201).send({ success: true as const, data: tag })
  })

  app.delete('/tags', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('git.write'),
    schema: { operationId: 'deleteGitTag', tags, summary: 'Delete a tag named in ?name=', description: 'Needs `git.write`.', params: RepoParams, querystring: RefNameQuery, response: GitResponses.refDeleted }
  }, async (request) => {
    await refs.deleteTag(await repoOf(request.params), request.query.name)
    return { success: true as const, data: { name: request.query.name, deleted: true as const } }
  })
}

export default refRoutes
