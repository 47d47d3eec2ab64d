import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { CreateIssueTypeBody, ListQuery, UpdateIssueTypeBody } from '../../schemas/tracker.js'
import { IssueTypeParams, TrackerProjectPath, TrackerResponses } from '../../schemas/tracker-routes.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { created, deleted, ok } from '../replies.js'
import { LIST, SETTING_WRITES, WRITE } from './refusals.js'

/** `…/projects/:lpId/issue-types`: kinds of work items (bug, story…). */
const issueTypeRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { issueTypes } = app.tracker
  const tags = ['tracker']

  app.get('', {
    config: { permission: 'tracker.read', errors: LIST },
    schema: {
      operationId: 'listTrackerIssueTypes',
      tags,
      summary: 'The project\'s issue types',
      params: TrackerProjectPath,
      querystring: ListQuery,
      response: TrackerResponses.issueTypeList
    }
  }, async (request) => ok(await issueTypes.list(request.scope.trackerProject, request.query)))

  app.post('', {
    config: { permission: 'tracker.admin', errors: SETTING_WRITES },
    schema: {
      operationId: 'createTrackerIssueType',
      tags,
      summary: 'Add an issue type',
      params: TrackerProjectPath,
      body: CreateIssueTypeBody,
      response: TrackerResponses.issueTypeCreated
    }
  }, async (request, reply) => created(reply, await issueTypes.create(request.scope.trackerProject, request.body)))

  app.get('/:typeId', {
    config: { permission: 'tracker.read', errors: [e.issueTypeNotFound] },
    schema: {
      operationId: 'getTrackerIssueType',
      tags,
      summary: 'One issue type',
      params: IssueTypeParams,
      response: TrackerResponses.issueType
    }
  }, async (request) => ok(await issueTypes.get(request.scope.trackerProject, request.params.typeId)))

  app.patch('/:typeId', {
    config: { permission: 'tracker.admin', errors: [...SETTING_WRITES, e.issueTypeNotFound] },
    schema: {
      operationId: 'updateTrackerIssueType',
      tags,
      summary: 'Change an issue type, or make it inactive',
      description: 'An inactive type stays on its items but is not given to more.',
      params: IssueTypeParams,
      body: UpdateIssueTypeBody,
      response: TrackerResponses.issueType
    }
  }, async (request) => ok(await issueTypes.update(request.scope.trackerProject, request.params.typeId, request.body)))

  app.delete('/:typeId', {
    config: { permission: 'tracker.admin', errors: [e.issueTypeNotFound, e.inUse, ...WRITE] },
    schema: {
      operationId: 'deleteTrackerIssueType',
      tags,
      summary: 'Delete an issue type no item uses',
      description: 'A type items use is refused: make it inactive instead, or change their type first.',
      params: IssueTypeParams,
      response: TrackerResponses.deleted
    }
  }, async (request) => {
    await issueTypes.delete(request.scope.trackerProject, request.params.typeId)
    return deleted(request.params.typeId)
  })
}

export default issueTypeRoutes
