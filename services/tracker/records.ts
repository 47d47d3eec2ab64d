import type { WithId } from '../store/types.js'
import type { AutomationSettingsT, EstimateTypeT, ProjectFeaturesT, StateGroupT, TrackerRoleT } from '../../schemas/tracker.js'
import type { EditorDocumentT, IntakeStatusT, PriorityT, RelationTypeT } from '../../schemas/tracker-work-items.js'
import type { ModuleStatusT, ProgressT, ViewLayoutT } from '../../schemas/tracker-planning.js'
import type { GroupByFieldT, OrderByT, TrackerFilterT } from '../../schemas/tracker-filters.js'

/**
 * The documents the tracker keeps, one collection each. Every document names
 * its platform project and tracker project (`lpId`), so a project's purge is
 * a page of deletes per collection.
 */
export const TRACKER_COLLECTIONS = {
  projects: 'tracker_projects',
  members: 'tracker_members',
  counters: 'tracker_counters',
  states: 'tracker_states',
  labels: 'tracker_labels',
  issueTypes: 'tracker_issue_types',
  estimates: 'tracker_estimates',
  items: 'tracker_items',
  activity: 'tracker_activity',
  comments: 'tracker_comments',
  reactions: 'tracker_reactions',
  links: 'tracker_links',
  relations: 'tracker_relations',
  subscribers: 'tracker_subscribers',
  attachments: 'tracker_attachments',
  cycles: 'tracker_cycles',
  cycleDays: 'tracker_cycle_days',
  modules: 'tracker_modules',
  views: 'tracker_views',
  pages: 'tracker_pages',
  pageVersions: 'tracker_page_versions',
  idempotency: 'tracker_idempotency'
} as const

export type TrackerProjectRecord = WithId<{
  projectId: string
  name: string
  identifier: string
  /** The current identifier and every former one: a unique multikey index keeps each to one project. */
  identifiers: string[]
  description: string
  leadId: string | null
  defaultAssigneeId: string | null
  defaultStateId: string
  estimateId: string | null
  timezone: string
  visibility: 'public' | 'private'
  guestsSeeAllItems: boolean
  features: ProjectFeaturesT
  automation: AutomationSettingsT
  archivedAt: Date | null
  /** Set when a delete began; the project is gone for every reader from then and its purge follows. */
  deletedAt: Date | null
  createdBy: string
  createdAt: Date
  updatedAt: Date
  version: number
}>

export type MemberRecord = WithId<{ projectId: string, lpId: string, userId: string, role: TrackerRoleT, createdAt: Date, updatedAt: Date }>

export type StateRecord = WithId<{
  projectId: string
  lpId: string
  name: string
  nameKey: string
  color: string
  group: StateGroupT
  description: string
  sequence: number
  /** Set while a delete moves its items to the target: no new item may enter it. */
  deletingTo: string | null
  createdAt: Date
  updatedAt: Date
}>

export type LabelRecord = WithId<{
  projectId: string
  lpId: string
  name: string
  nameKey: string
  color: string
  description: string
  parentId: string | null
  sortOrder: number
  createdAt: Date
  updatedAt: Date
}>

export type IssueTypeRecord = WithId<{
  projectId: string
  lpId: string
  name: string
  nameKey: string
  description: string
  active: boolean
  createdAt: Date
  updatedAt: Date
}>

export type EstimateRecord = WithId<{
  projectId: string
  lpId: string
  name: string
  type: EstimateTypeT
  points: Array<{ id: string, key: number, value: string }>
  createdAt: Date
  updatedAt: Date
}>

export type ActivityEntry = { field: string, from: unknown, to: unknown }
export type Subscription = { userId: string, reason: 'creator' | 'assignee' | 'commenter' | 'mentioned' | 'manual' }

/**
 * The last write's effects, kept in the item by the same update that made
 * the write: its activity entries and the people it subscribes. They are
 * written out right after (ids derived from the change, so twice is once),
 * and by whoever next writes or reads the item's activity if that was cut
 * short.
 */
export type OutboxChange = {
  id: string
  at: Date
  actorId: string
  automation: boolean
  entries: ActivityEntry[]
  subscribe: Subscription[]
}

export type IntakeRecord = {
  status: IntakeStatusT
  snoozedUntil: Date | null
  duplicateOfId: string | null
  source: string
  decidedBy: string | null
  decidedAt: Date | null
}

export type ItemRecord = WithId<{
  projectId: string
  lpId: string
  /** The number in the key; the key's identifier is the project's current one. */
  seq: number
  title: string
  descriptionFormat: 'markdown' | 'json'
  description: string | null
  descriptionJson: EditorDocumentT | null
  descriptionText: string
  stateId: string
  /** The state's group, kept with the item so filters, counts and automations read one document. */
  stateGroup: StateGroupT
  priority: PriorityT
  /** 0 (urgent) … 4 (none): the order `priority` sorts in. */
  priorityRank: number
  assignees: string[]
  labelIds: string[]
  parentId: string | null
  startDate: string | null
  targetDate: string | null
  estimatePointId: string | null
  /** The point's number (points, or minutes), kept with the item so sums read one document. */
  estimate: number | null
  typeId: string | null
  cycleId: string | null
  moduleIds: string[]
  sortOrder: number
  archivedAt: Date | null
  draft: boolean
  completedAt: Date | null
  intake: IntakeRecord | null
  createdBy: string
  updatedBy: string
  createdAt: Date
  updatedAt: Date
  /** A deleted item stays as its own tombstone: its number stays taken and `updatedSince` reports it. */
  deletedAt: Date | null
  version: number
  outbox: OutboxChange | null
}>

export type ActivityRecord = WithId<{
  projectId: string
  lpId: string
  itemId: string
  changeId: string
  field: string
  from: unknown
  to: unknown
  actorId: string
  automation: boolean
  at: Date
}>

export type CommentRecord = WithId<{
  projectId: string
  lpId: string
  itemId: string
  authorId: string
  format: 'markdown' | 'json'
  body: string | null
  bodyJson: EditorDocumentT | null
  text: string
  mentions: string[]
  /** Whom the last edit mentioned that the comment did not before: whom the edit notifies. */
  newMentions?: string[]
  createdAt: Date
  updatedAt: Date
  editedAt: Date | null
}>

export type ReactionRecord = WithId<{
  projectId: string
  lpId: string
  itemId: string
  on: 'item' | 'comment'
  subjectId: string
  userId: string
  emoji: string
  createdAt: Date
}>

export type LinkRecord = WithId<{ projectId: string, lpId: string, itemId: string, url: string, title: string, createdBy: string, createdAt: Date }>

/**
 * One relation per pair of items, stored in one direction: `blocked_by`,
 * `start_before`, `finish_before`, `relates_to` or `duplicate` from `fromId`
 * to `toId`; the other side reads the reverse. `pair` (the two ids in order)
 * is unique, so a pair is related once whichever side asks.
 */
export type RelationRecord = WithId<{
  projectId: string
  lpId: string
  fromId: string
  toId: string
  type: RelationTypeT
  pair: string
  createdBy: string
  createdAt: Date
}>

export type SubscriberRecord = WithId<{ projectId: string, lpId: string, itemId: string, userId: string, reason: Subscription['reason'], createdAt: Date }>

export type AttachmentRecord = WithId<{
  projectId: string
  lpId: string
  itemId: string
  sessionId: string
  name: string
  size: number
  type: string
  sha256: string
  createdBy: string
  createdAt: Date
}>

export type CycleRecord = WithId<{
  projectId: string
  lpId: string
  name: string
  description: string
  startDate: string | null
  endDate: string | null
  ownerId: string
  progressSnapshot: ProgressT | null
  transferredTo: string | null
  deletedAt: Date | null
  createdAt: Date
  updatedAt: Date
  version: number
}>

/** A day held by a cycle: `_id` is `<lpId>:<day>`, so two cycles cannot hold one day. */
export type CycleDayRecord = WithId<{ lpId: string, cycleId: string, day: string, claimedAt: Date }>

export type ModuleRecord = WithId<{
  projectId: string
  lpId: string
  name: string
  nameKey: string
  description: string
  status: ModuleStatusT
  leadId: string | null
  memberIds: string[]
  startDate: string | null
  targetDate: string | null
  links: Array<{ id: string, url: string, title: string }>
  createdBy: string
  deletedAt: Date | null
  createdAt: Date
  updatedAt: Date
  version: number
}>

export type ViewRecord = WithId<{
  projectId: string
  lpId: string
  name: string
  description: string
  filter: TrackerFilterT | null
  layout: ViewLayoutT
  groupBy: GroupByFieldT | null
  subGroupBy: GroupByFieldT | null
  orderBy: OrderByT
  displayProperties: Record<string, boolean>
  access: 'private' | 'public'
  locked: boolean
  ownerId: string
  createdAt: Date
  updatedAt: Date
  version: number
}>

/**
 * A page and its open version: edits by `session.authorId` within the merge
 * window change the page in place; any other edit first closes the open
 * version into `tracker_page_versions`.
 */
export type PageRecord = WithId<{
  projectId: string
  lpId: string
  title: string
  content: string
  text: string
  parentId: string | null
  ownerId: string
  access: 'private' | 'public'
  lockedBy: string | null
  archivedAt: Date | null
  session: { authorId: string, startedAt: Date, lastAt: Date }
  createdAt: Date
  updatedAt: Date
  updatedBy: string
  version: number
}>

export type PageVersionRecord = WithId<{
  projectId: string
  lpId: string
  pageId: string
  title: string
  content: string
  authorId: string
  startedAt: Date
  savedAt: Date
}>
