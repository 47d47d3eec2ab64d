import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ListQuery } from '../../schemas/tracker.js'
import {
  CreateDraftBody, DraftParams, PromoteDraftBody, UpdateDraftBody, WorkspacePath, WorkspaceResponses as R
} from '../../schemas/tracker-workspace.js'
import { commonErrors } from '../../services/platform/errors.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { created, deleted, ok } from '../replies.js'
import { IDEMPOTENT, ITEM_FIELDS, LIST, WRITE } from './refusals.js'
import { actorOf } from './workspace.js'

const DRAFT = [e.draftNotFound]
const PROMOTE = [...DRAFT, commonErrors.forbidden, e.invalidReference, e.draftPromoting, ...ITEM_FIELDS, ...IDEMPOTENT, ...WRITE]

/**
 * `/tracker/drafts`: the caller's draft work items, in no tracker project
 * yet. Keeping them needs `tracker.read` (they are the caller's alone);
 * promoting one makes a work item, which needs `tracker.write`.
 */
const draftRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { drafts } = app.tracker
  const tags = ['tracker']
  const inProject = { permission: 'tracker.read', parent: 'project' } as const

  app.get('', {
    config: { ...inProject, errors: LIST },
    schema: {
      operationId: 'listTrackerDrafts',
      tags,
      summary: 'The caller\'s drafts, last changed first',
      params: WorkspacePath,
      querystring: ListQuery,
      response: R.draftList
    }
  }, async (request) => ok(await drafts.list(request.scope.project.id, request.caller.user.userId, request.query)))

  app.post('', {
    config: { ...inProject, errors: [e.invalidValue, e.limitReached] },
    schema: {
      operationId: 'createTrackerDraft',
      tags,
      summary: 'Write a draft work item, in no tracker project yet',
      params: WorkspacePath,
      body: CreateDraftBody,
      response: R.draftCreated
    }
  }, async (request, reply) => created(reply, await drafts.create(request.scope.project.id, request.caller.user.userId, request.body)))

  app.get('/:draftId', {
    config: { ...inProject, errors: DRAFT },
    schema: { operationId: 'getTrackerDraft', tags, summary: 'One of the caller\'s drafts', params: DraftParams, response: R.draft }
  }, async (request) => ok(await drafts.get(request.scope.project.id, request.caller.user.userId, request.params.draftId)))

  app.patch('/:draftId', {
    config: { ...inProject, errors: [...DRAFT, e.invalidValue, e.draftPromoting, e.changed] },
    schema: {
      operationId: 'updateTrackerDraft',
      tags,
      summary: 'Change a draft (not while it is being promoted)',
      params: DraftParams,
      body: UpdateDraftBody,
      response: R.draft
    }
  }, async (request) => ok(await drafts.update(request.scope.project.id, request.caller.user.userId, request.params.draftId, request.body)))

  app.delete('/:draftId', {
    config: { ...inProject, errors: DRAFT },
    schema: { operationId: 'deleteTrackerDraft', tags, summary: 'Delete a draft', params: DraftParams, response: R.deleted }
  }, async (request) => {
    await drafts.delete(request.scope.project.id, request.caller.user.userId, request.params.draftId)
    return deleted(request.params.draftId)
  })

  app.post('/:draftId/promote', {
    config: { ...inProject, errors: PROMOTE },
    schema: {
      operationId: 'promoteTrackerDraft',
      tags,
      summary: 'Make the draft a work item in a tracker project, and delete the draft',
      description: 'It makes a work item, so it takes `tracker.write` as well. Claims the draft for that project, makes the item ' +
        'under a key derived from the draft, then deletes the draft: a retry after a failure finishes the same promotion and ' +
        'answers the same item (docs/tracker.md, "Drafts").',
      params: DraftParams,
      body: PromoteDraftBody,
      response: R.promoted
    }
  }, async (request) => ok(await drafts.promote(actorOf(request), request.scope.project.id, request.params.draftId, request.body.lpId)))
}

export default draftRoutes
