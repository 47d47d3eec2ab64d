import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CreateLabelBody, GitResponses, LabelParams, RepoParams, UpdateLabelBody } from '../../schemas/git.js'
import { repoOfRequest } from '../../plugins/git.js'
import { createdAt } from '../location.js'

/** A repository's labels: `git.read` to see them, `git.write` to create, change and delete them. */
const labelRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { labels } = app.git
  const tags = ['git']
  const write = app.requireRepoPermission('git.write')

  app.get('/labels', {
    config: { auth: 'platform' },
    preHandler: app.requireRepoPermission('git.read'),
    schema: { operationId: 'listGitLabels', tags, summary: 'The repository\'s labels, by name', description: 'Needs `git.read`.', params: RepoParams, response: GitResponses.labels }
  }, async (request) => ({ success: true as const, data: await labels.list(repoOfRequest(request).repo) }))

  app.post('/labels', {
    config: { auth: 'platform' },
    preHandler: write,
    schema: { operationId: 'createGitLabel', tags, summary: 'Create a label', description: 'Needs `git.write`. Names are unique in the repository with letter case aside (409 `APP_GIT_LABEL_EXISTS`); the color is `#rrggbb`.', params: RepoParams, body: CreateLabelBody, response: GitResponses.labelCreated }
  }, async (request, reply) => {
    const label = await labels.create(repoOfRequest(request).repo, request.body)
    return reply.code(201).header('location', createdAt(request, label.id)).send({ success: true as const, data: label })
  })

  app.patch('/labels/:labelId', {
    config: { auth: 'platform' },
    preHandler: write,
    schema: { operationId: 'updateGitLabel', tags, summary: 'Rename a label or change its color or description', description: 'Needs `git.write`. A rename shows on every merge request carrying the label at once.', params: LabelParams, body: UpdateLabelBody, response: GitResponses.label }
  }, async (request) => ({ success: true as const, data: await labels.update(repoOfRequest(request).repo, request.params.labelId, request.body) }))

  app.delete('/labels/:labelId', {
    config: { auth: 'platform' },
    preHandler: write,
    schema: { operationId: 'deleteGitLabel', tags, summary: 'Delete a label; merge requests lose it', description: 'Needs `git.write`.', params: LabelParams, response: GitResponses.deleted }
  }, async (request) => {
    await labels.delete(repoOfRequest(request).repo, request.params.labelId)
    return { success: true as const, data: { id: request.params.labelId, deleted: true as const } }
  })
}

export default labelRoutes
