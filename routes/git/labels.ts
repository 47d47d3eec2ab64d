import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CreateLabelBody, GitResponses, LabelParams, RepoParams, UpdateLabelBody } from '../../schemas/git.js'
import { gitErrors } from '../../services/git/errors.js'
import { created, deleted, ok } from '../replies.js'

/** What naming a label may meet. */
const LABEL_NAMING = [gitErrors.labelNameRequired, gitErrors.labelExists]

/** A repository's labels: `git.read` to see them, `git.write` to create, change and delete them. */
const labelRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { labels } = app.git
  const tags = ['git']
  app.routeDefaults({ permission: 'git.write' })

  app.get('/labels', {
    config: { permission: 'git.read' },
    schema: {
      operationId: 'listGitLabels',
      tags,
      summary: 'The repository\'s labels, by name',
      params: RepoParams,
      response: GitResponses.labels
    }
  }, async (request) => ok(await labels.list(request.scope.repository)))

  app.post('/labels', {
    config: { errors: [...LABEL_NAMING, gitErrors.tooManyLabels] },
    schema: {
      operationId: 'createGitLabel',
      tags,
      summary: 'Create a label',
      description: 'Names are unique in the repository with letter case aside; the color is `#rrggbb`.',
      params: RepoParams,
      body: CreateLabelBody,
      response: GitResponses.labelCreated
    }
  }, async (request, reply) => created(reply, await labels.create(request.scope.repository, request.body)))

  app.patch('/labels/:labelId', {
    config: { errors: [...LABEL_NAMING, gitErrors.labelNotFound] },
    schema: {
      operationId: 'updateGitLabel',
      tags,
      summary: 'Rename a label or change its color or description',
      description: 'A rename shows on every merge request carrying the label at once.',
      params: LabelParams,
      body: UpdateLabelBody,
      response: GitResponses.label
    }
  }, async (request) => ok(await labels.update(request.scope.repository, request.params.labelId, request.body)))

  app.delete('/labels/:labelId', {
    config: { errors: [gitErrors.labelNotFound] },
    schema: {
      operationId: 'deleteGitLabel',
      tags,
      summary: 'Delete a label; merge requests lose it',
      params: LabelParams,
      response: GitResponses.deleted
    }
  }, async (request) => {
    await labels.delete(request.scope.repository, request.params.labelId)
    return deleted(request.params.labelId)
  })
}

export default labelRoutes
