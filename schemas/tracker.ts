import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { DateTime, Id } from './common.js'

/**
 * The tracker family's contracts, part 1: tracker projects, their members and
 * settings (states, labels, issue types, estimates, automations), the atoms
 * the other tracker schema files share, and every limit the services enforce.
 */

export const TRACKER_LIMITS = {
  /** Tracker projects in one platform project. */
  projectsPerPlatformProject: 200,
  identifierLength: 12,
  nameLength: 255,
  titleLength: 500,
  /** Characters of a description, comment or page body (markdown, or editor JSON as text). */
  bodyLength: 200_000,
  shortTextLength: 2_000,
  membersPerProject: 2_000,
  statesPerProject: 50,
  labelsPerProject: 500,
  issueTypesPerProject: 50,
  estimatesPerProject: 10,
  pointsPerEstimate: 30,
  assigneesPerItem: 20,
  labelsPerItem: 50,
  modulesPerItem: 50,
  linksPerItem: 100,
  attachmentsPerItem: 100,
  /** How deep sub-items nest (an item, its parent, … up to this many levels). */
  itemDepth: 10,
  /** How deep pages nest. */
  pageDepth: 10,
  pageDefault: 50,
  pageMax: 200,
  bulkMax: 500,
  /** Days a cycle may span (inclusive). */
  cycleDays: 366,
  modulesMembers: 100,
  moduleLinks: 50,
  viewsPerProject: 500,
  /** Edits of one page by one author within this long of their last edit merge into one version. */
  pageVersionMergeMs: 5 * 60_000,
  automationMonthsMax: 12,
  /** How long an Idempotency-Key is remembered. */
  idempotencyTtlMs: 24 * 60 * 60_000,
  idempotencyKeyLength: 255,
  attachmentBytes: 100 * 1024 * 1024
} as const

export const TRACKER_ROLES = ['admin', 'member', 'guest'] as const
export const STATE_GROUPS = ['backlog', 'unstarted', 'started', 'completed', 'cancelled', 'triage'] as const
/** The groups a client may create states in: triage states exist for intake and are made by the server. */
export const VISIBLE_STATE_GROUPS = ['backlog', 'unstarted', 'started', 'completed', 'cancelled'] as const
export const ESTIMATE_TYPES = ['points', 'categories', 'time'] as const
export const PROJECT_FEATURES = ['cycles', 'modules', 'views', 'pages', 'intake'] as const

export const DateOnly = Type.String({ format: 'date', pattern: '^\\d{4}-\\d{2}-\\d{2}$', description: 'A calendar day, `YYYY-MM-DD`, read in the tracker project\'s timezone' })
export const Nullable = <T extends ReturnType<typeof Type.String>>(schema: T) => Type.Union([schema, Type.Null()])
const Color = Type.String({ pattern: '^#[0-9a-fA-F]{6}$', description: 'A hex color, `#rrggbb`', examples: ['#3b82f6'] })
const Name = Type.String({ minLength: 1, maxLength: TRACKER_LIMITS.nameLength })
const ShortText = Type.String({ maxLength: TRACKER_LIMITS.shortTextLength })

export const TrackerRole = Type.Union(TRACKER_ROLES.map((role) => Type.Literal(role)), {
  description: '`admin` configures the tracker project and may change or delete anyone\'s work; `member` works on every item; `guest` sees only items they created or are assigned (unless the project lets guests see all) and works only on those'
})
export const StateGroup = Type.Union(STATE_GROUPS.map((group) => Type.Literal(group)), { description: '`triage` holds intake items until they are accepted and is hidden from boards' })
export const EstimateType = Type.Union(ESTIMATE_TYPES.map((type) => Type.Literal(type)), { description: '`points` and `time` (minutes) have numbers that add up; `categories` (S, M, L) do not' })

/** Ids a list answer continues from. */
export const ListQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: TRACKER_LIMITS.pageMax, default: TRACKER_LIMITS.pageDefault })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'The `nextCursor` of the previous page; valid only with the same filter and order' }))
}, { additionalProperties: false })
export type ListQueryT = Static<typeof ListQuery>

export const Page = <T extends TSchema>(item: T) => Type.Object({
  items: Type.Array(item),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last page' })
})
export interface PageOf<T> { items: T[], nextCursor: string | null }

// ---------------------------------------------------------------- tracker projects

export const ProjectFeatures = Type.Object({
  cycles: Type.Boolean(),
  modules: Type.Boolean(),
  views: Type.Boolean(),
  pages: Type.Boolean(),
  intake: Type.Boolean()
}, { additionalProperties: false, description: 'Which parts of the tracker project are switched on; a switched-off part refuses its routes with 409' })

export const TrackerProject = Type.Object({
  id: Type.String(),
  name: Type.String(),
  identifier: Type.String({ description: 'Upper case, at most 12 letters and digits; work item keys are `<identifier>-<number>`', examples: ['WEB'] }),
  formerIdentifiers: Type.Array(Type.String(), { description: 'Identifiers this project had before: keys using them still resolve, and no other project may take them' }),
  description: Type.String(),
  leadId: Type.Union([Type.String(), Type.Null()]),
  defaultAssigneeId: Type.Union([Type.String(), Type.Null()], { description: 'Assigned to new work items created without assignees' }),
  defaultStateId: Type.String({ description: 'The state new work items start in; exactly one per project' }),
  estimateId: Type.Union([Type.String(), Type.Null()], { description: 'The estimate system items use' }),
  timezone: Type.String({ description: 'IANA timezone: cycle status, relative dates and burndown days are read in it', examples: ['Europe/Berlin'] }),
  visibility: Type.Union([Type.Literal('public'), Type.Literal('private')], { description: '`public`: every caller with `tracker.read` sees it and works as a member; `private`: members only' }),
  guestsSeeAllItems: Type.Boolean({ description: 'Guests see every item, not only those they created or are assigned' }),
  features: ProjectFeatures,
  archivedAt: Type.Union([DateTime, Type.Null()], { description: 'An archived project is read-only until restored' }),
  role: TrackerRole,
  createdBy: Type.String(),
  createdAt: DateTime,
  updatedAt: DateTime,
  version: Type.Integer({ description: 'Sent as the ETag; send it back in If-Match' })
}, { $id: 'TrackerProject' })

const Identifier = Type.String({ minLength: 1, maxLength: TRACKER_LIMITS.identifierLength, pattern: '^[A-Za-z][A-Za-z0-9]*$', description: 'Letters and digits, starting with a letter; stored upper case' })
const Timezone = Type.String({ minLength: 1, maxLength: 64, description: 'IANA timezone name; defaults to UTC' })
const ProjectFeaturesPatch = Type.Partial(ProjectFeatures, { additionalProperties: false })

export const CreateTrackerProjectBody = Type.Object({
  name: Name,
  identifier: Identifier,
  description: Type.Optional(ShortText),
  leadId: Type.Optional(Type.Union([Id, Type.Null()])),
  defaultAssigneeId: Type.Optional(Type.Union([Id, Type.Null()])),
  timezone: Type.Optional(Timezone),
  visibility: Type.Optional(Type.Union([Type.Literal('public'), Type.Literal('private')], { default: 'public' })),
  guestsSeeAllItems: Type.Optional(Type.Boolean()),
  features: Type.Optional(ProjectFeaturesPatch)
}, { additionalProperties: false })

export const UpdateTrackerProjectBody = Type.Partial(Type.Object({
  name: Name,
  identifier: Type.String({ ...Identifier, description: 'Renaming keeps the keys of the old identifier resolvable' }),
  description: ShortText,
  leadId: Type.Union([Id, Type.Null()]),
  defaultAssigneeId: Type.Union([Id, Type.Null()]),
  defaultStateId: Id,
  estimateId: Type.Union([Id, Type.Null()], { description: 'Switching clears estimates of items that used the former system' }),
  timezone: Timezone,
  visibility: Type.Union([Type.Literal('public'), Type.Literal('private')]),
  guestsSeeAllItems: Type.Boolean(),
  features: ProjectFeaturesPatch
}), { additionalProperties: false, minProperties: 1 })

export const ListTrackerProjectsQuery = Type.Object({
  ...ListQuery.properties,
  archived: Type.Optional(Type.Boolean({ description: 'List archived projects instead of active ones' }))
}, { additionalProperties: false })

export const TrackerMember = Type.Object({
  userId: Type.String(),
  role: TrackerRole,
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'TrackerMember' })
export const AddMemberBody = Type.Object({ userId: Id, role: TrackerRole }, { additionalProperties: false })
export const UpdateMemberBody = Type.Object({ role: TrackerRole }, { additionalProperties: false })

// ---------------------------------------------------------------- settings

export const TrackerState = Type.Object({
  id: Type.String(),
  name: Type.String(),
  color: Type.String(),
  group: StateGroup,
  description: Type.String(),
  sequence: Type.Number({ description: 'Order within the project; lower first' }),
  default: Type.Boolean(),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'TrackerState' })
export const CreateStateBody = Type.Object({
  name: Name,
  color: Color,
  group: Type.Union(VISIBLE_STATE_GROUPS.map((group) => Type.Literal(group))),
  description: Type.Optional(ShortText),
  sequence: Type.Optional(Type.Number()),
  default: Type.Optional(Type.Boolean({ description: 'Make it the project\'s default state' }))
}, { additionalProperties: false })
export const UpdateStateBody = Type.Partial(Type.Object({
  name: Name,
  color: Color,
  description: ShortText,
  sequence: Type.Number(),
  default: Type.Literal(true, { description: 'Make it the default; the former default stops being one' })
}), { additionalProperties: false, minProperties: 1, description: 'A state\'s group cannot change: move its items to a state of the other group' })
export const DeleteStateQuery = Type.Object({
  targetStateId: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'Where the state\'s items go (and the default, if it was the default); required unless the state is empty and not the default' }))
}, { additionalProperties: false })
export const ListStatesQuery = Type.Object({
  ...ListQuery.properties,
  includeTriage: Type.Optional(Type.Boolean({ description: 'Include the hidden triage state' }))
}, { additionalProperties: false })

export const TrackerLabel = Type.Object({
  id: Type.String(),
  name: Type.String(),
  color: Type.String(),
  description: Type.String(),
  parentId: Type.Union([Type.String(), Type.Null()], { description: 'Labels nest one level: a parent is a top-level label' }),
  sortOrder: Type.Number(),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'TrackerLabel' })
export const CreateLabelBody = Type.Object({
  name: Name,
  color: Color,
  description: Type.Optional(ShortText),
  parentId: Type.Optional(Type.Union([Id, Type.Null()])),
  sortOrder: Type.Optional(Type.Number())
}, { additionalProperties: false })
export const UpdateLabelBody = Type.Partial(CreateLabelBody, { additionalProperties: false, minProperties: 1 })

export const IssueType = Type.Object({
  id: Type.String(),
  name: Type.String(),
  description: Type.String(),
  active: Type.Boolean({ description: 'Inactive types stay on their items but cannot be given to more' }),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'TrackerIssueType' })
export const CreateIssueTypeBody = Type.Object({
  name: Name,
  description: Type.Optional(ShortText),
  active: Type.Optional(Type.Boolean())
}, { additionalProperties: false })
export const UpdateIssueTypeBody = Type.Partial(CreateIssueTypeBody, { additionalProperties: false, minProperties: 1 })

export const EstimatePoint = Type.Object({
  id: Type.String(),
  key: Type.Integer({ description: 'Order of the point in its estimate' }),
  value: Type.String({ description: 'A number for points and time (minutes), a name for categories', examples: ['3', 'XL'] })
})
export const Estimate = Type.Object({
  id: Type.String(),
  name: Type.String(),
  type: EstimateType,
  points: Type.Array(EstimatePoint),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'TrackerEstimate' })
const PointValue = Type.String({ minLength: 1, maxLength: 40 })
export const CreateEstimateBody = Type.Object({
  name: Name,
  type: EstimateType,
  points: Type.Array(PointValue, { minItems: 1, maxItems: TRACKER_LIMITS.pointsPerEstimate, description: 'The values in order; numbers for points and time' })
}, { additionalProperties: false })
export const UpdateEstimateBody = Type.Partial(Type.Object({
  name: Name,
  points: Type.Array(Type.Object({
    id: Type.Optional(Id),
    value: PointValue
  }, { additionalProperties: false }), { minItems: 1, maxItems: TRACKER_LIMITS.pointsPerEstimate, description: 'The whole list in order: points with an id keep it, points without one are new, points left out go (refused while items use them, as is a new value for a used points or time value)' })
}), { additionalProperties: false, minProperties: 1 })

export const AutomationSettings = Type.Object({
  autoArchiveMonths: Type.Integer({ minimum: 0, maximum: TRACKER_LIMITS.automationMonthsMax, description: 'Archive completed and cancelled items this many months after they were closed; 0 is off' }),
  autoCloseMonths: Type.Integer({ minimum: 0, maximum: TRACKER_LIMITS.automationMonthsMax, description: 'Move open items untouched this many months to `autoCloseStateId`; 0 is off' }),
  autoCloseStateId: Type.Union([Type.String(), Type.Null()], { description: 'A cancelled-group state; null picks the project\'s first cancelled state' })
}, { $id: 'TrackerAutomationSettings', additionalProperties: false })
export const UpdateAutomationBody = Type.Partial(Type.Object({
  autoArchiveMonths: AutomationSettings.properties.autoArchiveMonths,
  autoCloseMonths: AutomationSettings.properties.autoCloseMonths,
  autoCloseStateId: Type.Union([Id, Type.Null()])
}), { additionalProperties: false, minProperties: 1 })

export const TrackerProjectParams = Type.Object({ projectId: Id, lpId: Id })

export type TrackerProjectT = Static<typeof TrackerProject>
export type CreateTrackerProjectBodyT = Static<typeof CreateTrackerProjectBody>
export type UpdateTrackerProjectBodyT = Static<typeof UpdateTrackerProjectBody>
export type ListTrackerProjectsQueryT = Static<typeof ListTrackerProjectsQuery>
export type TrackerMemberT = Static<typeof TrackerMember>
export type TrackerRoleT = Static<typeof TrackerRole>
export type StateGroupT = Static<typeof StateGroup>
export type TrackerStateT = Static<typeof TrackerState>
export type CreateStateBodyT = Static<typeof CreateStateBody>
export type UpdateStateBodyT = Static<typeof UpdateStateBody>
export type ListStatesQueryT = Static<typeof ListStatesQuery>
export type TrackerLabelT = Static<typeof TrackerLabel>
export type CreateLabelBodyT = Static<typeof CreateLabelBody>
export type UpdateLabelBodyT = Static<typeof UpdateLabelBody>
export type IssueTypeT = Static<typeof IssueType>
export type CreateIssueTypeBodyT = Static<typeof CreateIssueTypeBody>
export type UpdateIssueTypeBodyT = Static<typeof UpdateIssueTypeBody>
export type EstimateT = Static<typeof Estimate>
export type EstimateTypeT = Static<typeof EstimateType>
export type CreateEstimateBodyT = Static<typeof CreateEstimateBody>
export type UpdateEstimateBodyT = Static<typeof UpdateEstimateBody>
export type AutomationSettingsT = Static<typeof AutomationSettings>
export type UpdateAutomationBodyT = Static<typeof UpdateAutomationBody>
export type ProjectFeaturesT = Static<typeof ProjectFeatures>

export const trackerSchemas = [TrackerProject, TrackerMember, TrackerState, TrackerLabel, IssueType, Estimate, AutomationSettings]
