import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { PlatformTrackerParams } from '../../schemas/tracker-routes.js'
import { SearchQuery, SearchResponses } from '../../schemas/tracker-search.js'
import { trackerActor } from '../../services/tracker/access.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { ok } from '../replies.js'

/** `/tracker/search`: keys, numbers and text across the tracker projects the caller may read. */
const searchRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { search } = app.tracker

  app.get('', {
    config: { parent: 'project', permission: 'tracker.read', errors: [e.projectNotFound, e.invalidFilter, e.invalidValue] },
    schema: {
      operationId: 'searchTracker',
      tags: ['tracker'],
      summary: 'Search work items, intake items, comments and pages: keys and numbers first, then text ranked with highlighted snippets',
      description: 'An exact key (also one from before a rename), a key prefix or a bare number is looked up first; then words are ' +
        'ranked over titles (highest), descriptions, comments, pages and intake items. Only what the caller may read is searched: a ' +
        'guest\'s own items unless the project lets guests see all, tracker projects they are a member of or that are public, and ' +
        '`filter` and `lpId` narrow the search itself, so every page is full while more exists. `facets.type` counts the hits per type.',
      params: PlatformTrackerParams,
      querystring: SearchQuery,
      response: SearchResponses.result
    }
  }, async (request) => {
    const actor = trackerActor(request.caller.user.userId, request.scope.permissions)
    return ok(await search.search(actor, request.params.projectId, request.query))
  })
}

export default searchRoutes
