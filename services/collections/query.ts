import { commonErrors } from '../platform/errors.js'
import { collectionErrors } from './errors.js'
import { SecretBox } from '../platform/crypto.js'
import type { Document, Filter, Sort } from '../store/types.js'
import type { FieldDefinitionT, IndexDefinitionT } from '../../schemas/collections.js'
import { QUERY_LIMITS } from '../../schemas/records.js'
import type { FieldMap } from './record-fields.js'
import { deepFreeze } from '../platform/deep-freeze.js'
import { BoundedMap } from '../cache/bounded-map.js'
import { isPlainObject } from '../store/semantics/values.js'
import { FrozenMemo } from '../cache/frozen-memo.js'

export { QUERY_LIMITS }

// A Map, not an object literal: field names such as `constructor` must not find Object.prototype's members.
const BUILT_IN: ReadonlyMap<string, FieldDefinitionT['type']> = new Map([['id', 'text'], ['createdAt', 'date'], ['updatedAt', 'date']])
const UNSORTABLE = new Set(['json', 'file'])

/** The type of a field a query may name: a defined field, or one of the fields every record has. */
export function fieldType (fields: FieldMap, name: string): FieldDefinitionT['type'] | undefined {
  return BUILT_IN.get(name) ?? fields.get(name)?.type
}

export type SortKey = [string, 1 | -1]

/** A list's order: its keys (the id last), the Store's sort, and the text cursors carry to tie them to it. */
export interface SortPlan { keys: readonly SortKey[], sort: Sort, spec: string }

// Sorts as sent, checked against one collection shape, like filter texts: the same order is asked for again and again.
const parsedSorts = new BoundedMap<string, { fields: FieldMap, plan: SortPlan }>(256)

/** `-createdAt,title` → the plan; the id is always the last key so the order is total. Shared and frozen. */
export function parseSort (raw: string | undefined, fields: FieldMap): SortPlan {
  const text = raw ?? ''
  const known = parsedSorts.get(text)
  if (known !== undefined && known.fields === fields) return known.plan
  const keys = sortKeys(text, fields)
  const plan = deepFreeze({ keys, sort: Object.fromEntries(keys), spec: keys.map(([key, dir]) => `${dir < 0 ? '-' : ''}${key}`).join(',') })
  parsedSorts.set(text, { fields, plan })
  return plan
}

function sortKeys (raw: string, fields: FieldMap): SortKey[] {
  const keys: SortKey[] = []
  for (const part of raw.split(',').map((item) => item.trim()).filter((item) => item !== '')) {
    const descending = part.startsWith('-')
    const name = descending ? part.slice(1) : part
    const field = fields.get(name)
    const type = fieldType(fields, name)
    if (type === undefined) throw collectionErrors.invalidSort({ issue: 'is not a field of this collection', field: name })
    if (UNSORTABLE.has(type) || field?.multiple === true) throw collectionErrors.invalidSort({ issue: 'cannot be sorted on', field: name })
    const key = name === 'id' ? '_id' : name
    if (keys.some(([existing]) => existing === key)) throw collectionErrors.invalidSort({ issue: 'is given twice', field: name })
    keys.push([key, descending ? -1 : 1])
  }
  if (keys.length > QUERY_LIMITS.maxSortKeys) throw collectionErrors.invalidSort({ issue: `at most ${QUERY_LIMITS.maxSortKeys} keys` })
  if (!keys.some(([key]) => key === '_id')) keys.push(['_id', 1])
  return keys
}

/** Refuses a sort on a field the caller's rule hides: the order of the records would tell its values. */
export function checkSortVisible (plan: SortPlan, hidden: ReadonlySet<string>): void {
  if (hidden.size === 0) return
  for (const [key] of plan.keys) {
    const field = key === '_id' ? 'id' : key
    if (hidden.has(field)) throw collectionErrors.invalidSort({ why: `sort: "${field}" is hidden from this method's callers and cannot be sorted on`, issue: 'is hidden from this method\'s callers', field })
  }
}

// A frozen filter (a list's parsed tree, asked again and again) is written once.
const filterTexts = new FrozenMemo((filter: Filter) => JSON.stringify(filter))

/** What a cursor is valid for: one collection, one filter (as parsed, so any spelling of it), one order. */
export function cursorScope (projectId: string, table: string, filter: Filter, plan: SortPlan): string {
  return `${projectId}\n${table}\n${plan.spec}\n${filterTexts.get(filter)}`
}

/** The sort keys a scope names, in order: a cursor holds the record's values for them. */
function scopeKeys (scope: string): string[] {
  return scope.split('\n', 3)[2].split(',').map((key) => key.startsWith('-') ? key.slice(1) : key)
}

function encodeValue (value: unknown): unknown {
  return value instanceof Date ? { $date: value.getTime() } : value
}
function decodeValue (value: unknown): unknown {
  return isPlainObject(value) && typeof value.$date === 'number' ? new Date(value.$date) : value
}

const invalidCursor = (): Error => commonErrors.invalidCursor()

/**
 * Keyset cursors, sealed: the position after a record (its sort values and
 * id) encrypted and authenticated with AES-256-GCM, the query it was issued
 * for as associated data, the IV derived from both (SecretBox.sealDeterministic). A client can neither read a value out of one (a
 * hidden field's, an id it may not see) nor use it on another collection,
 * filter or order.
 */
export class Cursors {
  private readonly box: SecretBox
  // Deterministic, so the same page answers the same bytes again; per shared record, the cursor after it in the query last asked.
  private readonly after = new FrozenMemo((record: Document, scope: string) =>
    this.box.sealDeterministic(JSON.stringify(scopeKeys(scope).map((key) => encodeValue(Object.hasOwn(record, key) ? record[key] ?? null : null))), scope))

  constructor (key: Buffer) {
    this.box = new SecretBox(key)
  }

  /** The cursor after `record` in the query `scope` names (cursorScope). */
  encode (record: Document, scope: string): string {
    return this.after.get(record, scope)
  }

  decode (cursor: string, plan: SortPlan, scope: string): unknown[] {
    let values: unknown
    try {
      values = JSON.parse(this.box.open(cursor, scope))
    } catch {
      throw invalidCursor()
    }
    if (!Array.isArray(values) || values.length !== plan.keys.length) throw invalidCursor()
    return values.map(decodeValue)
  }
}

/**
 * Records strictly after `values` in the order of `keys`. Typed fields hold
 * one type or null, and null sorts first ascending (last descending), so
 * "after null" is "not null" going up and nothing going down.
 */
export function afterFilter (keys: readonly SortKey[], values: unknown[]): Filter {
  const branches: Filter[] = []
  for (let i = 0; i < keys.length; i++) {
    const equal = Object.fromEntries(keys.slice(0, i).map(([key], j) => [key, values[j]]))
    const [key, dir] = keys[i]
    const value = values[i]
    let beyond: Filter | null
    if (value === null) beyond = dir === 1 ? { [key]: { $ne: null } } : null
    else if (dir === 1) beyond = { [key]: { $gt: value } }
    else beyond = { $or: [{ [key]: { $lt: value } }, { [key]: null }] }
    if (beyond !== null) branches.push(Object.keys(equal).length === 0 ? beyond : { $and: [equal, beyond] })
  }
  return branches.length === 1 ? branches[0] : { $or: branches }
}

/**
 * Records at or before `values` in the order of `keys`: the complement of
 * afterFilter, spelled as ranges so that an engine walking the order's index
 * stops at the bound instead of testing every later record.
 */
export function throughFilter (keys: readonly SortKey[], values: unknown[]): Filter {
  const branches: Filter[] = []
  const last = keys.length - 1
  for (let i = 0; i <= last; i++) {
    const equal = Object.fromEntries(keys.slice(0, i).map(([key], j) => [key, values[j]]))
    const [key, dir] = keys[i]
    const value = values[i]
    let before: Filter | null
    // The id is last and unique: at the bound's id itself the record is the bound.
    if (i === last) before = { [key]: { [dir === 1 ? '$lte' : '$gte']: value } }
    else if (value === null) before = dir === 1 ? null : { [key]: { $ne: null } }
    else if (dir === 1) before = { $or: [{ [key]: { $lt: value } }, { [key]: null }] }
    else before = { [key]: { $gt: value } }
    if (before !== null) branches.push(Object.keys(equal).length === 0 ? before : { $and: [equal, before] })
  }
  return branches.length === 1 ? branches[0] : { $or: branches }
}

/**
 * Records after `after` and through `through` (either may be absent). In
 * the default order both are bounds on the id and are written as one range,
 * the form the Store plans once and walks by its primary index.
 */
export function orderRange (keys: readonly SortKey[], after: unknown[] | null, through: unknown[] | null): Filter {
  if (keys.length === 1) {
    const [[key, dir]] = keys
    const range: Filter = {}
    if (after !== null) range[dir === 1 ? '$gt' : '$lt'] = after[0]
    if (through !== null) range[dir === 1 ? '$lte' : '$gte'] = through[0]
    return Object.keys(range).length === 0 ? {} : { [key]: range }
  }
  const parts = [after === null ? null : afterFilter(keys, after), through === null ? null : throughFilter(keys, through)].filter((part) => part !== null)
  return parts.length === 0 ? {} : parts.length === 1 ? parts[0] : { $and: parts }
}

const NARROWING = ['$eq', '$in', '$gt', '$gte', '$lt', '$lte']

/**
 * The fields an index can look a record up by: the id, unique fields, and
 * the first field of each declared index (a compound index cannot be entered
 * by a later field). The built-in orders serve a list's order only: a range
 * on a date every record has, `createdAt >= 1970`, narrows nothing, and would
 * free any filter riding on it from the scan bound.
 */
export function indexedLeads (fields: readonly FieldDefinitionT[], indexes: readonly IndexDefinitionT[]): ReadonlySet<string> {
  const leads = new Set(['_id'])
  for (const field of fields) if (field.unique === true) leads.add(field.name)
  for (const index of indexes) leads.add(index.fields[0].replace(/^-/, ''))
  return leads
}

/**
 * Whether an index narrows the records a filter can match, on every engine
 * alike: some clause ANDed at the top compares an indexed lead with a value
 * (equality, $in or a range), or every branch of an $or is so served.
 */
export function servedByIndex (filter: Filter, leads: ReadonlySet<string>): boolean {
  for (const key of Object.keys(filter)) {
    const value = filter[key]
    if (key === '$and' && (value as Filter[]).some((branch) => servedByIndex(branch, leads))) return true
    if (key === '$or' && (value as Filter[]).every((branch) => servedByIndex(branch, leads))) return true
    if (key.startsWith('$') || !leads.has(key)) continue
    if (!isPlainObject(value) || !Object.keys(value).some((op) => op.startsWith('$'))) return true
    if (NARROWING.some((op) => Object.hasOwn(value, op))) return true
  }
  return false
}
