import type { Filter } from '../types.js'
import type { CollectionMeta } from './connection.js'
import { filterContext } from './indexes.js'
import { compileSqlFilter, type SqlCondition } from './sql-filter.js'
import { BoundedMap } from '../../cache/bounded-map.js'
import { isPlainObject as isPlain } from '../semantics/values.js'

/**
 * Compiled-filter caches for the common shapes of filter: top-level fields
 * equal to scalars, compared with them or `$in` lists of them, such as
 * `{tokenHash: '…'}`, `{owner: 'u1', status: 'open'}` or
 * `{createdAt: {$gte: from, $lt: to}}`.
 *
 * The shape of such a filter is its field names and operators in order and the
 * type of each operand; booleans and null are part of the shape itself (their
 * SQL may inline them). Two filters of one shape translate to the same SQL
 * text, differing only in the bound parameters, so the translation is done
 * once per shape and per catalogue snapshot: the cache hangs off the
 * `CollectionMeta` object, which the connection replaces whenever the
 * catalogue version changes (index created or dropped, a path turning
 * multikey), so a stale plan is never used. Values are only ever bound, never
 * spliced into the SQL.
 */

/**
 * A cacheable filter's shape key, and its scalar operands ("leaves") as SQL
 * binds them (a Date as its milliseconds), grouped by top-level field.
 */
export interface FilterShape { key: string, leaves: unknown[][] }

/**
 * A WHERE clause; `texts` memoises statements built around a cached clause,
 * and `name` stands for its SQL in keys (one name, one SQL): a short key
 * hashes in a fraction of the time the clause's text takes, asked per read.
 */
export interface WhereClause extends SqlCondition { texts?: BoundedMap<string, string>, name?: string }

/** A leaf as bound, or (`text`) its JSON token, which the stored-text prefilter searches for. */
type Slot = [field: number, leaf: number, text?: true] | { constant: unknown }

interface Template {
  sql: string
  exact: boolean
  /** Per bound parameter: the leaf of the filter it binds, or a constant. */
  slots: Slot[]
  texts: BoundedMap<string, string>
  name: string
}

const PLANS_PER_COLLECTION = 256
const VALIDATED_SHAPES = 1024
const TEXTS_PER_PLAN = 64
const MAX_IN_MEMBERS = 32
const COMPARISON_OPERATORS = new Set(['$eq', '$ne', '$gt', '$gte', '$lt', '$lte'])
// Ids are strings: an id compared with strings only (a key-set page's range, an $in of ids) has one plan per shape.
const ID_TAG = /^(?:s|\{(?:\$[a-z]+(?:s|\[s+\]))+\})$/

const plans = new WeakMap<CollectionMeta, BoundedMap<string, Template | null>>()
// A clause's name, by its SQL: the same across the templates a catalogue change rebuilds, so pages named by it stay.
// Names are never reused (one SQL forgotten and met again gets a new one), so a name always means the one SQL.
const names = new BoundedMap<string, string>(PLANS_PER_COLLECTION * 16)
let namesGiven = 0

function nameOf (sql: string): string {
  return names.remember(sql, () => `\u0001${++namesGiven}`)
}
const validated = new BoundedMap<string, true>(VALIDATED_SHAPES)

/**
 * The tag of a scalar in a shape key, pushing its bound form onto `leaves`.
 * Booleans and null are tagged by value, since their SQL may inline them.
 */
function scalarTag (value: unknown, leaves: unknown[]): string | null {
  switch (typeof value) {
    case 'string':
      // A lone surrogate is refused by validation, which a remembered shape would skip.
      if (!value.isWellFormed()) return null
      leaves.push(value)
      return 's'
    case 'number':
      if (Number.isNaN(value)) return null
      leaves.push(value)
      return 'n'
    case 'boolean':
      return value ? 't' : 'f'
    case 'object':
      if (value === null) return 'z'
      if (value instanceof Date && !Number.isNaN(value.getTime())) {
        leaves.push(value.getTime())
        return 'd'
      }
      return null
    default:
      return null
  }
}

/** The tag of a field's value: a scalar, or an object of comparison operators and `$in` over scalars. */
function valueTag (value: unknown, leaves: unknown[]): string | null {
  if (!isPlain(value)) return scalarTag(value, leaves)
  let tag = '{'
  for (const operator in value) {
    if (!Object.hasOwn(value, operator)) return null
    const operand = value[operator]
    if (COMPARISON_OPERATORS.has(operator)) {
      const inner = scalarTag(operand, leaves)
      if (inner === null) return null
      tag += operator + inner
    } else if (operator === '$in') {
      if (!Array.isArray(operand) || operand.length === 0 || operand.length > MAX_IN_MEMBERS) return null
      tag += '$in['
      for (const member of operand) {
        const inner = scalarTag(member, leaves)
        if (inner === null) return null
        tag += inner
      }
      tag += ']'
    } else {
      return null
    }
  }
  return tag === '{' ? null : tag + '}'
}

/**
 * The filter as one object of top-level fields when it is only a conjunction
 * of such objects (`{$and: [{a: 1}, {b: {$gt: 2}}]}` is `{a: 1, b: {$gt: 2}}`),
 * so that lists which AND a scope, defaults and a caller's conditions (the
 * tracker's) get a shape, a cached plan and a validated matcher; the filter
 * itself when a branch holds an operator or two branches name one field.
 */
export function flattenAnd (filter: Filter): Filter {
  if (!Object.hasOwn(filter, '$and')) return filter
  const flat: Filter = {}
  return gather(filter, flat) ? flat : filter
}

function gather (filter: unknown, into: Filter): boolean {
  if (!isPlain(filter)) return false
  for (const key in filter) {
    if (!Object.hasOwn(filter, key)) return false
    const value = filter[key]
    if (key === '$and') {
      if (!Array.isArray(value) || value.length === 0) return false
      for (const branch of value) if (!gather(branch, into)) return false
      continue
    }
    if (key.startsWith('$') || Object.hasOwn(into, key)) return false
    into[key] = value
  }
  return true
}

export function filterShape (filter: unknown): FilterShape | null {
  if (!isPlain(filter)) return null
  let key = ''
  const leaves: unknown[][] = []
  for (const field in filter) {
    if (!Object.hasOwn(filter, field) || field.startsWith('$')) return null
    const fieldLeaves: unknown[] = []
    const tag = valueTag(filter[field], fieldLeaves)
    if (tag === null || (field === '_id' && !ID_TAG.test(tag))) return null
    // Length-prefixed, so no field name can make two shapes collide.
    key += `${field.length}:${field}${tag};`
    leaves.push(fieldLeaves)
  }
  return { key, leaves }
}

/** Whether a filter of this shape already passed the semantics' validation, which depends on the shape alone. */
export function shapeValidated (shape: FilterShape): boolean {
  return validated.get(shape.key) === true
}

export function rememberValidShape (shape: FilterShape): void {
  validated.set(shape.key, true)
}

function bound (slot: Slot, shape: FilterShape): unknown {
  if (!Array.isArray(slot)) return slot.constant
  const leaf = shape.leaves[slot[0]][slot[1]]
  return slot[2] === true ? JSON.stringify(leaf) : leaf
}

/** Every way a parameter can stem from the field's leaves: the leaf itself, or a string leaf's JSON token. */
function sources (leaves: unknown[], field: number, param: unknown): Slot[] {
  const found: Slot[] = []
  leaves.forEach((leaf, at) => {
    if (Object.is(leaf, param)) found.push([field, at])
    if (typeof leaf === 'string' && param === JSON.stringify(leaf)) found.push([field, at, true])
  })
  return found
}

/**
 * Derives the template by tracing each bound parameter of the translation to
 * the one leaf of its field that it equals. Undefined when a parameter could
 * stand for two leaves (this filter is then compiled uncached), null when one
 * stands for none (the shape is not cached).
 */
function buildTemplate (meta: CollectionMeta, filter: Filter, shape: FilterShape): Template | null | undefined {
  const context = filterContext(meta)
  const whole = compileSqlFilter(filter, context)
  const slots: Slot[] = []
  const fields = Object.keys(filter)
  for (let i = 0; i < fields.length; i++) {
    const leaves = shape.leaves[i]
    for (const param of compileSqlFilter({ [fields[i]]: filter[fields[i]] }, context).params) {
      const found = sources(leaves, i, param)
      if (found.length === 0) {
        // Constants stem from the value-tagged scalars (booleans: 0 or 1); any other parameter is not understood.
        if (param !== 0 && param !== 1) return null
        slots.push({ constant: param })
      } else {
        if (found.length > 1) return undefined
        // A leaf that happens to equal a boolean's constant would be ambiguous too.
        if ((param === 0 || param === 1) && hasBooleanOperand(filter[fields[i]])) return undefined
        slots.push(found[0])
      }
    }
  }
  // A condition that can never hold binds nothing, whatever its parts would.
  if (whole.sql === '0') slots.length = 0
  if (slots.length !== whole.params.length) return null
  for (let i = 0; i < slots.length; i++) {
    if (!Object.is(bound(slots[i], shape), whole.params[i])) return null
  }
  return { sql: whole.sql, exact: whole.exact, slots, texts: new BoundedMap(TEXTS_PER_PLAN), name: nameOf(whole.sql) }
}

function hasBooleanOperand (value: unknown): boolean {
  if (typeof value === 'boolean') return true
  if (!isPlain(value)) return false
  return Object.values(value).some((operand) => typeof operand === 'boolean' || (Array.isArray(operand) && operand.some((member) => typeof member === 'boolean')))
}

/** The filter's SQL condition, from the per-shape cache when the filter has a cacheable shape (`shape`, when the caller has it). */
export function cachedWhere (meta: CollectionMeta, filter: Filter, shape: FilterShape | null = filterShape(filter)): WhereClause {
  if (shape === null) return compileSqlFilter(filter, filterContext(meta))
  let byShape = plans.get(meta)
  if (byShape === undefined) {
    byShape = new BoundedMap(PLANS_PER_COLLECTION)
    plans.set(meta, byShape)
  }
  let template = byShape.get(shape.key)
  if (template === undefined) {
    template = buildTemplate(meta, filter, shape)
    if (template === undefined) return compileSqlFilter(filter, filterContext(meta))
    byShape.set(shape.key, template)
  }
  if (template === null) return compileSqlFilter(filter, filterContext(meta))
  const params = new Array<unknown>(template.slots.length)
  for (let i = 0; i < params.length; i++) params[i] = bound(template.slots[i], shape)
  return { sql: template.sql, params, exact: template.exact, texts: template.texts, name: template.name }
}

/** A statement's SQL built around `where`, memoised on a cached clause so the same string is reused. */
export function statementText (where: WhereClause, key: string, build: () => string): string {
  const texts = where.texts
  if (texts === undefined) return build()
  let text = texts.get(key)
  if (text === undefined) {
    text = build()
    texts.set(key, text)
  }
  return text
}

/** How many shapes are cached for this catalogue snapshot of a collection (for tests). */
export function cachedShapeCount (meta: CollectionMeta): number {
  return plans.get(meta)?.size ?? 0
}
