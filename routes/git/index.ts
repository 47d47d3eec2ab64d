import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CreateRepoBody, GitProjectParams, GitResponses, RepoParams, UpdateRepoBody } from '../../schemas/git.js'
import { commonErrors } from '../../services/platform/errors.js'
import { gitErrors } from '../../services/git/errors.js'
import { created, deleted, ok } from '../replies.js'
import refRoutes from './refs.js'
import contentRoutes from './content.js'
import settingRoutes from './settings.js'
import mergeRequestRoutes from './merge-requests.js'
import reviewRoutes from './reviews.js'
import commentRoutes from './comments.js'
import labelRoutes from './labels.js'
import memberRoutes from './members.js'

/** What naming a repository may meet. */
const SLUG = [gitErrors.invalidSlug, gitErrors.slugTaken]

/**
 * `/api/projects/:projectId/git/…`: repositories of a project and what is in
 * them. Every route acts as a platform user; under `/repositories/:repoSlug`
 * the repository is the parent, reached from the project or as a member of it.
 */
const gitRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { repositories, access } = app.git
  const tags = ['git']
  app.routeDefaults({ auth: 'platform' })
  if (!app.git.enabled) app.addHook('onRequest', async () => { throw gitErrors.hostingDisabled() })

  app.get('/repositories', {
    config: { errors: [commonErrors.projectNotFound, commonErrors.forbidden] },
    schema: {
      operationId: 'listGitRepositories',
      tags,
      summary: 'The project\'s repositories the caller may read',
      description: 'All of them with `git.read` in the project; a member of some repositories (without it) gets those. ' +
        'Each with its clone URLs.',
      params: GitProjectParams,
      response: GitResponses.repositories
    }
  }, async (request) => {
    const repos = await access.readableRepositories(request.caller.user, request.params.projectId)
    return ok(await Promise.all(repos.map(async (repo) => await repositories.view(repo))))
  })

  app.post('/repositories', {
    config: { parent: 'project', permission: 'git.admin', errors: [...SLUG, gitErrors.invalidRefName, gitErrors.failed] },
    schema: {
      operationId: 'createGitRepository',
      tags,
      summary: 'Create a repository, empty or with a README commit',
      description: 'Runs `git init --bare` with the default branch (`main` unless given); ' +
        '`readme: true` adds a first commit holding README.md. ' +
        'The slug is derived from the name when omitted. Repositories are private unless `visibility` is `public`.',
      params: GitProjectParams,
      body: CreateRepoBody,
      response: GitResponses.repositoryCreated
    }
  }, async (request, reply) => {
    const repo = await repositories.create(request.scope.project.id, await app.git.signature(request.caller.user.userId), request.body)
    return created(reply, await repositories.view(repo), { id: repo.slug })
  })

  const repositoryRoutes: FastifyPluginAsyncTypebox = async (repoScope) => {
    repoScope.routeDefaults({ parent: 'repository' })

    repoScope.get('', {
      config: { permission: 'git.read' },
      schema: {
        operationId: 'getGitRepository',
        tags,
        summary: 'One repository with its clone URLs',
        params: RepoParams,
        response: GitResponses.repository
      }
    }, async (request) => ok(await repositories.view(request.scope.repository)))

    repoScope.put('', {
      config: { permission: 'git.admin', errors: [...SLUG, gitErrors.branchUnknown] },
      schema: {
        operationId: 'updateGitRepository',
        tags,
        summary: 'Rename a repository or change its description, default branch or visibility',
        description: 'A new slug changes the clone URLs; the default branch must exist unless the repository is empty.',
        params: RepoParams,
        body: UpdateRepoBody,
        response: GitResponses.repository
      }
    }, async (request) => ok(await repositories.view(await repositories.update(request.scope.repository, request.body))))

    repoScope.delete('', {
      config: { permission: 'git.admin' },
      schema: {
        operationId: 'deleteGitRepository',
        tags,
        summary: 'Delete a repository with its history, deploy keys and rules',
        description: 'Removes the bare repository from disk; this cannot be undone.',
        params: RepoParams,
        response: GitResponses.deleted
      }
    }, async (request) => {
      await repositories.delete(request.scope.repository)
      return deleted(request.scope.repository._id)
    })

    const parts = [refRoutes, contentRoutes, settingRoutes, labelRoutes, memberRoutes, mergeRequestRoutes, reviewRoutes, commentRoutes]
    for (const routes of parts) await repoScope.register(routes)
  }
  await app.register(repositoryRoutes, { prefix: '/repositories/:repoSlug' })
}

export default gitRoutes
