import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CreateEstimateBody, ListQuery, UpdateEstimateBody } from '../../schemas/tracker.js'
import { EstimateParams, TrackerProjectPath, TrackerResponses } from '../../schemas/tracker-routes.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { created, deleted, ok } from '../replies.js'
import { LIST, SETTING_WRITES, WRITE } from './refusals.js'

/** `…/projects/:lpId/estimates`: estimate systems (points, categories, time); the project uses one (`estimateId`). */
const estimateRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { estimates } = app.tracker
  const tags = ['tracker']

  app.get('', {
    config: { permission: 'tracker.read', errors: LIST },
    schema: {
      operationId: 'listTrackerEstimates',
      tags,
      summary: 'The project\'s estimate systems',
      params: TrackerProjectPath,
      querystring: ListQuery,
      response: TrackerResponses.estimateList
    }
  }, async (request) => ok(await estimates.list(request.scope.trackerProject, request.query)))

  app.post('', {
    config: { permission: 'tracker.admin', errors: SETTING_WRITES },
    schema: {
      operationId: 'createTrackerEstimate',
      tags,
      summary: 'Add an estimate system with its points',
      description: 'Points and time (minutes) are numbers and add up; categories are names and do not.',
      params: TrackerProjectPath,
      body: CreateEstimateBody,
      response: TrackerResponses.estimateCreated
    }
  }, async (request, reply) => created(reply, await estimates.create(request.scope.trackerProject, request.body)))

  app.get('/:estimateId', {
    config: { permission: 'tracker.read', errors: [e.estimateNotFound] },
    schema: {
      operationId: 'getTrackerEstimate',
      tags,
      summary: 'One estimate system',
      params: EstimateParams,
      response: TrackerResponses.estimate
    }
  }, async (request) => ok(await estimates.get(request.scope.trackerProject, request.params.estimateId)))

  app.patch('/:estimateId', {
    config: { permission: 'tracker.admin', errors: [...SETTING_WRITES, e.estimateNotFound, e.inUse, e.changed] },
    schema: {
      operationId: 'updateTrackerEstimate',
      tags,
      summary: 'Rename an estimate system or change its points',
      description: 'Removing a point items hold, or giving a used point of points or time another number, is refused.',
      params: EstimateParams,
      body: UpdateEstimateBody,
      response: TrackerResponses.estimate
    }
  }, async (request) => ok(await estimates.update(request.scope.trackerProject, request.params.estimateId, request.body)))

  app.delete('/:estimateId', {
    config: { permission: 'tracker.admin', errors: [e.estimateNotFound, e.inUse, ...WRITE] },
    schema: {
      operationId: 'deleteTrackerEstimate',
      tags,
      summary: 'Delete an estimate system the project does not use',
      params: EstimateParams,
      response: TrackerResponses.deleted
    }
  }, async (request) => {
    await estimates.delete(request.scope.trackerProject, request.params.estimateId)
    return deleted(request.params.estimateId)
  })
}

export default estimateRoutes
