import { Type, type Static } from '@sinclair/typebox'
import { Envelope } from './envelope.js'
import { DateTime, Id } from './common.js'
import { ListQuery, Page } from './tracker.js'

/**
 * The tracker's workspace level, notifications: each person's inbox of what
 * happened to the items they follow, and what they want to hear of.
 */

export const NOTIFICATION_KINDS = ['assigned', 'mentioned', 'created', 'subscribed'] as const
export const NotificationKind = Type.Union(NOTIFICATION_KINDS.map((kind) => Type.Literal(kind)), {
  description: '`assigned`: the change assigned you; `mentioned`: it mentions you (description or comment); ' +
    '`created`: it changed an item you created; `subscribed`: it changed an item you subscribe to'
})

export const Notification = Type.Object({
  id: Type.String(),
  kind: NotificationKind,
  lpId: Type.String({ description: 'The tracker project' }),
  itemId: Type.String(),
  commentId: Type.Union([Type.String(), Type.Null()], { description: 'The comment the change was, if it was one' }),
  changeId: Type.String({ description: 'The change (its activity entries share it)' }),
  fields: Type.Array(Type.String(), { description: 'What changed: the activity entries\' fields (`created`, `state`, `comment`…)' }),
  actorId: Type.String(),
  createdAt: DateTime,
  readAt: Type.Union([DateTime, Type.Null()]),
  snoozedUntil: Type.Union([DateTime, Type.Null()], { description: 'Hidden from the inbox until then' }),
  archivedAt: Type.Union([DateTime, Type.Null()])
}, { $id: 'TrackerNotification' })

export const NotificationPreferences = Type.Object({
  assigned: Type.Boolean(),
  mentioned: Type.Boolean(),
  created: Type.Boolean(),
  subscribed: Type.Boolean()
}, { $id: 'TrackerNotificationPreferences', description: 'Which kinds of notification the caller receives (all by default)' })

export const NotificationPreferencesPatch = Type.Object({
  assigned: Type.Optional(Type.Boolean()),
  mentioned: Type.Optional(Type.Boolean()),
  created: Type.Optional(Type.Boolean()),
  subscribed: Type.Optional(Type.Boolean())
}, { additionalProperties: false, minProperties: 1 })

export const NotificationListQuery = Type.Object({
  ...ListQuery.properties,
  view: Type.Optional(Type.Union([Type.Literal('inbox'), Type.Literal('unread'), Type.Literal('snoozed'), Type.Literal('archived')], {
    default: 'inbox',
    description: '`inbox`: not archived and not snoozed (the default); `unread`: the inbox\'s unread; `snoozed`: snoozed until later; `archived`'
  }))
}, { additionalProperties: false })

export const NotificationPatch = Type.Object({
  read: Type.Optional(Type.Boolean()),
  snoozedUntil: Type.Optional(Type.Union([DateTime, Type.Null()], { description: 'A future instant, or null to wake it now' })),
  archived: Type.Optional(Type.Boolean())
}, { additionalProperties: false, minProperties: 1 })

export const NotificationParams = Type.Object({ projectId: Id, notificationId: Id })

export const UnreadCount = Type.Object({ count: Type.Integer({ minimum: 0, description: 'Unread notifications in the inbox (snoozed and archived ones aside)' }) })
export const MarkedRead = Type.Object({ count: Type.Integer({ minimum: 0, description: 'How many were unread and are now read' }) })

export const NotificationResponses = {
  list: { 200: Envelope(Page(Type.Ref(Notification))) },
  one: { 200: Envelope(Type.Ref(Notification)) },
  unreadCount: { 200: Envelope(UnreadCount) },
  markedRead: { 200: Envelope(MarkedRead) },
  preferences: { 200: Envelope(Type.Ref(NotificationPreferences)) }
}

export type NotificationKindT = Static<typeof NotificationKind>
export type NotificationT = Static<typeof Notification>
export type NotificationPreferencesT = Static<typeof NotificationPreferences>
export type NotificationPreferencesPatchT = Static<typeof NotificationPreferencesPatch>
export type NotificationListQueryT = Static<typeof NotificationListQuery>
export type NotificationPatchT = Static<typeof NotificationPatch>

export const trackerNotificationSchemas = [Notification, NotificationPreferences]
