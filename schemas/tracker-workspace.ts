import { Type, type Static } from '@sinclair/typebox'
import { Created, Envelope } from './envelope.js'
import { DateTime, Deleted, Id } from './common.js'
import { DateOnly, ListQuery, Page, TRACKER_LIMITS, TrackerRole } from './tracker.js'
import { OrderBy, TrackerFilter, type TrackerFilterT } from './tracker-filters.js'
import { Progress } from './tracker-planning.js'
import { Activity, Priority, WorkItem } from './tracker-work-items.js'

/**
 * The tracker's workspace level (the platform project): who can be assigned,
 * the activity across tracker projects, each person's stickies, drafts,
 * recents and favorites, saved filters across projects and the cycles
 * running now.
 */

export const WORKSPACE_LIMITS = {
  stickiesPerUser: 200,
  stickyLength: 10_000,
  draftsPerUser: 500,
  /** Recents kept per person: older ones drop off as new ones come. */
  recentsPerUser: 50,
  favoritesPerUser: 200,
  workspaceViews: 200,
  /** Activity entries a feed page reads at most while filling itself (docs/tracker.md, "Activity across projects"). */
  activityScan: 2_000
} as const

const WorkspaceParams = { projectId: Id }

// ---------------------------------------------------------------- members

export const WorkspaceMember = Type.Object({
  userId: Type.String(),
  name: Type.Union([Type.String(), Type.Null()]),
  email: Type.Union([Type.String(), Type.Null()]),
  projects: Type.Array(Type.Object({ lpId: Type.String(), role: TrackerRole }), {
    description: 'The tracker projects the caller sees that they work in, and their role in each (public projects take everyone as members)'
  })
}, { $id: 'TrackerWorkspaceMember' })

// ---------------------------------------------------------------- activity

export const WorkspaceActivity = Type.Object({
  ...Activity.properties,
  lpId: Type.String({ description: 'The tracker project' })
}, { $id: 'TrackerWorkspaceActivity' })

export const WorkspaceActivityQuery = Type.Object({
  ...ListQuery.properties,
  filter: Type.Optional(Type.String({ maxLength: 8_192, description: 'A TrackerFilter as JSON, over the items the entries are about' }))
}, { additionalProperties: false })

// ---------------------------------------------------------------- stickies

export const STICKY_COLORS = ['gray', 'peach', 'pink', 'orange', 'green', 'light-blue', 'dark-blue', 'purple'] as const
const StickyColor = Type.Union(STICKY_COLORS.map((color) => Type.Literal(color)))
const SortOrder = Type.Number({ description: 'Where it stands in the caller\'s order (ascending); new ones go first' })

export const Sticky = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String({ description: 'Markdown' }),
  color: StickyColor,
  sortOrder: SortOrder,
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'TrackerSticky' })

export const CreateStickyBody = Type.Object({
  name: Type.Optional(Type.String({ maxLength: 255 })),
  description: Type.Optional(Type.String({ maxLength: WORKSPACE_LIMITS.stickyLength })),
  color: Type.Optional(StickyColor),
  sortOrder: Type.Optional(SortOrder)
}, { additionalProperties: false })

export const UpdateStickyBody = Type.Object({
  name: Type.Optional(Type.String({ maxLength: 255 })),
  description: Type.Optional(Type.String({ maxLength: WORKSPACE_LIMITS.stickyLength })),
  color: Type.Optional(StickyColor),
  sortOrder: Type.Optional(SortOrder)
}, { additionalProperties: false, minProperties: 1 })

export const StickyParams = Type.Object({ ...WorkspaceParams, stickyId: Id })

// ---------------------------------------------------------------- drafts

// A draft is a work item in waiting: it holds what a work item's title and description may hold.
const DraftFields = {
  title: Type.String({ minLength: 1, maxLength: TRACKER_LIMITS.titleLength }),
  description: Type.String({ maxLength: TRACKER_LIMITS.bodyLength, description: 'Markdown' }),
  priority: Priority,
  startDate: Type.Union([DateOnly, Type.Null()]),
  targetDate: Type.Union([DateOnly, Type.Null()])
}

export const Draft = Type.Object({
  id: Type.String(),
  ...DraftFields,
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'TrackerDraft' })

export const CreateDraftBody = Type.Object({
  title: DraftFields.title,
  description: Type.Optional(DraftFields.description),
  priority: Type.Optional(DraftFields.priority),
  startDate: Type.Optional(DraftFields.startDate),
  targetDate: Type.Optional(DraftFields.targetDate)
}, { additionalProperties: false })

export const UpdateDraftBody = Type.Object({
  title: Type.Optional(DraftFields.title),
  description: Type.Optional(DraftFields.description),
  priority: Type.Optional(DraftFields.priority),
  startDate: Type.Optional(DraftFields.startDate),
  targetDate: Type.Optional(DraftFields.targetDate)
}, { additionalProperties: false, minProperties: 1 })

export const PromoteDraftBody = Type.Object({
  lpId: Type.String({ minLength: 1, maxLength: 64, description: 'The tracker project the work item is made in' })
}, { additionalProperties: false })

export const DraftParams = Type.Object({ ...WorkspaceParams, draftId: Id })

// ---------------------------------------------------------------- recents and favorites

export const RECENT_KINDS = ['workItem', 'page', 'view', 'cycle', 'module'] as const
export const FAVORITE_KINDS = ['project', 'view', 'cycle', 'module', 'page'] as const
export type RecentKindT = typeof RECENT_KINDS[number]
export type FavoriteKindT = typeof FAVORITE_KINDS[number]

export const Recent = Type.Object({
  kind: Type.Union(RECENT_KINDS.map((kind) => Type.Literal(kind))),
  lpId: Type.String({ description: 'The tracker project it is in' }),
  entityId: Type.String(),
  openedAt: DateTime
}, { $id: 'TrackerRecent' })

export const Favorite = Type.Object({
  id: Type.String(),
  kind: Type.Union(FAVORITE_KINDS.map((kind) => Type.Literal(kind))),
  lpId: Type.String({ description: 'The tracker project it is in (a project\'s own id for a project)' }),
  entityId: Type.String(),
  sortOrder: SortOrder,
  createdAt: DateTime
}, { $id: 'TrackerFavorite' })

export const CreateFavoriteBody = Type.Object({
  kind: Type.Union(FAVORITE_KINDS.map((kind) => Type.Literal(kind))),
  lpId: Type.String({ minLength: 1, maxLength: 64 }),
  entityId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Required but for a project, whose id is `lpId`' }))
}, { additionalProperties: false })

export const ReorderFavoriteBody = Type.Object({ sortOrder: SortOrder }, { additionalProperties: false })

export const FavoriteParams = Type.Object({ ...WorkspaceParams, favoriteId: Id })

// ---------------------------------------------------------------- workspace views

export const WorkspaceView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  filter: Type.Union([Type.Ref(TrackerFilter), Type.Null()]),
  orderBy: OrderBy,
  access: Type.Union([Type.Literal('private'), Type.Literal('public')]),
  locked: Type.Boolean(),
  ownerId: Type.String(),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'TrackerWorkspaceView' })

export const CreateWorkspaceViewBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 255 }),
  description: Type.Optional(Type.String({ maxLength: 2_000 })),
  filter: Type.Optional(Type.Union([Type.Unknown({ description: 'A TrackerFilter, checked by the grammar itself' }), Type.Null()])),
  orderBy: Type.Optional(OrderBy),
  access: Type.Optional(Type.Union([Type.Literal('private'), Type.Literal('public')], { description: 'Public views need `tracker.write`' })),
  locked: Type.Optional(Type.Boolean())
}, { additionalProperties: false })

export const UpdateWorkspaceViewBody = Type.Object({
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  description: Type.Optional(Type.String({ maxLength: 2_000 })),
  filter: Type.Optional(Type.Union([Type.Unknown({ description: 'A TrackerFilter, checked by the grammar itself' }), Type.Null()])),
  orderBy: Type.Optional(OrderBy),
  access: Type.Optional(Type.Union([Type.Literal('private'), Type.Literal('public')])),
  locked: Type.Optional(Type.Boolean())
}, { additionalProperties: false, minProperties: 1 })

export const WorkspaceViewParams = Type.Object({ ...WorkspaceParams, workspaceViewId: Id })

export const WorkspaceItem = Type.Object({
  ...WorkItem.properties,
  lpId: Type.String({ description: 'The tracker project' })
}, { $id: 'TrackerWorkspaceItem' })

// ---------------------------------------------------------------- active cycles

export const ActiveCycle = Type.Object({
  id: Type.String(),
  lpId: Type.String(),
  projectIdentifier: Type.String(),
  name: Type.String(),
  startDate: Type.String(),
  endDate: Type.String(),
  ownerId: Type.String(),
  progress: Progress
}, { $id: 'TrackerActiveCycle' })

export const WorkspacePath = Type.Object(WorkspaceParams)

export const WorkspaceResponses = {
  members: { 200: Envelope(Page(Type.Ref(WorkspaceMember))) },
  activity: { 200: Envelope(Page(Type.Ref(WorkspaceActivity))) },
  stickyList: { 200: Envelope(Page(Type.Ref(Sticky))) },
  sticky: { 200: Envelope(Type.Ref(Sticky)) },
  stickyCreated: { 201: Created(Type.Ref(Sticky)) },
  draftList: { 200: Envelope(Page(Type.Ref(Draft))) },
  draft: { 200: Envelope(Type.Ref(Draft)) },
  draftCreated: { 201: Created(Type.Ref(Draft)) },
  promoted: { 200: Envelope(Type.Ref(WorkItem)) },
  recents: { 200: Envelope(Page(Type.Ref(Recent))) },
  favoriteList: { 200: Envelope(Page(Type.Ref(Favorite))) },
  favorite: { 200: Envelope(Type.Ref(Favorite)) },
  favoriteCreated: { 201: Created(Type.Ref(Favorite)) },
  viewList: { 200: Envelope(Page(Type.Ref(WorkspaceView))) },
  view: { 200: Envelope(Type.Ref(WorkspaceView)) },
  viewCreated: { 201: Created(Type.Ref(WorkspaceView)) },
  viewItems: { 200: Envelope(Page(Type.Ref(WorkspaceItem))) },
  activeCycles: { 200: Envelope(Page(Type.Ref(ActiveCycle))) },
  deleted: { 200: Envelope(Deleted) }
}

export type WorkspaceMemberT = Static<typeof WorkspaceMember>
export type WorkspaceActivityT = Static<typeof WorkspaceActivity>
export type WorkspaceActivityQueryT = Static<typeof WorkspaceActivityQuery>
export type StickyT = Static<typeof Sticky>
export type CreateStickyBodyT = Static<typeof CreateStickyBody>
export type UpdateStickyBodyT = Static<typeof UpdateStickyBody>
export type DraftT = Static<typeof Draft>
export type CreateDraftBodyT = Static<typeof CreateDraftBody>
export type UpdateDraftBodyT = Static<typeof UpdateDraftBody>
export type RecentT = Static<typeof Recent>
export type FavoriteT = Static<typeof Favorite>
export type CreateFavoriteBodyT = Static<typeof CreateFavoriteBody>
export type WorkspaceViewT = Omit<Static<typeof WorkspaceView>, 'filter'> & { filter: TrackerFilterT | null }
export type CreateWorkspaceViewBodyT = Static<typeof CreateWorkspaceViewBody>
export type UpdateWorkspaceViewBodyT = Static<typeof UpdateWorkspaceViewBody>
export type WorkspaceItemT = Static<typeof WorkspaceItem>
export type ActiveCycleT = Static<typeof ActiveCycle>

export const trackerWorkspaceSchemas = [WorkspaceMember, WorkspaceActivity, Sticky, Draft, Recent, Favorite, WorkspaceView, WorkspaceItem, ActiveCycle]
