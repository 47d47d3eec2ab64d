import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CreateStateBody, DeleteStateQuery, ListStatesQuery, UpdateStateBody } from '../../schemas/tracker.js'
import { StateParams, TrackerProjectPath, TrackerResponses } from '../../schemas/tracker-routes.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { created, deleted, ok } from '../replies.js'
import { LIST, SETTING_WRITES, WRITE } from './refusals.js'

/** `…/projects/:lpId/states`: the workflow, in groups backlog, unstarted, started, completed and cancelled. */
const stateRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { states, flows } = app.tracker
  const tags = ['tracker']

  app.get('', {
    config: { permission: 'tracker.read', errors: LIST },
    schema: {
      operationId: 'listTrackerStates',
      tags,
      summary: 'The project\'s states in workflow order',
      description: 'The hidden triage state, which holds intake items, only with `includeTriage`.',
      params: TrackerProjectPath,
      querystring: ListStatesQuery,
      response: TrackerResponses.stateList
    }
  }, async (request) => ok(await states.list(request.scope.trackerProject, request.query)))

  app.post('', {
    config: { permission: 'tracker.admin', errors: SETTING_WRITES },
    schema: {
      operationId: 'createTrackerState',
      tags,
      summary: 'Add a state to the workflow',
      description: 'A state\'s group never changes. `default: true` makes it the one default state.',
      params: TrackerProjectPath,
      body: CreateStateBody,
      response: TrackerResponses.stateCreated
    }
  }, async (request, reply) => created(reply, await states.create(request.scope.trackerProject, request.body)))

  app.get('/:stateId', {
    config: { permission: 'tracker.read', errors: [e.stateNotFound] },
    schema: { operationId: 'getTrackerState', tags, summary: 'One state', params: StateParams, response: TrackerResponses.state }
  }, async (request) => ok(await states.get(request.scope.trackerProject, request.params.stateId)))

  app.patch('/:stateId', {
    config: { permission: 'tracker.admin', errors: [...SETTING_WRITES, e.stateNotFound] },
    schema: {
      operationId: 'updateTrackerState',
      tags,
      summary: 'Rename, recolour, reorder a state, or make it the default',
      params: StateParams,
      body: UpdateStateBody,
      response: TrackerResponses.state
    }
  }, async (request) => ok(await states.update(request.scope.trackerProject, request.params.stateId, request.body)))

  app.delete('/:stateId', {
    config: { permission: 'tracker.admin', errors: [e.stateNotFound, e.stateInUse, e.stateGroupFixed, e.invalidReference, ...WRITE] },
    schema: {
      operationId: 'deleteTrackerState',
      tags,
      summary: 'Delete a state, moving its items (and the default) to another',
      description: 'The default state, and a state that holds items (archived ones too), need `targetStateId`: its items move there, ' +
        'each with an activity entry, and it becomes the default if the deleted one was. Finished by a job if the server stops half-way.',
      params: StateParams,
      querystring: DeleteStateQuery,
      response: TrackerResponses.deleted
    }
  }, async (request) => {
    await flows.deleteState(request.scope.trackerProject, request.params.stateId, request.query.targetStateId)
    return deleted(request.params.stateId)
  })
}

export default stateRoutes
