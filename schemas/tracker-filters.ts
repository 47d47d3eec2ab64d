import { Type, type Static, type TSchema } from '@sinclair/typebox'

/**
 * The tracker's one filter grammar: a JSON tree of `and` / `or` / `not` over
 * conditions `{ field, op, value }` on allow-listed fields. Lists, saved
 * views and counts use it now; search, exports, analytics, webhooks and the
 * MCP server use the same tree.
 *
 * Values by field kind:
 * - ids (`state`, `assignee`, `label`, `module`, `cycle`, `parent`, `type`, `createdBy`, `project`): strings;
 *   `eq` on a list field (`assignee`, `label`, `module`) means "holds this one";
 * - enums (`priority`, `stateGroup`): one of their words;
 * - `title`, `description`, `text` (title or description): strings, `contains` is case-insensitive;
 * - numbers (`number`, `estimate`): numbers;
 * - days (`startDate`, `targetDate`): `YYYY-MM-DD` or a relative day;
 * - instants (`createdAt`, `updatedAt`, `completedAt`): an ISO 8601 date-time, or a day (`YYYY-MM-DD` or relative)
 *   meaning that whole day in the project's timezone;
 * - booleans (`archived`, `draft`): `eq` true or false.
 *
 * Relative days: `today`, `yesterday`, `tomorrow`, `startOfWeek`, `endOfWeek` (weeks start on Monday),
 * `startOfMonth`, `endOfMonth`, `startOfYear`, `endOfYear`, each optionally followed by an offset
 * (`startOfWeek-1w`), or an offset alone from today: `-7d`, `+2w`, `-1m`, `+1y`.
 */

export const FILTER_LIMITS = {
  maxDepth: 6,
  maxConditions: 40,
  maxInValues: 100,
  maxTextLength: 200,
  /** Bytes of a filter sent as query-string JSON. */
  maxBytes: 8_192
} as const

export const FILTER_FIELDS = [
  'project', 'state', 'stateGroup', 'priority', 'assignee', 'label', 'module', 'cycle', 'parent', 'type', 'createdBy',
  'title', 'description', 'text', 'number', 'estimate', 'startDate', 'targetDate', 'createdAt', 'updatedAt',
  'completedAt', 'archived', 'draft'
] as const
export const FILTER_OPERATORS = ['eq', 'in', 'lt', 'gt', 'between', 'contains', 'isEmpty'] as const
export const PRIORITIES = ['urgent', 'high', 'medium', 'low', 'none'] as const

export type FilterFieldT = typeof FILTER_FIELDS[number]
export type FilterOperatorT = typeof FILTER_OPERATORS[number]

export const RELATIVE_DAY = '^(today|yesterday|tomorrow|startOfWeek|endOfWeek|startOfMonth|endOfMonth|startOfYear|endOfYear)?([+-][0-9]{1,4}[dwmy])?$'

const Scalar = Type.Union([Type.String({ maxLength: FILTER_LIMITS.maxTextLength }), Type.Number(), Type.Boolean(), Type.Null()])
const FilterValue = Type.Union([
  Scalar,
  Type.Array(Type.Union([Type.String({ maxLength: FILTER_LIMITS.maxTextLength }), Type.Number()]), { maxItems: FILTER_LIMITS.maxInValues })
], { description: '`in`: a list; `between`: a list of two (inclusive); `isEmpty`: true or false; otherwise one value' })

export const FilterCondition = Type.Object({
  field: Type.Union(FILTER_FIELDS.map((field) => Type.Literal(field)), { description: 'An allow-listed field' }),
  op: Type.Union(FILTER_OPERATORS.map((op) => Type.Literal(op)), { description: 'Which operators a field takes depends on its kind' }),
  value: FilterValue
}, { additionalProperties: false })

export const TrackerFilter = Type.Recursive((Self: TSchema) => Type.Union([
  Type.Object({ and: Type.Array(Self, { minItems: 1, maxItems: FILTER_LIMITS.maxConditions }) }, { additionalProperties: false }),
  Type.Object({ or: Type.Array(Self, { minItems: 1, maxItems: FILTER_LIMITS.maxConditions }) }, { additionalProperties: false }),
  Type.Object({ not: Self }, { additionalProperties: false }),
  FilterCondition
]), {
  $id: 'TrackerFilter',
  title: 'TrackerFilter',
  description: 'A filter tree: `{ and: [...] }`, `{ or: [...] }`, `{ not: {...} }` or a condition `{ field, op, value }`',
  examples: [{ and: [{ field: 'stateGroup', op: 'in', value: ['unstarted', 'started'] }, { field: 'priority', op: 'eq', value: 'high' }, { field: 'updatedAt', op: 'gt', value: '-7d' }] }]
})

export type FilterConditionT = Static<typeof FilterCondition>
export type TrackerFilterT = { and: TrackerFilterT[] } | { or: TrackerFilterT[] } | { not: TrackerFilterT } | FilterConditionT

export const GROUP_BY_FIELDS = ['state', 'stateGroup', 'priority', 'assignee', 'label', 'module', 'cycle', 'type', 'createdBy', 'parent'] as const
export type GroupByFieldT = typeof GROUP_BY_FIELDS[number]
export const GroupByField = Type.Union(GROUP_BY_FIELDS.map((field) => Type.Literal(field)))

export const ORDER_BY = ['manual', 'number', '-number', 'createdAt', '-createdAt', 'updatedAt', '-updatedAt', 'priority', '-priority', 'targetDate', '-targetDate', 'startDate', '-startDate'] as const
export type OrderByT = typeof ORDER_BY[number]
export const OrderBy = Type.Union(ORDER_BY.map((order) => Type.Literal(order)), {
  description: '`manual` is the board order (`sortOrder`); `priority` puts urgent first; a leading `-` reverses. Defaults to `-number` (newest first)'
})

export const trackerFilterSchemas = [TrackerFilter]
