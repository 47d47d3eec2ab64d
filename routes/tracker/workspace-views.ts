import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ListQuery } from '../../schemas/tracker.js'
import {
  CreateWorkspaceViewBody, UpdateWorkspaceViewBody, WorkspacePath, WorkspaceResponses as R, WorkspaceViewParams
} from '../../schemas/tracker-workspace.js'
import { commonErrors } from '../../services/platform/errors.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { created, deleted, ok } from '../replies.js'
import { LIST } from './refusals.js'
import { actorOf } from './workspace.js'

const VIEW = [e.workspaceViewNotFound]
const CHANGE = [...VIEW, commonErrors.forbidden, e.invalidFilter, e.invalidValue, e.viewLocked, e.notYours, e.changed]
const SHARE = 'A private view needs only `tracker.read`; a public one (made public now or later) needs `tracker.write`. '
const FILTER = '`filter` is a TrackerFilter, checked by the grammar so that an error names the field and operator at fault.'

/**
 * `/tracker/views`: saved filters across the tracker projects of the
 * platform project; applying one (`…/items`) lists the work items it
 * selects in the projects the caller reads.
 */
const workspaceViewRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { workspaceViews } = app.tracker
  const tags = ['tracker']
  const inProject = { permission: 'tracker.read', parent: 'project' } as const

  app.get('', {
    config: { ...inProject, errors: LIST },
    schema: {
      operationId: 'listTrackerWorkspaceViews',
      tags,
      summary: 'The public workspace views and the caller\'s private ones',
      params: WorkspacePath,
      querystring: ListQuery,
      response: R.viewList
    }
  }, async (request) => ok(await workspaceViews.list(actorOf(request), request.scope.project.id, request.query)))

  app.post('', {
    config: { ...inProject, errors: [commonErrors.forbidden, e.invalidFilter, e.invalidValue, e.limitReached] },
    schema: {
      operationId: 'createTrackerWorkspaceView',
      tags,
      summary: 'Save a filter across the tracker projects: private unless `access: public`',
      description: SHARE + FILTER,
      params: WorkspacePath,
      body: CreateWorkspaceViewBody,
      response: R.viewCreated
    }
  }, async (request, reply) => created(reply, await workspaceViews.create(actorOf(request), request.scope.project.id, request.body)))

  app.get('/:workspaceViewId', {
    config: { ...inProject, errors: VIEW },
    schema: { operationId: 'getTrackerWorkspaceView', tags, summary: 'One workspace view', params: WorkspaceViewParams, response: R.view }
  }, async (request) => ok(await workspaceViews.get(actorOf(request), request.scope.project.id, request.params.workspaceViewId)))

  app.get('/:workspaceViewId/items', {
    config: { ...inProject, errors: [...VIEW, ...LIST] },
    schema: {
      operationId: 'listTrackerWorkspaceViewItems',
      tags,
      summary: 'The work items a workspace view selects across the tracker projects the caller reads, in its order',
      description: 'Each project\'s visibility rule is part of the query (a guest sees their own items); archived items, drafts ' +
        'and triage are left out unless the filter names them, as in a project\'s list.',
      params: WorkspaceViewParams,
      querystring: ListQuery,
      response: R.viewItems
    }
  }, async (request) => {
    const { workspaceViewId } = request.params
    return ok(await workspaceViews.items(actorOf(request), request.scope.project.id, workspaceViewId, request.query))
  })

  app.patch('/:workspaceViewId', {
    config: { ...inProject, errors: CHANGE },
    schema: {
      operationId: 'updateTrackerWorkspaceView',
      tags,
      summary: 'Change a workspace view (its owner or a `tracker.admin` holder); a locked one only by unlocking it',
      description: SHARE + FILTER,
      params: WorkspaceViewParams,
      body: UpdateWorkspaceViewBody,
      response: R.view
    }
  }, async (request) => {
    const { workspaceViewId } = request.params
    return ok(await workspaceViews.update(actorOf(request), request.scope.project.id, workspaceViewId, request.body))
  })

  app.delete('/:workspaceViewId', {
    config: { ...inProject, errors: [...VIEW, e.viewLocked, e.notYours] },
    schema: {
      operationId: 'deleteTrackerWorkspaceView',
      tags,
      summary: 'Delete a workspace view (its owner or a `tracker.admin` holder); unlock it first',
      params: WorkspaceViewParams,
      response: R.deleted
    }
  }, async (request) => {
    await workspaceViews.delete(actorOf(request), request.scope.project.id, request.params.workspaceViewId)
    return deleted(request.params.workspaceViewId)
  })
}

export default workspaceViewRoutes
