import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ListQuery } from '../../schemas/tracker.js'
import { CreateViewBody, UpdateViewBody } from '../../schemas/tracker-planning.js'
import { IfMatchHeaders, TrackerProjectPath, TrackerResponses, ViewParams } from '../../schemas/tracker-routes.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { opened } from './recents.js'
import { created, deleted, ok } from '../replies.js'
import { CONDITIONAL, LIST, WRITE } from './refusals.js'
import { ifMatch, tagged } from '../conditional.js'

const VIEW = [e.featureDisabled, e.viewNotFound]
const FIELDS = [e.invalidFilter, e.invalidValue, e.guestRefused]
const FILTER = '`filter` is a TrackerFilter (the schema of that name), checked by the grammar itself so that an error names the field ' +
  'and operator at fault; relative days (`-7d`, `startOfWeek`) are kept as written and move with the calendar.'

/** `…/projects/:lpId/views`: saved filters, layouts, groupings and orders; a list applies one with `viewId`. */
const viewRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { views } = app.tracker
  const tags = ['tracker']

  app.get('', {
    config: { permission: 'tracker.read', errors: [e.featureDisabled, ...LIST] },
    schema: {
      operationId: 'listTrackerViews',
      tags,
      summary: 'The project\'s public views and the caller\'s private ones',
      params: TrackerProjectPath,
      querystring: ListQuery,
      response: TrackerResponses.viewList
    }
  }, async (request) => ok(await views.list(request.scope.trackerProject, request.query)))

  app.post('', {
    config: { permission: 'tracker.write', errors: [e.featureDisabled, ...FIELDS, e.limitReached, ...WRITE] },
    schema: {
      operationId: 'createTrackerView',
      tags,
      summary: 'Save a view: private unless `access: public` (not for guests)',
      description: FILTER,
      params: TrackerProjectPath,
      body: CreateViewBody,
      response: TrackerResponses.viewCreated
    }
  }, async (request, reply) => tagged(reply, created(reply, await views.create(request.scope.trackerProject, request.body))))

  app.get('/:viewId', {
    config: { permission: 'tracker.read', errors: VIEW },
    schema: { operationId: 'getTrackerView', tags, summary: 'One view', params: ViewParams, response: TrackerResponses.view }
  }, async (request, reply) => {
    const { trackerProject } = request.scope
    return tagged(reply, ok(await opened(request, trackerProject, 'view', await views.get(trackerProject, request.params.viewId))))
  })

  app.patch('/:viewId', {
    config: { permission: 'tracker.write', errors: [...VIEW, ...FIELDS, e.viewLocked, e.notYours, ...CONDITIONAL, ...WRITE] },
    schema: {
      operationId: 'updateTrackerView',
      tags,
      summary: 'Change a view (its owner or an admin); a locked view only by unlocking it',
      description: `A locked view refuses every change but \`locked: false\` from its owner or an admin. ${FILTER}`,
      params: ViewParams,
      headers: IfMatchHeaders,
      body: UpdateViewBody,
      response: TrackerResponses.view
    }
  }, async (request, reply) => {
    return tagged(reply, ok(await views.update(request.scope.trackerProject, request.params.viewId, request.body, ifMatch(request))))
  })

  app.delete('/:viewId', {
    config: { permission: 'tracker.write', errors: [...VIEW, e.viewLocked, e.notYours, ...WRITE] },
    schema: {
      operationId: 'deleteTrackerView',
      tags,
      summary: 'Delete a view (its owner or an admin); unlock it first',
      params: ViewParams,
      response: TrackerResponses.deleted
    }
  }, async (request) => {
    await views.delete(request.scope.trackerProject, request.params.viewId)
    return deleted(request.params.viewId)
  })
}

export default viewRoutes
