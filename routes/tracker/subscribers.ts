import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ListQuery } from '../../schemas/tracker.js'
import { SubscriberBody } from '../../schemas/tracker-work-items.js'
import { ItemParams, SubscriberParams, TrackerResponses } from '../../schemas/tracker-routes.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { created, deleted, ok } from '../replies.js'
import { ITEM, LIST, WRITE } from './refusals.js'

/** `…/work-items/:itemId/subscribers` and `…/activity`: who follows an item, and what happened to it. */
const subscriberRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { activity } = app.tracker
  const tags = ['tracker']

  app.get('/activity', {
    config: { permission: 'tracker.read', errors: [...ITEM, ...LIST] },
    schema: {
      operationId: 'listTrackerActivity',
      tags,
      summary: 'An item\'s activity, oldest first: one entry per changed field',
      description: 'Each entry names the field, its old and new value, who changed it and whether an automation did; ' +
        'the entries of one write share a `changeId`.',
      params: ItemParams,
      querystring: ListQuery,
      response: TrackerResponses.activityList
    }
  }, async (request) => ok(await activity.list(request.scope.trackerProject, request.params.itemId, request.query)))

  app.get('/subscribers', {
    config: { permission: 'tracker.read', errors: [...ITEM, ...LIST] },
    schema: {
      operationId: 'listTrackerSubscribers',
      tags,
      summary: 'Who is subscribed to an item, and why',
      description: 'The creator, assignees, commenters and people mentioned are subscribed as they come.',
      params: ItemParams,
      querystring: ListQuery,
      response: TrackerResponses.subscriberList
    }
  }, async (request) => ok(await activity.subscribers(request.scope.trackerProject, request.params.itemId, request.query)))

  app.post('/subscribers', {
    config: { permission: 'tracker.write', errors: [...ITEM, e.notAMember, e.guestRefused, ...WRITE] },
    schema: {
      operationId: 'subscribeToTrackerWorkItem',
      tags,
      summary: 'Subscribe the caller (or, but for guests, another member) to an item',
      description: 'Subscribing twice is one subscription.',
      params: ItemParams,
      body: SubscriberBody,
      response: TrackerResponses.subscriberCreated
    }
  }, async (request, reply) => {
    const subscriber = await activity.subscribe(request.scope.trackerProject, request.params.itemId, request.body.userId)
    return created(reply, subscriber, { id: subscriber.userId })
  })

  app.delete('/subscribers/:userId', {
    config: { permission: 'tracker.write', errors: [...ITEM, e.subscriberNotFound, e.notYours, ...WRITE] },
    schema: {
      operationId: 'unsubscribeFromTrackerWorkItem',
      tags,
      summary: 'Unsubscribe oneself (or, as an admin, anyone) from an item',
      params: SubscriberParams,
      response: TrackerResponses.deleted
    }
  }, async (request) => {
    await activity.unsubscribe(request.scope.trackerProject, request.params.itemId, request.params.userId)
    return deleted(request.params.userId)
  })
}

export default subscriberRoutes
