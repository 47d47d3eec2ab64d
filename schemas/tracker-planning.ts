import { Type, type Static } from '@sinclair/typebox'
import { DateOnly, ListQuery, TRACKER_LIMITS } from './tracker.js'
import { DateTime, Id } from './common.js'
import { GroupByField, OrderBy, TrackerFilter, type TrackerFilterT } from './tracker-filters.js'
import { IntakeStatus, Priority, EditorDocument } from './tracker-work-items.js'

/** The tracker family's contracts, part 3: cycles, modules, views, intake and pages. */

export const MODULE_STATUSES = ['backlog', 'planned', 'in-progress', 'paused', 'completed', 'cancelled'] as const
export const VIEW_LAYOUTS = ['list', 'kanban', 'calendar', 'spreadsheet', 'gantt'] as const
export const CYCLE_STATUSES = ['draft', 'upcoming', 'current', 'completed'] as const

const Name = Type.String({ minLength: 1, maxLength: TRACKER_LIMITS.nameLength })
const ShortText = Type.String({ maxLength: TRACKER_LIMITS.shortTextLength })
const Nullable = <T extends Parameters<typeof Type.Union>[0][number]>(schema: T) => Type.Union([schema, Type.Null()])

export const Progress = Type.Object({
  total: Type.Integer({ description: 'Items, cancelled ones included' }),
  backlog: Type.Integer(),
  unstarted: Type.Integer(),
  started: Type.Integer(),
  completed: Type.Integer(),
  cancelled: Type.Integer(),
  totalPoints: Type.Number({ description: 'Sum of the items\' estimates (points or minutes); 0 with categories or none' }),
  completedPoints: Type.Number()
})

// ---------------------------------------------------------------- cycles

export const CycleStatus = Type.Union(CYCLE_STATUSES.map((status) => Type.Literal(status)), {
  description: 'From the dates, read in the project\'s timezone: `draft` has none, `upcoming` starts after today, `current` holds today, `completed` ended before today (and is read-only)'
})
export const Cycle = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  startDate: Type.Union([DateOnly, Type.Null()]),
  endDate: Type.Union([DateOnly, Type.Null()], { description: 'Inclusive' }),
  status: CycleStatus,
  ownerId: Type.String(),
  progress: Progress,
  progressSnapshot: Type.Union([Progress, Type.Null()], { description: 'Frozen when unfinished items were transferred out; a completed cycle shows it as its final progress' }),
  transferredTo: Type.Union([Type.String(), Type.Null()]),
  createdAt: DateTime,
  updatedAt: DateTime,
  version: Type.Integer()
}, { $id: 'TrackerCycle' })
export const CreateCycleBody = Type.Object({
  name: Name,
  description: Type.Optional(ShortText),
  startDate: Type.Optional(Nullable(DateOnly)),
  endDate: Type.Optional(Nullable(DateOnly))
}, { additionalProperties: false, description: 'Give both dates or neither (a draft cycle); cycles of one project may not share a day' })
export const UpdateCycleBody = Type.Partial(CreateCycleBody, { additionalProperties: false, minProperties: 1 })
export const CycleItemsBody = Type.Object({
  itemIds: Type.Array(Id, { minItems: 1, maxItems: TRACKER_LIMITS.bulkMax, uniqueItems: true, description: 'Items to put in the cycle (leaving any other cycle)' })
}, { additionalProperties: false })
export const TransferBody = Type.Object({ targetCycleId: Id }, { additionalProperties: false })
export const TransferResult = Type.Object({
  moved: Type.Integer(),
  snapshot: Progress
})
export const Burndown = Type.Object({
  cycleId: Type.String(),
  unit: Type.Union([Type.Literal('items'), Type.Literal('points')]),
  startDate: DateOnly,
  endDate: DateOnly,
  days: Type.Array(Type.Object({
    date: DateOnly,
    scope: Type.Number({ description: 'What the cycle held at the end of the day (cancelled items aside)' }),
    completed: Type.Number(),
    remaining: Type.Number(),
    ideal: Type.Number({ description: 'From the scope on the first day down to 0 on the last' }),
    added: Type.Number({ description: 'Scope that came in that day' }),
    removed: Type.Number({ description: 'Scope that left that day' })
  }), { description: 'One per day from the start through today or the end, whichever is earlier' })
})
export const BurndownQuery = Type.Object({ unit: Type.Optional(Type.Union([Type.Literal('items'), Type.Literal('points')], { default: 'items' })) }, { additionalProperties: false })

// ---------------------------------------------------------------- modules

export const ModuleStatus = Type.Union(MODULE_STATUSES.map((status) => Type.Literal(status)))
export const ModuleLink = Type.Object({ id: Type.String(), url: Type.String(), title: Type.String() })
export const Module = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  status: ModuleStatus,
  leadId: Type.Union([Type.String(), Type.Null()]),
  memberIds: Type.Array(Type.String()),
  startDate: Type.Union([DateOnly, Type.Null()]),
  targetDate: Type.Union([DateOnly, Type.Null()]),
  links: Type.Array(ModuleLink),
  progress: Progress,
  createdBy: Type.String(),
  createdAt: DateTime,
  updatedAt: DateTime,
  version: Type.Integer()
}, { $id: 'TrackerModule' })
const ModuleLinkBody = Type.Object({
  url: Type.String({ minLength: 1, maxLength: 2048, format: 'uri' }),
  title: Type.Optional(Type.String({ maxLength: TRACKER_LIMITS.nameLength }))
}, { additionalProperties: false })
export const CreateModuleBody = Type.Object({
  name: Name,
  description: Type.Optional(ShortText),
  status: Type.Optional(ModuleStatus),
  leadId: Type.Optional(Nullable(Id)),
  memberIds: Type.Optional(Type.Array(Id, { maxItems: TRACKER_LIMITS.modulesMembers, uniqueItems: true })),
  startDate: Type.Optional(Nullable(DateOnly)),
  targetDate: Type.Optional(Nullable(DateOnly)),
  links: Type.Optional(Type.Array(ModuleLinkBody, { maxItems: TRACKER_LIMITS.moduleLinks, description: 'Replaces the whole list' }))
}, { additionalProperties: false })
export const UpdateModuleBody = Type.Partial(CreateModuleBody, { additionalProperties: false, minProperties: 1 })
export const ModuleItemsBody = Type.Object({
  add: Type.Optional(Type.Array(Id, { maxItems: TRACKER_LIMITS.bulkMax, uniqueItems: true })),
  remove: Type.Optional(Type.Array(Id, { maxItems: TRACKER_LIMITS.bulkMax, uniqueItems: true }))
}, { additionalProperties: false, minProperties: 1 })

// ---------------------------------------------------------------- views

export const ViewLayout = Type.Union(VIEW_LAYOUTS.map((layout) => Type.Literal(layout)))
export const SavedView = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  filter: Type.Union([Type.Ref(TrackerFilter), Type.Null()]),
  layout: ViewLayout,
  groupBy: Type.Union([GroupByField, Type.Null()]),
  subGroupBy: Type.Union([GroupByField, Type.Null()]),
  orderBy: OrderBy,
  displayProperties: Type.Record(Type.String(), Type.Boolean(), { description: 'Which item properties the view shows' }),
  access: Type.Union([Type.Literal('private'), Type.Literal('public')], { description: '`private`: only its owner sees it' }),
  locked: Type.Boolean({ description: 'A locked view changes only by its owner or a project admin (who may unlock it)' }),
  ownerId: Type.String(),
  createdAt: DateTime,
  updatedAt: DateTime,
  version: Type.Integer()
}, { $id: 'TrackerView' })
export const CreateViewBody = Type.Object({
  name: Name,
  description: Type.Optional(ShortText),
  filter: Type.Optional(Type.Union([Type.Unknown({ description: 'A TrackerFilter' }), Type.Null()])),
  layout: Type.Optional(ViewLayout),
  groupBy: Type.Optional(Type.Union([GroupByField, Type.Null()])),
  subGroupBy: Type.Optional(Type.Union([GroupByField, Type.Null()])),
  orderBy: Type.Optional(OrderBy),
  displayProperties: Type.Optional(Type.Record(Type.String({ pattern: '^[A-Za-z][A-Za-z0-9_]{0,63}$' }), Type.Boolean(), { maxProperties: 64 })),
  access: Type.Optional(Type.Union([Type.Literal('private'), Type.Literal('public')])),
  locked: Type.Optional(Type.Boolean())
}, { additionalProperties: false })
export const UpdateViewBody = Type.Partial(CreateViewBody, { additionalProperties: false, minProperties: 1 })

// ---------------------------------------------------------------- intake

export const CreateIntakeBody = Type.Object({
  title: Type.String({ minLength: 1, maxLength: TRACKER_LIMITS.titleLength }),
  description: Type.Optional(Type.String({ maxLength: TRACKER_LIMITS.bodyLength })),
  descriptionJson: Type.Optional(EditorDocument),
  priority: Type.Optional(Priority),
  source: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Where it came from; defaults to `in-app`' }))
}, { additionalProperties: false })
export const IntakeDecisionBody = Type.Object({
  status: Type.Union([Type.Literal('accepted'), Type.Literal('declined'), Type.Literal('snoozed'), Type.Literal('duplicate'), Type.Literal('pending')]),
  stateId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'accepted: the state to move to; defaults to the project\'s default state' })),
  snoozedUntil: Type.Optional(Type.String({ format: 'date-time', description: 'snoozed: until when (it is pending again after)' })),
  duplicateOfId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'duplicate: the item it duplicates' }))
}, { additionalProperties: false })
export const ListIntakeQuery = Type.Object({
  ...ListQuery.properties,
  status: Type.Optional(IntakeStatus)
}, { additionalProperties: false })

// ---------------------------------------------------------------- pages

export const TrackerPage = Type.Object({
  id: Type.String(),
  title: Type.String(),
  content: Type.String({ description: 'Markdown' }),
  text: Type.String({ description: 'Plain text derived from the content' }),
  parentId: Type.Union([Type.String(), Type.Null()]),
  ownerId: Type.String(),
  access: Type.Union([Type.Literal('private'), Type.Literal('public')]),
  locked: Type.Boolean({ description: 'A locked page refuses changes with 423 until unlocked' }),
  lockedBy: Type.Union([Type.String(), Type.Null()]),
  archivedAt: Type.Union([DateTime, Type.Null()]),
  createdAt: DateTime,
  updatedAt: DateTime,
  updatedBy: Type.String(),
  version: Type.Integer()
}, { $id: 'TrackerPage' })
export const CreatePageBody = Type.Object({
  title: Type.String({ maxLength: TRACKER_LIMITS.nameLength }),
  content: Type.Optional(Type.String({ maxLength: TRACKER_LIMITS.bodyLength })),
  parentId: Type.Optional(Nullable(Id)),
  access: Type.Optional(Type.Union([Type.Literal('private'), Type.Literal('public')]))
}, { additionalProperties: false })
export const UpdatePageBody = Type.Partial(Type.Object({
  title: Type.String({ maxLength: TRACKER_LIMITS.nameLength }),
  content: Type.String({ maxLength: TRACKER_LIMITS.bodyLength }),
  parentId: Nullable(Id),
  access: Type.Union([Type.Literal('private'), Type.Literal('public')]),
  locked: Type.Boolean(),
  archived: Type.Boolean()
}), { additionalProperties: false, minProperties: 1 })
export const PageVersion = Type.Object({
  id: Type.String(),
  pageId: Type.String(),
  title: Type.String(),
  content: Type.String(),
  authorId: Type.String(),
  startedAt: DateTime,
  savedAt: DateTime,
  current: Type.Boolean({ description: 'The page as it is now' })
}, { $id: 'TrackerPageVersion' })
export const ListPagesQuery = Type.Object({
  ...ListQuery.properties,
  parentId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Children of this page; top-level pages when absent' })),
  archived: Type.Optional(Type.Boolean())
}, { additionalProperties: false })

export type ProgressT = Static<typeof Progress>
export type CycleT = Static<typeof Cycle>
export type CycleStatusT = Static<typeof CycleStatus>
export type CreateCycleBodyT = Static<typeof CreateCycleBody>
export type UpdateCycleBodyT = Static<typeof UpdateCycleBody>
export type TransferResultT = Static<typeof TransferResult>
export type BurndownT = Static<typeof Burndown>
export type ModuleT = Static<typeof Module>
export type ModuleStatusT = Static<typeof ModuleStatus>
export type CreateModuleBodyT = Static<typeof CreateModuleBody>
export type UpdateModuleBodyT = Static<typeof UpdateModuleBody>
export type ModuleItemsBodyT = Static<typeof ModuleItemsBody>
export type SavedViewT = Omit<Static<typeof SavedView>, 'filter'> & { filter: TrackerFilterT | null }
export type CreateViewBodyT = Static<typeof CreateViewBody>
export type UpdateViewBodyT = Static<typeof UpdateViewBody>
export type ViewLayoutT = Static<typeof ViewLayout>
export type CreateIntakeBodyT = Static<typeof CreateIntakeBody>
export type IntakeDecisionBodyT = Static<typeof IntakeDecisionBody>
export type ListIntakeQueryT = Static<typeof ListIntakeQuery>
export type TrackerPageT = Static<typeof TrackerPage>
export type CreatePageBodyT = Static<typeof CreatePageBody>
export type UpdatePageBodyT = Static<typeof UpdatePageBody>
export type PageVersionT = Static<typeof PageVersion>
export type ListPagesQueryT = Static<typeof ListPagesQuery>

export const trackerPlanningSchemas = [Cycle, Module, SavedView, TrackerPage, PageVersion]
