import { Type, type Static } from '@sinclair/typebox'
import { DateOnly, ListQuery, StateGroup, TRACKER_LIMITS } from './tracker.js'
import { DateTime, Id } from './common.js'
import { GroupByField, OrderBy, PRIORITIES } from './tracker-filters.js'

/** The tracker family's contracts, part 2: work items and what hangs off them. */

export const Priority = Type.Union(PRIORITIES.map((priority) => Type.Literal(priority)), { description: 'Sorted urgent, high, medium, low, none' })
export const RELATION_TYPES = ['blocking', 'blocked_by', 'relates_to', 'duplicate', 'start_before', 'start_after', 'finish_before', 'finish_after'] as const
export const RelationType = Type.Union(RELATION_TYPES.map((type) => Type.Literal(type)), {
  description: 'Seen from the item asked about; the other item sees the reverse (`blocking` ↔ `blocked_by`, `start_before` ↔ `start_after`, `finish_before` ↔ `finish_after`; `relates_to` and `duplicate` both ways)'
})
export const INTAKE_STATUSES = ['pending', 'accepted', 'declined', 'snoozed', 'duplicate'] as const
export const IntakeStatus = Type.Union(INTAKE_STATUSES.map((status) => Type.Literal(status)))

const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])
const IdList = (max: number, description: string) => Type.Array(Id, { maxItems: max, uniqueItems: true, description })

/** ProseMirror/TipTap-style editor JSON: `{ type: 'doc', content: [...] }`; text nodes carry `text`, mention nodes `attrs.id`. */
export const EditorDocument = Type.Object({
  type: Type.Literal('doc'),
  content: Type.Optional(Type.Array(Type.Unknown()))
}, { additionalProperties: true, description: 'Editor JSON; its plain text is derived from text nodes, and `mention` nodes (`attrs.id`) subscribe the people they name' })

export const IntakeInfo = Type.Object({
  status: IntakeStatus,
  snoozedUntil: Type.Union([DateTime, Type.Null()]),
  duplicateOfId: Type.Union([Type.String(), Type.Null()]),
  source: Type.String(),
  decidedBy: Type.Union([Type.String(), Type.Null()]),
  decidedAt: Type.Union([DateTime, Type.Null()])
})

export const WorkItem = Type.Object({
  id: Type.String(),
  key: Type.String({ description: '`<identifier>-<number>`, with the project\'s current identifier', examples: ['WEB-42'] }),
  number: Type.Integer({ description: 'Given once per tracker project, never again, even after a delete' }),
  trackerProjectId: Type.String(),
  title: Type.String(),
  descriptionFormat: Type.Union([Type.Literal('markdown'), Type.Literal('json')]),
  description: Type.Union([Type.String(), Type.Null()], { description: 'Markdown, when the description was given as markdown' }),
  descriptionJson: Type.Union([EditorDocument, Type.Null()], { description: 'Editor JSON, when given so' }),
  descriptionText: Type.String({ description: 'Plain text derived from the description' }),
  stateId: Type.String(),
  stateGroup: StateGroup,
  priority: Priority,
  assigneeIds: Type.Array(Type.String()),
  labelIds: Type.Array(Type.String()),
  parentId: Type.Union([Type.String(), Type.Null()]),
  startDate: Type.Union([DateOnly, Type.Null()]),
  targetDate: Type.Union([DateOnly, Type.Null()]),
  estimatePointId: Type.Union([Type.String(), Type.Null()]),
  estimate: Type.Union([Type.Number(), Type.Null()], { description: 'The point\'s number (points, or minutes for time); null for categories or none' }),
  typeId: Type.Union([Type.String(), Type.Null()]),
  cycleId: Type.Union([Type.String(), Type.Null()]),
  moduleIds: Type.Array(Type.String()),
  sortOrder: Type.Number({ description: 'Board order: lower first' }),
  archivedAt: Type.Union([DateTime, Type.Null()]),
  draft: Type.Boolean({ description: 'A draft is seen only by its creator and stays out of lists until published' }),
  completedAt: Type.Union([DateTime, Type.Null()], { description: 'When the item last entered a completed state; null outside the completed group' }),
  intake: Type.Union([IntakeInfo, Type.Null()]),
  createdBy: Type.String(),
  updatedBy: Type.String(),
  createdAt: DateTime,
  updatedAt: DateTime,
  version: Type.Integer({ description: 'Sent as the ETag; If-Match with another version is refused with 412' })
}, { $id: 'TrackerWorkItem' })

/** A deleted item in an `updatedSince` answer. */
export const WorkItemTombstone = Type.Object({
  id: Type.String(),
  key: Type.String(),
  number: Type.Integer(),
  deleted: Type.Literal(true),
  deletedAt: DateTime,
  updatedAt: DateTime
}, { $id: 'TrackerWorkItemTombstone' })

const Position = Type.Object({
  before: Type.Optional(Id),
  after: Type.Optional(Id)
}, { additionalProperties: false, minProperties: 1, maxProperties: 1, description: 'Place the item just before or just after another item in board order' })

const WorkItemFields = {
  title: Type.String({ minLength: 1, maxLength: TRACKER_LIMITS.titleLength }),
  description: Nullable(Type.String({ maxLength: TRACKER_LIMITS.bodyLength, description: 'Markdown; `<@userId>` mentions a person' })),
  descriptionJson: Nullable(EditorDocument),
  stateId: Id,
  priority: Priority,
  assigneeIds: IdList(TRACKER_LIMITS.assigneesPerItem, 'Members of the tracker project'),
  labelIds: IdList(TRACKER_LIMITS.labelsPerItem, 'Labels of the tracker project'),
  parentId: Nullable(Id),
  startDate: Nullable(DateOnly),
  targetDate: Nullable(DateOnly),
  estimatePointId: Nullable(Id),
  typeId: Nullable(Id),
  cycleId: Nullable(Id),
  moduleIds: IdList(TRACKER_LIMITS.modulesPerItem, 'Modules of the tracker project'),
  sortOrder: Type.Number(),
  draft: Type.Boolean()
}

export const CreateWorkItemBody = Type.Object({
  title: WorkItemFields.title,
  description: Type.Optional(WorkItemFields.description),
  descriptionJson: Type.Optional(WorkItemFields.descriptionJson),
  stateId: Type.Optional(WorkItemFields.stateId),
  priority: Type.Optional(WorkItemFields.priority),
  assigneeIds: Type.Optional(WorkItemFields.assigneeIds),
  labelIds: Type.Optional(WorkItemFields.labelIds),
  parentId: Type.Optional(WorkItemFields.parentId),
  startDate: Type.Optional(WorkItemFields.startDate),
  targetDate: Type.Optional(WorkItemFields.targetDate),
  estimatePointId: Type.Optional(WorkItemFields.estimatePointId),
  typeId: Type.Optional(WorkItemFields.typeId),
  cycleId: Type.Optional(WorkItemFields.cycleId),
  moduleIds: Type.Optional(WorkItemFields.moduleIds),
  sortOrder: Type.Optional(WorkItemFields.sortOrder),
  draft: Type.Optional(WorkItemFields.draft)
}, { additionalProperties: false })

export const UpdateWorkItemBody = Type.Object({
  title: Type.Optional(WorkItemFields.title),
  description: Type.Optional(WorkItemFields.description),
  descriptionJson: Type.Optional(WorkItemFields.descriptionJson),
  stateId: Type.Optional(WorkItemFields.stateId),
  priority: Type.Optional(WorkItemFields.priority),
  assigneeIds: Type.Optional(WorkItemFields.assigneeIds),
  labelIds: Type.Optional(WorkItemFields.labelIds),
  parentId: Type.Optional(WorkItemFields.parentId),
  startDate: Type.Optional(WorkItemFields.startDate),
  targetDate: Type.Optional(WorkItemFields.targetDate),
  estimatePointId: Type.Optional(WorkItemFields.estimatePointId),
  typeId: Type.Optional(WorkItemFields.typeId),
  cycleId: Type.Optional(WorkItemFields.cycleId),
  moduleIds: Type.Optional(WorkItemFields.moduleIds),
  sortOrder: Type.Optional(WorkItemFields.sortOrder),
  position: Type.Optional(Position),
  draft: Type.Optional(Type.Literal(false, { description: 'Publish a draft; an item cannot become a draft again' })),
  archived: Type.Optional(Type.Boolean({ description: 'Archive (only completed or cancelled items) or restore; an archived item takes no other change' }))
}, { additionalProperties: false, minProperties: 1 })

export const BulkPatchBody = Type.Object({
  ids: Type.Optional(Type.Array(Id, { minItems: 1, maxItems: TRACKER_LIMITS.bulkMax, uniqueItems: true, description: 'Items to give `patch`' })),
  patch: Type.Optional(UpdateWorkItemBody),
  items: Type.Optional(Type.Array(Type.Object({
    id: Id,
    version: Type.Optional(Type.Integer({ minimum: 1, description: 'Apply only at this version (If-Match for this item)' })),
    patch: UpdateWorkItemBody
  }, { additionalProperties: false }), { minItems: 1, maxItems: TRACKER_LIMITS.bulkMax, description: 'One patch per item' }))
}, { additionalProperties: false, description: 'Either `ids` with one `patch`, or `items` each with its own patch; at most 500 items' })

export const BulkItemResult = Type.Object({
  id: Type.String(),
  status: Type.Integer({ description: '200 when patched (or nothing to change), else the status a single PATCH would have answered' }),
  key: Type.Union([Type.String(), Type.Null()]),
  version: Type.Union([Type.Integer(), Type.Null()]),
  code: Type.Union([Type.String(), Type.Null()]),
  message: Type.Union([Type.String(), Type.Null()])
})
export const BulkPatchResult = Type.Object({
  results: Type.Array(BulkItemResult, { description: 'One per item, in the order asked' }),
  patched: Type.Integer(),
  failed: Type.Integer()
})

export const ListWorkItemsQuery = Type.Object({
  ...ListQuery.properties,
  filter: Type.Optional(Type.String({ maxLength: 8_192, description: 'A TrackerFilter as JSON' })),
  viewId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Apply a saved view: its filter and order (the request\'s filter is ANDed in, its orderBy wins)' })),
  orderBy: Type.Optional(OrderBy),
  updatedSince: Type.Optional(Type.String({ format: 'date-time', description: 'Sync: every item (archived and drafts of the caller included) changed after this instant, oldest change first, deleted ones as tombstones' }))
}, { additionalProperties: false })

export const CountWorkItemsQuery = Type.Object({
  filter: Type.Optional(Type.String({ maxLength: 8_192, description: 'A TrackerFilter as JSON' })),
  viewId: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  groupBy: Type.Optional(GroupByField)
}, { additionalProperties: false })
export const CountResult = Type.Object({
  total: Type.Integer(),
  groups: Type.Array(Type.Object({
    value: Type.Union([Type.String(), Type.Null()], { description: 'The group\'s id or word; null for items with none' }),
    count: Type.Integer()
  }), { description: 'Per value of `groupBy`, in the field\'s order; an item with several values (assignees, labels, modules) counts in each' })
})

// ---------------------------------------------------------------- around an item

export const Comment = Type.Object({
  id: Type.String(),
  itemId: Type.String(),
  authorId: Type.String(),
  format: Type.Union([Type.Literal('markdown'), Type.Literal('json')]),
  body: Type.Union([Type.String(), Type.Null()]),
  bodyJson: Type.Union([EditorDocument, Type.Null()]),
  text: Type.String(),
  reactions: Type.Array(Type.Object({ emoji: Type.String(), count: Type.Integer(), userIds: Type.Array(Type.String()) })),
  createdAt: DateTime,
  updatedAt: DateTime,
  editedAt: Type.Union([DateTime, Type.Null()])
}, { $id: 'TrackerComment' })
export const CommentBody = Type.Object({
  body: Type.Optional(Type.String({ minLength: 1, maxLength: TRACKER_LIMITS.bodyLength, description: 'Markdown; `<@userId>` mentions' })),
  bodyJson: Type.Optional(EditorDocument)
}, { additionalProperties: false, minProperties: 1, maxProperties: 1 })

// Checked as Unicode emoji by the service (a `\p{…}` pattern here would not be portable to the contract's tools).
export const Emoji = Type.String({ minLength: 1, maxLength: 16, description: 'One emoji (Unicode emoji characters, joiners and variation selectors)', examples: ['👍'] })
export const ReactionBody = Type.Object({ emoji: Emoji }, { additionalProperties: false })
export const ReactionSummary = Type.Object({ emoji: Type.String(), count: Type.Integer(), userIds: Type.Array(Type.String()) })

export const Link = Type.Object({
  id: Type.String(),
  itemId: Type.String(),
  url: Type.String(),
  title: Type.String(),
  createdBy: Type.String(),
  createdAt: DateTime
}, { $id: 'TrackerLink' })
export const LinkBody = Type.Object({
  url: Type.String({ minLength: 1, maxLength: 2048, format: 'uri', description: 'http or https' }),
  title: Type.Optional(Type.String({ maxLength: TRACKER_LIMITS.nameLength }))
}, { additionalProperties: false })

export const Relation = Type.Object({
  id: Type.String(),
  type: RelationType,
  itemId: Type.String({ description: 'The other item' }),
  key: Type.String({ description: 'The other item\'s key' }),
  title: Type.String(),
  stateGroup: StateGroup,
  createdBy: Type.String(),
  createdAt: DateTime
}, { $id: 'TrackerRelation' })
export const RelationBody = Type.Object({ type: RelationType, itemId: Id }, { additionalProperties: false })

export const Subscriber = Type.Object({
  userId: Type.String(),
  reason: Type.Union([Type.Literal('creator'), Type.Literal('assignee'), Type.Literal('commenter'), Type.Literal('mentioned'), Type.Literal('manual')]),
  createdAt: DateTime
}, { $id: 'TrackerSubscriber' })
export const SubscriberBody = Type.Object({ userId: Type.Optional(Id) }, { additionalProperties: false, description: 'Defaults to the caller; others may subscribe only members' })

export const Attachment = Type.Object({
  id: Type.String(),
  itemId: Type.String(),
  name: Type.String(),
  size: Type.Integer(),
  type: Type.String({ description: 'Sniffed from the bytes' }),
  sha256: Type.String(),
  createdBy: Type.String(),
  createdAt: DateTime
}, { $id: 'TrackerAttachment' })
export const StartAttachmentBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  size: Type.Integer({ minimum: 0, maximum: TRACKER_LIMITS.attachmentBytes }),
  type: Type.String({ minLength: 1, maxLength: 255 }),
  sha256: Type.Optional(Type.String({ pattern: '^[0-9a-f]{64}$' }))
}, { additionalProperties: false })

export const Activity = Type.Object({
  id: Type.String(),
  itemId: Type.String(),
  changeId: Type.String({ description: 'Shared by the entries of one write' }),
  field: Type.String({ description: 'The field that changed, or `created`, `comment`, `link`, `relation`, `attachment`' }),
  from: Type.Unknown(),
  to: Type.Unknown(),
  actorId: Type.String(),
  automation: Type.Boolean({ description: 'Whether an automation (auto-close, auto-archive, a state or cycle clean-up) made the change' }),
  at: DateTime
}, { $id: 'TrackerActivity' })

export type PriorityT = Static<typeof Priority>
export type RelationTypeT = Static<typeof RelationType>
export type IntakeStatusT = Static<typeof IntakeStatus>
export type IntakeInfoT = Static<typeof IntakeInfo>
export type EditorDocumentT = Static<typeof EditorDocument>
export type WorkItemT = Static<typeof WorkItem>
export type WorkItemTombstoneT = Static<typeof WorkItemTombstone>
export type CreateWorkItemBodyT = Static<typeof CreateWorkItemBody>
export type UpdateWorkItemBodyT = Static<typeof UpdateWorkItemBody>
export type BulkPatchBodyT = Static<typeof BulkPatchBody>
export type BulkItemResultT = Static<typeof BulkItemResult>
export type BulkPatchResultT = Static<typeof BulkPatchResult>
export type ListWorkItemsQueryT = Static<typeof ListWorkItemsQuery>
export type CountWorkItemsQueryT = Static<typeof CountWorkItemsQuery>
export type CountResultT = Static<typeof CountResult>
export type CommentT = Static<typeof Comment>
export type CommentBodyT = Static<typeof CommentBody>
export type ReactionSummaryT = Static<typeof ReactionSummary>
export type LinkT = Static<typeof Link>
export type LinkBodyT = Static<typeof LinkBody>
export type RelationT = Static<typeof Relation>
export type RelationBodyT = Static<typeof RelationBody>
export type SubscriberT = Static<typeof Subscriber>
export type AttachmentT = Static<typeof Attachment>
export type StartAttachmentBodyT = Static<typeof StartAttachmentBody>
export type ActivityT = Static<typeof Activity>

export const trackerWorkItemSchemas = [WorkItem, WorkItemTombstone, Comment, Link, Relation, Subscriber, Attachment, Activity]
