import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  BulkPatchBody, CountWorkItemsQuery, CreateWorkItemBody, ListWorkItemsQuery, UpdateWorkItemBody
} from '../../schemas/tracker-work-items.js'
import { IdempotencyHeaders, IfMatchHeaders, ItemParams, TrackerProjectPath, TrackerResponses } from '../../schemas/tracker-routes.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { opened } from './recents.js'
import { created, deleted, ok } from '../replies.js'
import { CONDITIONAL, IDEMPOTENT, ITEM, ITEM_FIELDS, ITEM_LIST, WRITE } from './refusals.js'
import { idempotencyKey, ifMatch, tagged } from '../conditional.js'

const FILTER = 'The `filter` is a TrackerFilter (the schema of that name) as JSON: `{ and: [...] }`, `{ or: [...] }`, `{ not: {...} }` ' +
  'or a condition `{ field, op, value }`; an unknown field or operator is refused naming it.'

/** `…/projects/:lpId/work-items`: work items, their lists, counts, sync pages and bulk patches. */
const workItemRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { workItems, lists } = app.tracker
  const tags = ['tracker']

  app.get('', {
    config: { permission: 'tracker.read', errors: ITEM_LIST, fastJson: true },
    schema: {
      operationId: 'listTrackerWorkItems',
      tags,
      summary: 'Work items by a filter, a saved view and an order, in keyset pages',
      description: `${FILTER} Archived items, drafts and intake items in triage stay out unless the filter names them; a guest sees ` +
        'only what she created or is assigned. With `updatedSince` alone: every change after that instant, oldest first, deleted items ' +
        'as tombstones, to keep a copy in sync.',
      params: TrackerProjectPath,
      querystring: ListWorkItemsQuery,
      response: TrackerResponses.workItemList
    }
  }, async (request) => ok(await lists.list(request.scope.trackerProject, request.query)))

  app.get('/count', {
    config: { permission: 'tracker.read', errors: ITEM_LIST },
    schema: {
      operationId: 'countTrackerWorkItems',
      tags,
      summary: 'How many work items match, in total and per value of `groupBy`',
      description: `${FILTER} Groups come in the field's own order, \`null\` last for items with none.`,
      params: TrackerProjectPath,
      querystring: CountWorkItemsQuery,
      response: TrackerResponses.count
    }
  }, async (request) => ok(await lists.count(request.scope.trackerProject, request.query)))

  app.post('', {
    config: { permission: 'tracker.write', errors: [...ITEM_FIELDS, ...IDEMPOTENT, ...WRITE] },
    schema: {
      operationId: 'createTrackerWorkItem',
      tags,
      summary: 'Create a work item; its key is the project\'s identifier and the next number',
      description: 'No two items of a project get one number, even after a delete. Unset fields take the project\'s defaults ' +
        '(the default state and assignee). With an Idempotency-Key a retry gets the same item.',
      params: TrackerProjectPath,
      headers: IdempotencyHeaders,
      body: CreateWorkItemBody,
      response: TrackerResponses.workItemCreated
    }
  }, async (request, reply) => {
    const item = await workItems.create(request.scope.trackerProject, request.body, { idempotencyKey: idempotencyKey(request) })
    return tagged(reply, created(reply, item))
  })

  app.patch('', {
    config: { permission: 'tracker.write', errors: [e.invalidBulk, e.invalidReference, ...IDEMPOTENT, ...WRITE] },
    schema: {
      operationId: 'patchTrackerWorkItems',
      tags,
      summary: 'Patch up to 500 work items: one patch for all, or one per item',
      description: 'Each item is patched as a single PATCH would be, with its own activity, and answered on its own: an item refused ' +
        '(with the status and code a single PATCH would have had) is left untouched, and the others are not held back.',
      params: TrackerProjectPath,
      headers: IdempotencyHeaders,
      body: BulkPatchBody,
      response: TrackerResponses.bulk
    }
  }, async (request) => {
    return ok(await workItems.bulkPatch(request.scope.trackerProject, request.body, { idempotencyKey: idempotencyKey(request) }))
  })

  app.get('/:itemId', {
    config: { permission: 'tracker.read', errors: ITEM, fastJson: true },
    schema: {
      operationId: 'getTrackerWorkItem',
      tags,
      summary: 'One work item; its ETag is its version',
      params: ItemParams,
      response: TrackerResponses.workItem
    }
  }, async (request, reply) => {
    const { trackerProject } = request.scope
    return tagged(reply, ok(await opened(request, trackerProject, 'workItem', await workItems.get(trackerProject, request.params.itemId))))
  })

  app.patch('/:itemId', {
    config: { permission: 'tracker.write', errors: [...ITEM, ...ITEM_FIELDS, ...CONDITIONAL, ...WRITE] },
    schema: {
      operationId: 'updateTrackerWorkItem',
      tags,
      summary: 'Change a work item; with If-Match only at that version',
      description: 'One activity entry per changed field. `position` puts it before or after another item in board order; ' +
        '`archived` archives (completed or cancelled items only) or restores it.',
      params: ItemParams,
      headers: IfMatchHeaders,
      body: UpdateWorkItemBody,
      response: TrackerResponses.workItem
    }
  }, async (request, reply) => {
    const item = await workItems.update(request.scope.trackerProject, request.params.itemId, request.body, { ifMatch: ifMatch(request) })
    return tagged(reply, ok(item))
  })

  app.delete('/:itemId', {
    config: { permission: 'tracker.write', errors: [...ITEM, e.notYours, ...CONDITIONAL, ...WRITE] },
    schema: {
      operationId: 'deleteTrackerWorkItem',
      tags,
      summary: 'Delete a work item (its creator or an admin); its key is never given again',
      description: 'A sync page lists it as a tombstone. Its comments, links, relations, attachments and subscriptions go with it; its ' +
        'activity stays.',
      params: ItemParams,
      headers: IfMatchHeaders,
      response: TrackerResponses.deleted
    }
  }, async (request) => {
    await workItems.delete(request.scope.trackerProject, request.params.itemId, { ifMatch: ifMatch(request) })
    return deleted(request.params.itemId)
  })
}

export default workItemRoutes
