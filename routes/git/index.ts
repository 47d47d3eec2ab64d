import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CreateRepoBody, GitProjectParams, GitResponses, RepoParams, UpdateRepoBody } from '../../schemas/git.js'
import { platformCaller } from '../../plugins/auth.js'
import { gitDisabled, repoOfRequest } from '../../plugins/git.js'
import { createdAt } from '../location.js'
import refRoutes from './refs.js'
import contentRoutes from './content.js'
import settingRoutes from './settings.js'
import mergeRequestRoutes from './merge-requests.js'
import reviewRoutes from './reviews.js'
import commentRoutes from './comments.js'
import labelRoutes from './labels.js'
import memberRoutes from './members.js'

/** Repositories of a project: `git.read` to see them, `git.admin` to create, change and delete them. */
const gitRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { repositories } = app.git
  const tags = ['git']
  if (!app.git.enabled) app.addHook('onRequest', async () => { throw gitDisabled() })

  app.get('/repositories', {
    config: { auth: 'platform' },
    schema: { operationId: 'listGitRepositories', tags, summary: 'The project\'s repositories the caller may read', description: 'Needs `git.read` in the project for all of them; a member of some repositories (without it) gets those. Each with its clone URLs.', params: GitProjectParams, response: GitResponses.repositories }
  }, async (request) => {
    const repos = await app.git.access.readableRepositories(platformCaller(request), request.params.projectId)
    return { success: true as const, data: await Promise.all(repos.map(async (repo) => await repositories.view(repo))) }
  })

  app.post('/repositories', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('git.admin'),
    schema: { operationId: 'createGitRepository', tags, summary: 'Create a repository, empty or with a README commit', description: 'Needs `git.admin`. Runs `git init --bare` with the default branch (`main` unless given); `readme: true` adds a first commit holding README.md. The slug is derived from the name when omitted; a slug in use is 409 `APP_GIT_SLUG_TAKEN`. Repositories are private unless `visibility` is `public`.', params: GitProjectParams, body: CreateRepoBody, response: GitResponses.repositoryCreated }
  }, async (request, reply) => {
    const repo = await repositories.create(request.params.projectId, await app.git.signature(platformCaller(request).userId), request.body)
    return reply.code(201).header('location', createdAt(request, repo.slug)).send({ success: true as const, data: await repositories.view(repo) })
  })

  app.get('/repositories/:repoSlug', {
    config: { auth: 'platform' },
    preHandler: app.requireRepoPermission('git.read'),
    schema: { operationId: 'getGitRepository', tags, summary: 'One repository with its clone URLs', description: 'Needs `git.read`.', params: RepoParams, response: GitResponses.repository }
  }, async (request) => {
    const { repo } = repoOfRequest(request)
    return { success: true as const, data: await repositories.view(repo) }
  })

  app.put('/repositories/:repoSlug', {
    config: { auth: 'platform' },
    preHandler: app.requireRepoPermission('git.admin'),
    schema: { operationId: 'updateGitRepository', tags, summary: 'Rename a repository or change its description, default branch or visibility', description: 'Needs `git.admin`. A new slug changes the clone URLs (409 `APP_GIT_SLUG_TAKEN` if in use); the default branch must exist unless the repository is empty.', params: RepoParams, body: UpdateRepoBody, response: GitResponses.repository }
  }, async (request) => {
    const { repo } = repoOfRequest(request)
    return { success: true as const, data: await repositories.view(await repositories.update(repo, request.body)) }
  })

  app.delete('/repositories/:repoSlug', {
    config: { auth: 'platform' },
    preHandler: app.requireRepoPermission('git.admin'),
    schema: { operationId: 'deleteGitRepository', tags, summary: 'Delete a repository with its history, deploy keys and rules', description: 'Needs `git.admin`. Removes the bare repository from disk; this cannot be undone.', params: RepoParams, response: GitResponses.deleted }
  }, async (request) => {
    const { repo } = repoOfRequest(request)
    await repositories.delete(repo)
    return { success: true as const, data: { id: repo._id, deleted: true as const } }
  })

  await app.register(refRoutes, { prefix: '/repositories/:repoSlug' })
  await app.register(contentRoutes, { prefix: '/repositories/:repoSlug' })
  await app.register(settingRoutes, { prefix: '/repositories/:repoSlug' })
  for (const routes of [labelRoutes, memberRoutes, mergeRequestRoutes, reviewRoutes, commentRoutes]) await app.register(routes, { prefix: '/repositories/:repoSlug' })
}

export default gitRoutes
