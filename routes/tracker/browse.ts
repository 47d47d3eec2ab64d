import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { KeyParams, TrackerResponses } from '../../schemas/tracker-routes.js'
import { trackerActor } from '../../services/tracker/access.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { ok } from '../replies.js'
import { tagged } from '../conditional.js'

/** `/tracker/browse/:key`: a work item by its key, across the platform project's tracker projects. */
const browseRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { workItems } = app.tracker

  app.get('/:key', {
    config: { permission: 'tracker.read', parent: 'project', errors: [e.invalidKey, e.itemNotFound], fastJson: true },
    schema: {
      operationId: 'getTrackerWorkItemByKey',
      tags: ['tracker'],
      summary: 'A work item by its key (`WEB-42`), also by a key from before its project\'s identifier was renamed',
      description: 'A key of an item, or of a project, the caller may not see is answered as a key of nothing.',
      params: KeyParams,
      response: TrackerResponses.workItem
    }
  }, async (request, reply) => {
    const actor = trackerActor(request.caller.user.userId, request.scope.permissions)
    return tagged(reply, ok(await workItems.getByKey(actor, request.scope.project.id, request.params.key)))
  })
}

export default browseRoutes
