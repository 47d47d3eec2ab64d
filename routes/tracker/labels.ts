import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CreateLabelBody, ListQuery, UpdateLabelBody } from '../../schemas/tracker.js'
import { LabelParams, TrackerProjectPath, TrackerResponses } from '../../schemas/tracker-routes.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { created, deleted, ok } from '../replies.js'
import { LIST, SETTING_WRITES, WRITE } from './refusals.js'

/** `…/projects/:lpId/labels`: labels, nested one level. */
const labelRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { labels } = app.tracker
  const tags = ['tracker']

  app.get('', {
    config: { permission: 'tracker.read', errors: LIST },
    schema: {
      operationId: 'listTrackerLabels',
      tags,
      summary: 'The project\'s labels',
      params: TrackerProjectPath,
      querystring: ListQuery,
      response: TrackerResponses.labelList
    }
  }, async (request) => ok(await labels.list(request.scope.trackerProject, request.query)))

  app.post('', {
    config: { permission: 'tracker.admin', errors: [...SETTING_WRITES, e.labelDepth] },
    schema: {
      operationId: 'createTrackerLabel',
      tags,
      summary: 'Add a label, optionally under a top-level one',
      description: 'Names are unique in the project, letter case aside.',
      params: TrackerProjectPath,
      body: CreateLabelBody,
      response: TrackerResponses.labelCreated
    }
  }, async (request, reply) => created(reply, await labels.create(request.scope.trackerProject, request.body)))

  app.get('/:labelId', {
    config: { permission: 'tracker.read', errors: [e.labelNotFound] },
    schema: { operationId: 'getTrackerLabel', tags, summary: 'One label', params: LabelParams, response: TrackerResponses.label }
  }, async (request) => ok(await labels.get(request.scope.trackerProject, request.params.labelId)))

  app.patch('/:labelId', {
    config: { permission: 'tracker.admin', errors: [...SETTING_WRITES, e.labelDepth, e.labelNotFound] },
    schema: {
      operationId: 'updateTrackerLabel',
      tags,
      summary: 'Change a label, or move it under another',
      params: LabelParams,
      body: UpdateLabelBody,
      response: TrackerResponses.label
    }
  }, async (request) => ok(await labels.update(request.scope.trackerProject, request.params.labelId, request.body)))

  app.delete('/:labelId', {
    config: { permission: 'tracker.admin', errors: [e.labelNotFound, ...WRITE] },
    schema: {
      operationId: 'deleteTrackerLabel',
      tags,
      summary: 'Delete a label (and its children); items let go of them',
      description: 'Each item that held them loses them with an activity entry; finished by a job if the server stops half-way.',
      params: LabelParams,
      response: TrackerResponses.deleted
    }
  }, async (request) => {
    await labels.delete(request.scope.trackerProject, request.params.labelId)
    return deleted(request.params.labelId)
  })
}

export default labelRoutes
