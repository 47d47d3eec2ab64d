import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { PlatformTrackerParams } from '../../schemas/tracker-routes.js'
import { AnalyticsQuery, AnalyticsResponses } from '../../schemas/tracker-reports.js'
import { trackerActor } from '../../services/tracker/access.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { ok } from '../replies.js'

/** `/tracker/analytics`: counts and point sums of a tracker project's work items by a dimension, optionally segmented. */
const analyticsRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { analytics } = app.tracker

  app.get('', {
    config: { parent: 'project', permission: 'tracker.read', errors: [e.projectNotFound, e.invalidFilter, e.invalidValue, e.viewNotFound] },
    schema: {
      operationId: 'getTrackerAnalytics',
      tags: ['tracker'],
      summary: 'Counts and point sums of the work items the caller sees, grouped by a dimension and optionally segmented by another',
      description: '`filter` is a TrackerFilter as JSON, applied with the caller\'s visibility as lists apply it; points are the items\' ' +
        'estimates (points or minutes). An item with several labels, assignees or modules counts under each.',
      params: PlatformTrackerParams,
      querystring: AnalyticsQuery,
      response: AnalyticsResponses.report
    }
  }, async (request) => {
    const actor = trackerActor(request.caller.user.userId, request.scope.permissions)
    return ok(await analytics.report(actor, request.params.projectId, request.query))
  })
}

export default analyticsRoutes
