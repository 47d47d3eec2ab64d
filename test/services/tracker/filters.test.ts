import t from 'tap'
import fc from 'fast-check'
import { Value } from '@sinclair/typebox/value'
import { compileFilter as storeMatcher } from '../../../services/store/semantics/match.js'
import { checkFilter, compileFilter, operatorsOf, parseFilterText } from '../../../services/tracker/filters.js'
import { addDays, isDay, localDay, relativeDay, startOfDay } from '../../../services/tracker/calendar.js'
import { FILTER_FIELDS, FILTER_LIMITS, TrackerFilter, type FilterConditionT, type FilterFieldT, type TrackerFilterT } from '../../../schemas/tracker-filters.js'
import { refusal } from '../../helper.js'
import type { AppError } from '../../../services/platform/errors.js'

const context = { userId: 'u1', timezone: 'Europe/Berlin', now: new Date(Date.UTC(2026, 2, 15, 10)) }

function refused (raw: unknown): AppError {
  try {
    checkFilter(raw)
  } catch (error) {
    return error as AppError
  }
  throw new Error('expected a refusal')
}

t.test('refusals name the place, the field and the operator', async (t) => {
  const cases: Array<[string, unknown, RegExp, string, string?]> = [
    ['not an object', 'state', /must be an object/, 'filter'],
    ['an unknown field', { field: 'colour', op: 'eq', value: 'red' }, /"colour" is not a filterable field/, 'filter.field', 'colour'],
    ['an unknown operator', { field: 'title', op: 'like', value: 'x' }, /"like" is not an operator/, 'filter.op', 'title'],
    ['an operator the field does not take', { field: 'title', op: 'lt', value: 'x' }, /"title" does not take lt; it takes eq, contains, isEmpty/, 'filter.op', 'title'],
    ['isEmpty where a value is always there', { field: 'priority', op: 'isEmpty', value: true }, /"priority" does not take isEmpty/, 'filter.op', 'priority'],
    ['a value outside an enum', { field: 'priority', op: 'eq', value: 'super' }, /priority eq takes one of urgent, high, medium, low, none/, 'filter.value', 'priority'],
    ['a number for an id', { field: 'state', op: 'eq', value: 3 }, /state eq takes an id/, 'filter.value', 'state'],
    ['a bad relative day', { field: 'targetDate', op: 'lt', value: '-7x' }, /targetDate lt takes a day/, 'filter.value', 'targetDate'],
    ['a date-time for a day field', { field: 'startDate', op: 'eq', value: '2026-03-01T10:00:00Z' }, /startDate eq takes a day/, 'filter.value', 'startDate'],
    ['between with three values', { field: 'number', op: 'between', value: [1, 2, 3] }, /a list of 2 values/, 'filter.value', 'number'],
    ['in with one wrong member', { field: 'stateGroup', op: 'in', value: ['started', 'doing'] }, /values that are one of/, 'filter.value[1]', 'stateGroup'],
    ['isEmpty with a word', { field: 'cycle', op: 'isEmpty', value: 'yes' }, /isEmpty takes true or false/, 'filter.value', 'cycle'],
    ['a missing value', { field: 'title', op: 'eq' }, /is required/, 'filter.value', 'title'],
    ['a stray member', { field: 'title', op: 'eq', value: 'x', sort: 1 }, /is not part of a condition/, 'filter.sort'],
    ['an empty and', { and: [] }, /non-empty list/, 'filter.and'],
    ['something beside or', { or: [{ field: 'draft', op: 'eq', value: true }], field: 'x' }, /is not allowed beside "or"/, 'filter.field'],
    ['a deep mistake', { and: [{ field: 'draft', op: 'eq', value: true }, { not: { or: [{ field: 'label', op: 'contains', value: 'x' }] } }] }, /"label" does not take contains/, 'filter.and[1].not.or[0].op', 'label']
  ]
  for (const [what, raw, message, path, field] of cases) {
    const error = refused(raw)
    t.match(error, { status: 400, code: 'APP_TRACKER_INVALID_FILTER', message }, what)
    t.same(error.details?.fields?.[0].path, path, `${what}: names ${path}`)
    if (field !== undefined) t.equal(error.details?.fields?.[0].field, field, `${what}: names the field`)
  }
})

t.test('limits: depth, conditions, list sizes, text size and JSON', async (t) => {
  let deep: TrackerFilterT = { field: 'draft', op: 'eq', value: true }
  for (let i = 0; i < FILTER_LIMITS.maxDepth + 1; i++) deep = { not: deep }
  t.match(refused(deep), { message: /nested deeper than 6/ })
  const many = { and: Array.from({ length: FILTER_LIMITS.maxConditions }, () => ({ or: [{ field: 'draft', op: 'eq', value: true }, { field: 'draft', op: 'eq', value: false }] })) }
  t.match(refused(many), { message: /more than 40 conditions/ })
  t.match(refused({ field: 'state', op: 'in', value: Array.from({ length: 101 }, (_, i) => `s${i}`) }), { message: /a list of 1 to 100 values/ })
  t.match(refused({ field: 'title', op: 'contains', value: 'x'.repeat(201) }), { message: /text of 1 to 200 characters/ })
  t.match(await refusal(Promise.resolve().then(() => parseFilterText('{"field":'))), { status: 400, message: /query.filter: is not valid JSON/ })
  t.match(await refusal(Promise.resolve().then(() => parseFilterText(`[${' '.repeat(8193)}]`))), { message: /larger than 8192 bytes/ })
  t.equal(parseFilterText(undefined), null)
})

t.test('relative days and instants read in the project\'s timezone', async (t) => {
  t.same(['today', 'yesterday', '-7d', '+2w', 'startOfWeek', 'endOfWeek', 'startOfMonth', 'endOfMonth', 'startOfWeek-1w', '-1m', 'endOfYear'].map((token) => relativeDay(token, '2026-03-15')),
    ['2026-03-15', '2026-03-14', '2026-03-08', '2026-03-29', '2026-03-09', '2026-03-15', '2026-03-01', '2026-03-31', '2026-03-02', '2026-02-15', '2026-12-31'])
  t.equal(relativeDay('+1m', '2026-01-31'), '2026-02-28', 'months keep the day where they can')
  t.equal(relativeDay('soon', '2026-01-31'), null)
  t.equal(startOfDay('2026-03-29', 'Europe/Berlin').toISOString(), '2026-03-28T23:00:00.000Z', 'the day clocks go forward starts at CET midnight')
  t.equal(startOfDay('2026-03-30', 'Europe/Berlin').toISOString(), '2026-03-29T22:00:00.000Z', 'and the next at CEST midnight')
  t.equal(startOfDay('2026-09-06', 'America/Sao_Paulo').toISOString(), '2026-09-06T03:00:00.000Z')
  t.equal(localDay(new Date('2026-03-13T20:00:00Z'), 'Pacific/Auckland'), '2026-03-14')
  t.ok(isDay('2024-02-29'))
  t.notOk(isDay('2026-02-29'))
  const { filter } = compileFilter({ and: [{ field: 'createdAt', op: 'eq', value: 'yesterday' }, { field: 'targetDate', op: 'lt', value: 'startOfWeek' }, { field: 'assignee', op: 'eq', value: 'me' }] }, context)
  t.same(filter, {
    $and: [
      { createdAt: { $gte: new Date('2026-03-13T23:00:00.000Z'), $lt: new Date('2026-03-14T23:00:00.000Z') } },
      { targetDate: { $lt: '2026-03-09' } },
      { assignees: 'u1' }
    ]
  })
})

t.test('property: UTC, read without a formatter, reads as a formatter reads its twin Etc/UTC', async (t) => {
  const instants = fc.date({ noInvalidDate: true, min: new Date(Date.UTC(1970, 0, 1)), max: new Date(Date.UTC(2200, 0, 1)) })
  fc.assert(fc.property(instants, (at) => {
    const day = localDay(at, 'UTC')
    return day === localDay(at, 'Etc/UTC') && startOfDay(day, 'UTC').getTime() === startOfDay(day, 'Etc/UTC').getTime()
  }), { numRuns: 500 })
  t.pass('UTC days and midnights agree')
})

// ---------------------------------------------------------------- property: the compiled filter means what the grammar says

const USERS = ['u1', 'u2', 'u3']
const IDS = ['a', 'b', 'c']
const WORDS = ['alpha', 'Beta', 'gamma', 'delta']
const DAYS = ['2026-03-01', '2026-03-09', '2026-03-14', '2026-03-15', '2026-03-16', '2026-03-31']
const TOKENS = ['today', 'yesterday', '-7d', 'startOfWeek', 'endOfMonth', '+1w']
const PRIORITIES = ['urgent', 'high', 'medium', 'low', 'none']
const GROUPS = ['backlog', 'unstarted', 'started', 'completed', 'cancelled', 'triage']
// Random instants, and the midnights the day values turn into, where an off-by-one bound would show.
const MIDNIGHTS = ['2026-03-01', '2026-03-02', '2026-03-08', '2026-03-09', '2026-03-10', '2026-03-14', '2026-03-15', '2026-03-16', '2026-03-22', '2026-03-31', '2026-04-01']
  .map((day) => startOfDay(day, 'Europe/Berlin'))
const instant = fc.oneof(fc.integer({ min: Date.UTC(2026, 1, 20), max: Date.UTC(2026, 3, 10) }).map((ms) => new Date(ms)), fc.constantFrom(...MIDNIGHTS))
const subset = (pool: string[]) => fc.subarray(pool)
const nullable = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null })

const itemArb = fc.record({
  _id: fc.string({ minLength: 1, maxLength: 4 }),
  lpId: fc.constantFrom(...IDS),
  stateId: fc.constantFrom(...IDS),
  stateGroup: fc.constantFrom(...GROUPS),
  priority: fc.constantFrom(...PRIORITIES),
  assignees: subset(USERS),
  labelIds: subset(IDS),
  moduleIds: subset(IDS),
  cycleId: nullable(fc.constantFrom(...IDS)),
  parentId: nullable(fc.constantFrom(...IDS)),
  typeId: nullable(fc.constantFrom(...IDS)),
  createdBy: fc.constantFrom(...USERS),
  title: fc.constantFrom(...WORDS, 'alphabet soup', ''),
  descriptionText: fc.constantFrom(...WORDS, 'gamma ray', ''),
  seq: fc.integer({ min: 1, max: 20 }),
  estimate: nullable(fc.integer({ min: 0, max: 8 })),
  startDate: nullable(fc.constantFrom(...DAYS)),
  targetDate: nullable(fc.constantFrom(...DAYS)),
  createdAt: instant,
  updatedAt: instant,
  completedAt: nullable(instant),
  archivedAt: nullable(instant),
  draft: fc.boolean()
}).map((item) => ({ ...item, priorityRank: PRIORITIES.indexOf(item.priority) }))

type Kind = 'id' | 'person' | 'list' | 'enumP' | 'enumG' | 'text' | 'number' | 'day' | 'instant' | 'bool'
const KINDS: Record<FilterFieldT, Kind> = {
  project: 'id',
  state: 'id',
  stateGroup: 'enumG',
  priority: 'enumP',
  assignee: 'list',
  label: 'list',
  module: 'list',
  cycle: 'id',
  parent: 'id',
  type: 'id',
  createdBy: 'person',
  title: 'text',
  description: 'text',
  text: 'text',
  number: 'number',
  estimate: 'number',
  startDate: 'day',
  targetDate: 'day',
  createdAt: 'instant',
  updatedAt: 'instant',
  completedAt: 'instant',
  archived: 'bool',
  draft: 'bool'
}
const valueOf = (field: FilterFieldT): fc.Arbitrary<unknown> => {
  switch (KINDS[field]) {
    case 'id': return fc.constantFrom(...IDS)
    case 'person': return fc.constantFrom(...USERS, 'me')
    case 'list': return field === 'assignee' ? fc.constantFrom(...USERS, 'me') : fc.constantFrom(...IDS)
    case 'enumP': return fc.constantFrom(...PRIORITIES)
    case 'enumG': return fc.constantFrom(...GROUPS)
    case 'text': return fc.constantFrom('al', 'ALPHA', 'gamma', 'ta', 'soup')
    case 'number': return fc.integer({ min: 0, max: 20 })
    case 'day': return fc.constantFrom(...DAYS, ...TOKENS)
    case 'instant': return fc.oneof(fc.constantFrom(...DAYS, ...TOKENS), instant.map((date) => date.toISOString()))
    case 'bool': return fc.boolean()
  }
}
const conditionArb: fc.Arbitrary<FilterConditionT> = fc.constantFrom(...FILTER_FIELDS).chain((field) => fc.constantFrom(...operatorsOf(field)).chain((op) => {
  const value = op === 'isEmpty' ? fc.boolean() : op === 'in' ? fc.array(valueOf(field), { minLength: 1, maxLength: 3 }) : op === 'between' ? fc.tuple(valueOf(field), valueOf(field)) : valueOf(field)
  return value.map((v) => ({ field, op, value: v }) as FilterConditionT)
}))
const treeArb: fc.Arbitrary<TrackerFilterT> = fc.letrec<{ tree: TrackerFilterT }>((tie) => ({
  tree: fc.oneof({ depthSize: 'small', withCrossShrink: true },
    conditionArb,
    fc.array(tie('tree'), { minLength: 1, maxLength: 3 }).map((and) => ({ and })),
    fc.array(tie('tree'), { minLength: 1, maxLength: 3 }).map((or) => ({ or })),
    tie('tree').map((not) => ({ not })))
})).tree

const PATHS: Record<FilterFieldT, string[]> = {
  project: ['lpId'],
  state: ['stateId'],
  stateGroup: ['stateGroup'],
  priority: ['priority'],
  assignee: ['assignees'],
  label: ['labelIds'],
  module: ['moduleIds'],
  cycle: ['cycleId'],
  parent: ['parentId'],
  type: ['typeId'],
  createdBy: ['createdBy'],
  title: ['title'],
  description: ['descriptionText'],
  text: ['title', 'descriptionText'],
  number: ['seq'],
  estimate: ['estimate'],
  startDate: ['startDate'],
  targetDate: ['targetDate'],
  createdAt: ['createdAt'],
  updatedAt: ['updatedAt'],
  completedAt: ['completedAt'],
  archived: ['archivedAt'],
  draft: ['draft']
}
const today = localDay(context.now, context.timezone)
const dayOf = (value: unknown): string => isDay(value) ? value : relativeDay(value as string, today) as string
/** An instant value as the span it means: a whole day, or one instant. */
const spanOf = (value: unknown): [number, number, boolean] => {
  const text = value as string
  if (isDay(text) || relativeDay(text, today) !== null) {
    const day = dayOf(text)
    return [startOfDay(day, context.timezone).getTime(), startOfDay(addDays(day, 1), context.timezone).getTime(), false]
  }
  const ms = Date.parse(text)
  return [ms, ms, true]
}

/** The grammar's meaning, written out directly: what the compiled Store filter must agree with. */
function means (tree: TrackerFilterT, item: Record<string, unknown>): boolean {
  if ('and' in tree) return tree.and.every((node) => means(node, item))
  if ('or' in tree) return tree.or.some((node) => means(node, item))
  if ('not' in tree) return !means(tree.not, item)
  const { field, op, value } = tree
  const kind = KINDS[field]
  return PATHS[field].some((path) => {
    const held = item[path]
    if (op === 'isEmpty') {
      const empty = Array.isArray(held) ? held.length === 0 : kind === 'text' ? held === null || held === '' : held === null
      return empty === value
    }
    if (kind === 'bool') return path === 'archivedAt' ? (held !== null) === value : held === value
    if (kind === 'text' && op === 'contains') return typeof held === 'string' && held.toLowerCase().includes((value as string).toLowerCase())
    const operand = (v: unknown): unknown => v === 'me' ? context.userId : kind === 'day' ? dayOf(v) : v
    if (kind === 'instant') {
      if (!(held instanceof Date)) return false
      const at = held.getTime()
      if (op === 'between') {
        const [from, to] = (value as unknown[]).map(spanOf)
        return at >= from[0] && (to[2] ? at <= to[1] : at < to[1])
      }
      const [start, end, exact] = spanOf(value)
      if (op === 'lt') return at < start
      if (op === 'gt') return exact ? at > end : at >= end
      return exact ? at === start : at >= start && at < end
    }
    const equals = (v: unknown): boolean => Array.isArray(held) ? held.includes(operand(v)) : held === operand(v)
    if (op === 'eq') return equals(value)
    if (op === 'in') return (value as unknown[]).some(equals)
    if (held === null) return false
    const [low, high] = op === 'between' ? (value as unknown[]).map(operand) : [operand(value), operand(value)]
    if (op === 'lt') return (held as number) < (low as number)
    if (op === 'gt') return (held as number) > (low as number)
    return (held as number) >= (low as number) && (held as number) <= (high as number)
  })
}

function shape (tree: TrackerFilterT): { depth: number, conditions: number } {
  if ('and' in tree || 'or' in tree) {
    const parts = ('and' in tree ? tree.and : tree.or).map(shape)
    return { depth: 1 + Math.max(...parts.map((part) => part.depth)), conditions: parts.reduce((sum, part) => sum + part.conditions, 0) }
  }
  if ('not' in tree) {
    const inner = shape(tree.not)
    return { depth: inner.depth + 1, conditions: inner.conditions }
  }
  return { depth: 0, conditions: 1 }
}

t.test('property: every tree the checker takes is a TrackerFilter, and its compiled Store filter selects what the grammar means', async (t) => {
  fc.assert(fc.property(treeArb, fc.array(itemArb, { minLength: 1, maxLength: 8 }), (tree, items) => {
    fc.pre(shape(tree).depth <= FILTER_LIMITS.maxDepth && shape(tree).conditions <= FILTER_LIMITS.maxConditions)
    const checked = checkFilter(tree)
    if (!Value.Check(TrackerFilter, checked)) return false
    const matches = storeMatcher(compileFilter(checked, context).filter)
    return items.every((item) => matches(item) === means(checked, item))
  }), { numRuns: 1500 })
  t.pass('1500 random trees over random items')
})

t.test('property: the checker refuses whatever TypeBox refuses', async (t) => {
  const junk = fc.oneof(fc.anything({ maxDepth: 3 }), treeArb.map((tree) => ({ ...tree, extra: 1 })), conditionArb.map((condition) => ({ ...condition, op: `${condition.op}x` })))
  fc.assert(fc.property(junk, (raw) => {
    if (Value.Check(TrackerFilter, raw)) return true
    try {
      checkFilter(raw)
      return false
    } catch (error) {
      return (error as AppError).code === 'APP_TRACKER_INVALID_FILTER'
    }
  }), { numRuns: 500 })
  t.pass('500 random refusals')
})

t.test('a filter text is checked once and its tree shared; what it compiles to moves with the caller, the timezone and the day', async (t) => {
  const text = JSON.stringify({ and: [{ field: 'assignee', op: 'eq', value: 'me' }, { field: 'updatedAt', op: 'gt', value: '-7d' }] })
  const tree = parseFilterText(text) as TrackerFilterT
  t.ok(Object.isFrozen(tree), 'the checked tree is frozen')
  t.equal(parseFilterText(text), tree, 'the same text: the same tree, not checked again')
  const first = compileFilter(tree, context)
  t.equal(compileFilter(tree, { ...context, now: new Date(context.now.getTime() + 3_600_000) }), first, 'the same day: the same compiled filter')
  t.same(compileFilter(tree, context), compileFilter(structuredClone(tree), context), 'what a fresh tree compiles to')
  const nextDay = compileFilter(tree, { ...context, now: new Date(context.now.getTime() + 86_400_000) })
  t.not(JSON.stringify(nextDay.filter), JSON.stringify(first.filter), 'a relative day moves with the day')
  t.same(nextDay.filter, compileFilter(structuredClone(tree), { ...context, now: new Date(context.now.getTime() + 86_400_000) }).filter)
  t.match(JSON.stringify(compileFilter(tree, { ...context, userId: 'u2' }).filter), /"u2"/, '`me` is each caller')
  t.match(JSON.stringify(compileFilter(tree, context).filter), /"u1"/, 'and again the first')
  const tokyo = compileFilter(tree, { ...context, timezone: 'Asia/Tokyo' })
  t.same(tokyo.filter, compileFilter(structuredClone(tree), { ...context, timezone: 'Asia/Tokyo' }).filter, 'another timezone, its own days')
  t.not(JSON.stringify(tokyo.filter), JSON.stringify(first.filter))
  for (const time of ['first', 'again']) {
    t.equal((await refusal((async () => parseFilterText('{"field":"nope","op":"eq","value":1}'))())).code, 'APP_TRACKER_INVALID_FILTER', `a refused text, ${time}`)
  }
})
