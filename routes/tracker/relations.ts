import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ListQuery } from '../../schemas/tracker.js'
import { RelationBody } from '../../schemas/tracker-work-items.js'
import { ItemParams, RelationParams, TrackerResponses } from '../../schemas/tracker-routes.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { created, deleted, ok } from '../replies.js'
import { ITEM, LIST, WRITE } from './refusals.js'

/** `…/work-items/:itemId/relations`: blocking, related, duplicate and scheduling relations, seen from either side. */
const relationRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { relations } = app.tracker
  const tags = ['tracker']

  app.get('', {
    config: { permission: 'tracker.read', errors: [...ITEM, ...LIST] },
    schema: {
      operationId: 'listTrackerRelations',
      tags,
      summary: 'An item\'s relations, each seen from this item',
      description: 'A relation made from the other item shows its reverse here (`blocked_by` for the other\'s `blocking`).',
      params: ItemParams,
      querystring: ListQuery,
      response: TrackerResponses.relationList
    }
  }, async (request) => ok(await relations.list(request.scope.trackerProject, request.params.itemId, request.query)))

  app.post('', {
    config: {
      permission: 'tracker.write',
      errors: [...ITEM, e.relationSelf, e.invalidReference, e.relationExists, e.guestRefused, ...WRITE]
    },
    schema: {
      operationId: 'createTrackerRelation',
      tags,
      summary: 'Relate the item to another item of the project',
      description: 'Two items hold at most one relation. Written to both items\' activity.',
      params: ItemParams,
      body: RelationBody,
      response: TrackerResponses.relationCreated
    }
  }, async (request, reply) => created(reply, await relations.create(request.scope.trackerProject, request.params.itemId, request.body)))

  app.delete('/:relationId', {
    config: { permission: 'tracker.write', errors: [...ITEM, e.relationNotFound, e.guestRefused, ...WRITE] },
    schema: {
      operationId: 'deleteTrackerRelation',
      tags,
      summary: 'Remove a relation, from either side',
      params: RelationParams,
      response: TrackerResponses.deleted
    }
  }, async (request) => {
    await relations.delete(request.scope.trackerProject, request.params.itemId, request.params.relationId)
    return deleted(request.params.relationId)
  })
}

export default relationRoutes
