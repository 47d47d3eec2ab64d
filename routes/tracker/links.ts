import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ListQuery } from '../../schemas/tracker.js'
import { LinkBody } from '../../schemas/tracker-work-items.js'
import { ItemParams, LinkParams, TrackerResponses } from '../../schemas/tracker-routes.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { created, deleted, ok } from '../replies.js'
import { ITEM, LIST, WRITE } from './refusals.js'

/** `…/work-items/:itemId/links`: web links on an item. */
const linkRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { links } = app.tracker
  const tags = ['tracker']

  app.get('', {
    config: { permission: 'tracker.read', errors: [...ITEM, ...LIST] },
    schema: {
      operationId: 'listTrackerLinks',
      tags,
      summary: 'An item\'s links',
      params: ItemParams,
      querystring: ListQuery,
      response: TrackerResponses.linkList
    }
  }, async (request) => ok(await links.list(request.scope.trackerProject, request.params.itemId, request.query)))

  app.post('', {
    config: { permission: 'tracker.write', errors: [...ITEM, e.invalidValue, e.limitReached, e.linkExists, ...WRITE] },
    schema: {
      operationId: 'createTrackerLink',
      tags,
      summary: 'Link an http or https URL from an item',
      description: 'Written to the item\'s activity.',
      params: ItemParams,
      body: LinkBody,
      response: TrackerResponses.linkCreated
    }
  }, async (request, reply) => created(reply, await links.create(request.scope.trackerProject, request.params.itemId, request.body)))

  app.delete('/:linkId', {
    config: { permission: 'tracker.write', errors: [...ITEM, e.linkNotFound, e.notYours, ...WRITE] },
    schema: { operationId: 'deleteTrackerLink', tags, summary: 'Remove a link', params: LinkParams, response: TrackerResponses.deleted }
  }, async (request) => {
    await links.delete(request.scope.trackerProject, request.params.itemId, request.params.linkId)
    return deleted(request.params.linkId)
  })
}

export default linkRoutes
