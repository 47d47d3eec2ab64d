import { BoundedMap } from '../cache/bounded-map.js'
import { FrozenMemo } from '../cache/frozen-memo.js'
import { deepFreeze } from '../platform/deep-freeze.js'
import { isPlainObject } from '../store/semantics/values.js'
import { literalPattern } from '../store/semantics/regex.js'
import type { Filter } from '../store/types.js'
import { STATE_GROUPS } from '../../schemas/tracker.js'
import {
  FILTER_FIELDS, FILTER_LIMITS, FILTER_OPERATORS, PRIORITIES, type FilterConditionT, type FilterFieldT, type FilterOperatorT, type TrackerFilterT
} from '../../schemas/tracker-filters.js'
import { addDays, isDay, localDay, relativeDay, startOfDay } from './calendar.js'
import { trackerErrors } from './errors.js'

/**
 * The tracker's filter grammar (schemas/tracker-filters.ts): `checkFilter`
 * refuses what is not a tree of allow-listed fields, operators and typed
 * values, naming the place, field and operator; `compileFilter` turns a
 * checked tree into a Store filter, relative days read in the project's
 * timezone. Parts 2's search, exports, analytics and webhooks compile the
 * same trees.
 */

type Kind = 'id' | 'person' | 'enum' | 'text' | 'number' | 'day' | 'instant' | 'boolean'
/** `ranked`: the field is stored beside its rank (`priorityRank`), which the indexes hold, so conditions compare ranks. */
interface FieldSpec { kind: Kind, paths: string[], list?: boolean, nullable?: boolean, values?: readonly string[], ranked?: boolean }

const FIELDS: Record<FilterFieldT, FieldSpec> = {
  project: { kind: 'id', paths: ['lpId'] },
  state: { kind: 'id', paths: ['stateId'] },
  stateGroup: { kind: 'enum', paths: ['stateGroup'], values: STATE_GROUPS },
  priority: { kind: 'enum', paths: ['priorityRank'], values: PRIORITIES, ranked: true },
  assignee: { kind: 'person', paths: ['assignees'], list: true },
  label: { kind: 'id', paths: ['labelIds'], list: true },
  module: { kind: 'id', paths: ['moduleIds'], list: true },
  cycle: { kind: 'id', paths: ['cycleId'], nullable: true },
  parent: { kind: 'id', paths: ['parentId'], nullable: true },
  type: { kind: 'id', paths: ['typeId'], nullable: true },
  createdBy: { kind: 'person', paths: ['createdBy'] },
  title: { kind: 'text', paths: ['title'] },
  description: { kind: 'text', paths: ['descriptionText'] },
  text: { kind: 'text', paths: ['title', 'descriptionText'] },
  number: { kind: 'number', paths: ['seq'] },
  estimate: { kind: 'number', paths: ['estimate'], nullable: true },
  startDate: { kind: 'day', paths: ['startDate'], nullable: true },
  targetDate: { kind: 'day', paths: ['targetDate'], nullable: true },
  createdAt: { kind: 'instant', paths: ['createdAt'] },
  updatedAt: { kind: 'instant', paths: ['updatedAt'] },
  completedAt: { kind: 'instant', paths: ['completedAt'], nullable: true },
  archived: { kind: 'boolean', paths: ['archivedAt'] },
  draft: { kind: 'boolean', paths: ['draft'] }
}

const OPERATORS: Record<Kind, readonly FilterOperatorT[]> = {
  id: ['eq', 'in', 'isEmpty'],
  person: ['eq', 'in', 'isEmpty'],
  enum: ['eq', 'in'],
  text: ['eq', 'contains', 'isEmpty'],
  number: ['eq', 'in', 'lt', 'gt', 'between', 'isEmpty'],
  day: ['eq', 'lt', 'gt', 'between', 'isEmpty'],
  instant: ['eq', 'lt', 'gt', 'between', 'isEmpty'],
  boolean: ['eq']
}

const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,3})?)?(Z|[+-]\d{2}:\d{2})$/
const ID = /^[0-9A-Za-z_-]{1,64}$/

/** The operators a field takes, for messages and for part 2's tool descriptions. */
export function operatorsOf (field: FilterFieldT): readonly FilterOperatorT[] {
  const spec = FIELDS[field]
  return OPERATORS[spec.kind].filter((op) => op !== 'isEmpty' || spec.nullable === true || spec.list === true || spec.kind === 'text')
}

function describe (kind: Kind, spec: FieldSpec): string {
  switch (kind) {
    case 'id': return 'an id'
    case 'person': return 'a user id or "me"'
    case 'enum': return `one of ${(spec.values ?? []).join(', ')}`
    case 'text': return `text of 1 to ${FILTER_LIMITS.maxTextLength} characters`
    case 'number': return 'a number'
    case 'day': return 'a day (YYYY-MM-DD) or a relative day (today, -7d, startOfWeek, …)'
    case 'instant': return 'an ISO 8601 date-time, a day (YYYY-MM-DD) or a relative day (today, -7d, startOfWeek, …)'
    case 'boolean': return 'true or false'
  }
}

function scalarOk (spec: FieldSpec, value: unknown): boolean {
  switch (spec.kind) {
    case 'id': return typeof value === 'string' && ID.test(value)
    case 'person': return typeof value === 'string' && ID.test(value)
    case 'enum': return typeof value === 'string' && (spec.values ?? []).includes(value)
    case 'text': return typeof value === 'string' && value.length >= 1 && value.length <= FILTER_LIMITS.maxTextLength
    case 'number': return typeof value === 'number' && Number.isFinite(value)
    case 'day': return typeof value === 'string' && (isDay(value) || relativeDay(value, '2000-01-01') !== null)
    case 'instant': return typeof value === 'string' && (isDay(value) || relativeDay(value, '2000-01-01') !== null || (ISO_INSTANT.test(value) && Number.isFinite(Date.parse(value))))
    case 'boolean': return typeof value === 'boolean'
  }
}

class Checker {
  private conditions = 0

  node (node: unknown, path: string, depth: number): TrackerFilterT {
    if (depth > FILTER_LIMITS.maxDepth) throw trackerErrors.invalidFilter({ path, problem: `is nested deeper than ${FILTER_LIMITS.maxDepth} levels` })
    if (!isPlainObject(node)) throw trackerErrors.invalidFilter({ path, problem: 'must be an object: { and: [...] }, { or: [...] }, { not: {...} } or a condition { field, op, value }' })
    const keys = Object.keys(node)
    for (const logical of ['and', 'or', 'not'] as const) {
      if (!Object.hasOwn(node, logical)) continue
      const extra = keys.find((key) => key !== logical)
      if (extra !== undefined) throw trackerErrors.invalidFilter({ path: `${path}.${extra}`, problem: `is not allowed beside "${logical}"` })
      const inner = node[logical]
      if (logical === 'not') return { not: this.node(inner, `${path}.not`, depth + 1) }
      if (!Array.isArray(inner) || inner.length === 0) throw trackerErrors.invalidFilter({ path: `${path}.${logical}`, problem: 'must be a non-empty list of filters' })
      if (inner.length > FILTER_LIMITS.maxConditions) throw trackerErrors.invalidFilter({ path: `${path}.${logical}`, problem: `holds more than ${FILTER_LIMITS.maxConditions} filters` })
      const items = inner.map((item, index) => this.node(item, `${path}.${logical}[${index}]`, depth + 1))
      return logical === 'and' ? { and: items } : { or: items }
    }
    return this.condition(node, path)
  }

  private condition (node: Record<string, unknown>, path: string): FilterConditionT {
    if (++this.conditions > FILTER_LIMITS.maxConditions) throw trackerErrors.invalidFilter({ path, problem: `the filter holds more than ${FILTER_LIMITS.maxConditions} conditions` })
    const extra = Object.keys(node).find((key) => key !== 'field' && key !== 'op' && key !== 'value')
    if (extra !== undefined) throw trackerErrors.invalidFilter({ path: `${path}.${extra}`, problem: 'is not part of a condition (field, op, value), nor and, or, not' })
    const { field, op, value } = node
    if (typeof field !== 'string') throw trackerErrors.invalidFilter({ path: `${path}.field`, problem: 'is required: the field to filter on' })
    if (!(FILTER_FIELDS as readonly string[]).includes(field)) {
      throw trackerErrors.invalidFilter({ path: `${path}.field`, problem: `"${field.slice(0, 64)}" is not a filterable field; use one of ${FILTER_FIELDS.join(', ')}`, field: field.slice(0, 64) })
    }
    const name = field as FilterFieldT
    if (typeof op !== 'string') throw trackerErrors.invalidFilter({ path: `${path}.op`, problem: `is required: one of ${operatorsOf(name).join(', ')}`, field: name })
    if (!(FILTER_OPERATORS as readonly string[]).includes(op)) {
      throw trackerErrors.invalidFilter({ path: `${path}.op`, problem: `"${op.slice(0, 32)}" is not an operator; use one of ${FILTER_OPERATORS.join(', ')}`, field: name })
    }
    const operator = op as FilterOperatorT
    if (!operatorsOf(name).includes(operator)) throw trackerErrors.invalidFilter({ path: `${path}.op`, problem: `"${name}" does not take ${operator}; it takes ${operatorsOf(name).join(', ')}`, field: name })
    if (!Object.hasOwn(node, 'value')) throw trackerErrors.invalidFilter({ path: `${path}.value`, problem: 'is required', field: name })
    this.value(FIELDS[name], name, operator, value, `${path}.value`)
    return { field: name, op: operator, value: value as FilterConditionT['value'] }
  }

  private value (spec: FieldSpec, field: FilterFieldT, op: FilterOperatorT, value: unknown, path: string): void {
    const wanted = describe(spec.kind, spec)
    if (op === 'isEmpty') {
      if (typeof value !== 'boolean') throw trackerErrors.invalidFilter({ path, problem: `${field} isEmpty takes true or false`, field })
      return
    }
    if (op === 'in' || op === 'between') {
      const size = op === 'between' ? '2' : `1 to ${FILTER_LIMITS.maxInValues}`
      if (!Array.isArray(value) || value.length === 0 || value.length > FILTER_LIMITS.maxInValues || (op === 'between' && value.length !== 2)) {
        throw trackerErrors.invalidFilter({ path, problem: `${field} ${op} takes a list of ${size} values, each ${wanted}`, field })
      }
      value.forEach((item, index) => { if (!scalarOk(spec, item)) throw trackerErrors.invalidFilter({ path: `${path}[${index}]`, problem: `${field} ${op} takes values that are ${wanted}`, field }) })
      return
    }
    if (!scalarOk(spec, value)) throw trackerErrors.invalidFilter({ path, problem: `${field} ${op} takes ${wanted}`, field })
  }
}

/** A filter tree checked: every field, operator and value allowed, else 400 naming where. */
export function checkFilter (raw: unknown, path = 'filter'): TrackerFilterT {
  return new Checker().node(raw, path, 0)
}

// A list is asked again and again with the same filter text (a board refreshing, a saved link), so a text checked once
// is kept, as its frozen tree, while it is asked for; what compileFilter makes of that tree is remembered on it.
const checkedTexts = new BoundedMap<string, TrackerFilterT>(256, undefined, 64 * FILTER_LIMITS.maxBytes)

/** A filter sent as query-string JSON: null when absent. The tree is frozen: shared by every request sending that text. */
export function parseFilterText (raw: string | undefined, path = 'query.filter'): TrackerFilterT | null {
  if (raw === undefined || raw.trim() === '') return null
  const known = checkedTexts.get(raw)
  if (known !== undefined) return known
  if (Buffer.byteLength(raw, 'utf8') > FILTER_LIMITS.maxBytes) throw trackerErrors.invalidFilter({ path, problem: `is larger than ${FILTER_LIMITS.maxBytes} bytes` })
  let value: unknown
  try {
    value = JSON.parse(raw)
  } catch {
    throw trackerErrors.invalidFilter({ path, problem: 'is not valid JSON' })
  }
  const tree = deepFreeze(checkFilter(value, path))
  checkedTexts.set(raw, tree, raw.length)
  return tree
}

export interface FilterContext {
  /** The caller, for `me`. */
  userId: string
  timezone: string
  now: Date
}

export interface CompiledFilter { filter: Filter, fields: ReadonlySet<FilterFieldT> }

/** An instant bound: a whole day (`start` … before `end`) or one instant. */
interface Span { start: Date, end: Date, exact: boolean }

class Compiler {
  readonly fields = new Set<FilterFieldT>()

  constructor (private readonly context: { userId: string, timezone: string }, private readonly today: string) {}

  node (node: TrackerFilterT): Filter {
    if ('and' in node) return { $and: node.and.map((item) => this.node(item)) }
    if ('or' in node) return { $or: node.or.map((item) => this.node(item)) }
    if ('not' in node) return { $nor: [this.node(node.not)] }
    this.fields.add(node.field)
    const spec = FIELDS[node.field]
    const clauses = spec.paths.map((path) => this.condition(spec, path, node.op, node.value))
    return clauses.length === 1 ? clauses[0] : { $or: clauses }
  }

  private condition (spec: FieldSpec, path: string, op: FilterOperatorT, value: unknown): Filter {
    if (op === 'isEmpty') {
      const empty: Filter = spec.list === true ? { [path]: { $size: 0 } } : spec.kind === 'text' ? { [path]: { $in: [null, ''] } } : { [path]: null }
      return value === true ? empty : { $nor: [empty] }
    }
    if (spec.kind === 'boolean') return path === 'archivedAt' ? { archivedAt: value === true ? { $ne: null } : null } : { [path]: value }
    if (spec.kind === 'text' && op === 'contains') return { [path]: { $regex: literalPattern(value as string), $options: 'i' } }
    if (spec.kind === 'instant') return this.instant(path, op, value)
    const operand = (item: unknown): unknown => this.scalar(spec, item)
    switch (op) {
      case 'eq': return { [path]: operand(value) }
      case 'in': return { [path]: { $in: (value as unknown[]).map(operand) } }
      case 'lt': return { [path]: { $lt: operand(value) } }
      case 'gt': return { [path]: { $gt: operand(value) } }
      default: return { [path]: { $gte: operand((value as unknown[])[0]), $lte: operand((value as unknown[])[1]) } }
    }
  }

  private scalar (spec: FieldSpec, value: unknown): unknown {
    if (spec.ranked === true) return (spec.values ?? []).indexOf(value as string)
    if (spec.kind === 'person' && value === 'me') return this.context.userId
    if (spec.kind === 'day') return isDay(value) ? value : relativeDay(value as string, this.today)
    return value
  }

  private span (value: unknown): Span {
    const text = value as string
    const day = isDay(text) ? text : relativeDay(text, this.today)
    if (day !== null) return { start: startOfDay(day, this.context.timezone), end: startOfDay(addDays(day, 1), this.context.timezone), exact: false }
    const at = new Date(text)
    return { start: at, end: at, exact: true }
  }

  /** A day given for an instant field means the whole day in the project's timezone. */
  private instant (path: string, op: FilterOperatorT, value: unknown): Filter {
    if (op === 'between') {
      const [from, to] = (value as unknown[]).map((item) => this.span(item))
      return { [path]: { $gte: from.start, ...(to.exact ? { $lte: to.end } : { $lt: to.end }) } }
    }
    const span = this.span(value)
    if (op === 'lt') return { [path]: { $lt: span.start } }
    if (op === 'gt') return { [path]: span.exact ? { $gt: span.end } : { $gte: span.end } }
    return { [path]: span.exact ? span.start : { $gte: span.start, $lt: span.end } }
  }
}

// What a tree compiles to depends on it, the caller (`me`), the timezone and the day there (relative days), nothing else.
const compiled = new FrozenMemo((tree: TrackerFilterT, key: string): CompiledFilter => {
  const [userId, timezone, today] = key.split('\n')
  const compiler = new Compiler({ userId, timezone }, today)
  return { filter: compiler.node(tree), fields: compiler.fields }
})

/**
 * A checked tree in Store terms, and the fields it names (lists add their
 * defaults for the others). For a frozen tree (parseFilterText's) the answer
 * is frozen and shared until the caller, timezone or day differ.
 */
export function compileFilter (tree: TrackerFilterT | null, context: FilterContext): CompiledFilter {
  if (tree === null) return { filter: {}, fields: new Set() }
  return compiled.get(tree, `${context.userId}\n${context.timezone}\n${localDay(context.now, context.timezone)}`)
}
