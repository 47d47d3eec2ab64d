import type { FastifyPluginAsync } from 'fastify'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { TRACKER_WEBHOOK_SOURCE } from '../../services/webhooks/sources/tracker.js'
import webhookRoutes from '../webhooks-shared.js'

/**
 * `/tracker/webhooks`: the tracker's webhooks (work item events) on the one
 * engine, managed with `tracker.admin` in the platform project; the filter is
 * a TrackerFilter, `me` in it being the webhook's creator (docs/tracker.md).
 */
const trackerWebhookRoutes: FastifyPluginAsync = async (app) => {
  await app.register(webhookRoutes, {
    source: TRACKER_WEBHOOK_SOURCE,
    parent: 'trackerWebhook',
    ownerParent: 'project',
    permission: 'tracker.admin',
    operation: 'Tracker',
    tags: ['tracker'],
    filterErrors: [e.invalidFilter]
  })
}

export default trackerWebhookRoutes
