import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { PlatformTrackerParams } from '../../schemas/tracker-routes.js'
import {
  NotificationListQuery, NotificationParams, NotificationPatch, NotificationPreferencesPatch, NotificationResponses
} from '../../schemas/tracker-notifications.js'
import { trackerErrors as e } from '../../services/tracker/errors.js'
import { ok } from '../replies.js'
import { LIST } from './refusals.js'

/**
 * `/tracker/notifications`: the caller's own notifications in the platform
 * project, across its tracker projects, and what kinds they want. Reading
 * the tracker is enough: a notification is the caller's alone.
 */
const notificationRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { notifications } = app.tracker
  const tags = ['tracker']
  const inProject = { permission: 'tracker.read', parent: 'project' } as const

  app.get('/', {
    config: { ...inProject, errors: [...LIST] },
    schema: {
      operationId: 'listTrackerNotifications',
      tags,
      summary: 'The caller\'s notifications, newest first',
      description: 'One per change the caller did not make, of the strongest kind they enabled: assigned, mentioned, ' +
        'created (an item they created changed) or subscribed. ' +
        '`view` picks the inbox (the default), its unread, the snoozed or the archived.',
      params: PlatformTrackerParams,
      querystring: NotificationListQuery,
      response: NotificationResponses.list
    }
  }, async (request) => ok(await notifications.list(request.scope.project.id, request.caller.user.userId, request.query)))

  app.get('/unread-count', {
    config: { ...inProject, errors: [] },
    schema: {
      operationId: 'countUnreadTrackerNotifications',
      tags,
      summary: 'How many of the caller\'s inbox notifications are unread',
      params: PlatformTrackerParams,
      response: NotificationResponses.unreadCount
    }
  }, async (request) => ok({ count: await notifications.unreadCount(request.scope.project.id, request.caller.user.userId) }))

  app.post('/mark-all-read', {
    config: { ...inProject, errors: [] },
    schema: {
      operationId: 'markAllTrackerNotificationsRead',
      tags,
      summary: 'Mark every unread notification of the inbox read',
      description: 'Snoozed and archived notifications are left as they are.',
      params: PlatformTrackerParams,
      response: NotificationResponses.markedRead
    }
  }, async (request) => ok({ count: await notifications.markAllRead(request.scope.project.id, request.caller.user.userId) }))

  app.get('/preferences', {
    config: { ...inProject, errors: [] },
    schema: {
      operationId: 'getTrackerNotificationPreferences',
      tags,
      summary: 'Which kinds of notification the caller receives',
      params: PlatformTrackerParams,
      response: NotificationResponses.preferences
    }
  }, async (request) => ok(await notifications.preferencesOf(request.scope.project.id, request.caller.user.userId)))

  app.patch('/preferences', {
    config: { ...inProject, errors: [] },
    schema: {
      operationId: 'updateTrackerNotificationPreferences',
      tags,
      summary: 'Turn kinds of notification on or off for the caller',
      description: 'A change whose strongest reason is turned off notifies by the next reason still on (an assignee is a subscriber too).',
      params: PlatformTrackerParams,
      body: NotificationPreferencesPatch,
      response: NotificationResponses.preferences
    }
  }, async (request) => ok(await notifications.setPreferences(request.scope.project.id, request.caller.user.userId, request.body)))

  app.patch('/:notificationId', {
    config: { ...inProject, errors: [e.notificationNotFound, e.invalidValue] },
    schema: {
      operationId: 'updateTrackerNotification',
      tags,
      summary: 'Mark a notification read or unread, snooze it until a time, archive or unarchive it',
      params: NotificationParams,
      body: NotificationPatch,
      response: NotificationResponses.one
    }
  }, async (request) => {
    const { project } = request.scope
    return ok(await notifications.update(project.id, request.caller.user.userId, request.params.notificationId, request.body))
  })
}

export default notificationRoutes
