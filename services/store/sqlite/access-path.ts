import type { Filter, Sort } from '../types.js'
import type { CollectionMeta, IndexMeta } from './connection.js'
import { isOperatorObject } from '../semantics/match.js'

/**
 * The index a limited, sorted read walks. SQLite keeps no statistics of the
 * expression indexes (nothing runs ANALYZE), so given a page such as
 * `{lpId, priorityRank: 1, updatedAt: {$gt: t}}` newest first it takes the
 * index with the range and sorts every row in the range (half the project),
 * where walking `(lpId, priorityRank, seq)` backwards stops once the page is
 * full. The rule here is MongoDB's for a sort with a limit: an index whose
 * leading fields the filter pins by equality and whose next fields are the
 * sort's gives the rows in order, so the limit bounds the work; of several,
 * the one pinning most fields. Only such an index is ever named (`INDEXED
 * BY`): every other read is left to SQLite's planner.
 */

/**
 * Top-level fields the filter pins to one scalar (through `$and`s), on paths an index keys and no document holds an
 * array along; those pinned to a string are also put in `strings` (what a partial index's WHERE asks, below).
 */
export function pinnedFields (meta: CollectionMeta, filter: Filter, into = new Set<string>(), strings?: Set<string>): Set<string> {
  for (const key of Object.keys(filter)) {
    const value = filter[key]
    if (key === '$and') {
      for (const branch of value as Filter[]) pinnedFields(meta, branch, into, strings)
      continue
    }
    if (key.startsWith('$') || key === '_id' || meta.multikey.get(key) !== false) continue
    const operand = isOperatorObject(value) && Object.keys(value).length === 1 && Object.hasOwn(value, '$eq') ? value.$eq : value
    if (isPinningScalar(operand)) into.add(key)
    if (typeof operand === 'string') strings?.add(key)
  }
  return into
}

function isPinningScalar (value: unknown): boolean {
  if (typeof value === 'string' || typeof value === 'boolean') return true
  if (typeof value === 'number') return !Number.isNaN(value)
  return value instanceof Date && !Number.isNaN(value.getTime())
}

/**
 * Whether rows the filter selects can tie on the sort: not when a unique
 * index (all its paths array-free) holds only pinned fields and sorted ones,
 * since rows that agree on the sort then agree on the whole key. The `_id`
 * tie-break is then no part of the order, and an index without `_id` can
 * give the order alone.
 */
export function tiesImpossible (meta: CollectionMeta, pinned: ReadonlySet<string>, sortFields: readonly string[]): boolean {
  return meta.indexes.some((index) => index.unique && index.fields.every((field) => field !== '_id' && meta.multikey.get(field) === false && (pinned.has(field) || sortFields.includes(field))))
}

/**
 * The SQL name of the index to walk for `sort` (one field, then perhaps
 * `_id`, as planOrder orders), or null. `tieBreak` says whether the order
 * still ends with `id`; the index must then hold `_id` right after the sort
 * field, in the same relation of directions. A partial index only where the
 * filter pins each field of its WHERE to a string (`pinnedStrings`): SQLite
 * refuses to walk one whose WHERE the query does not imply.
 */
export function orderIndex (meta: CollectionMeta, pinned: ReadonlySet<string>, sort: Sort, tieBreak: boolean, pinnedStrings: ReadonlySet<string> = new Set()): string | null {
  const [field] = Object.keys(sort)
  const idDirection = sort._id === -1 ? -1 : 1
  let best: IndexMeta | null = null
  let bestPinned = 0
  for (const index of meta.indexes) {
    if (index.partial !== null && !Object.keys(index.partial).every((partial) => pinnedStrings.has(partial))) continue
    let k = 0
    while (k < index.fields.length && pinned.has(index.fields[k])) k++
    if (k === 0 || index.fields[k] !== field) continue
    if (tieBreak) {
      const next = index.fields[k + 1]
      // A walk forwards or backwards keeps the two columns' relative direction.
      if (next !== '_id' || sort[field] * index.key[field] !== idDirection * index.key._id) continue
    }
    if (k > bestPinned) {
      best = index
      bestPinned = k
    }
  }
  return best?.sqlName ?? null
}

/**
 * Whether a clause ANDed at the top compares `field` with a scalar other than
 * null: MongoDB compares only within a type, so every row selected holds that
 * type there and the type rank the order starts with is one constant.
 */
export function typeBracketed (filter: Filter, field: string): boolean {
  for (const key of Object.keys(filter)) {
    const value = filter[key]
    if (key === '$and' && (value as Filter[]).some((branch) => typeBracketed(branch, field))) return true
    if (key !== field) continue
    if (!isOperatorObject(value)) return isPinningScalar(value)
    if (BRACKETING.some((op) => Object.hasOwn(value, op) && isPinningScalar(value[op]))) return true
  }
  return false
}

const BRACKETING = ['$eq', '$gt', '$gte', '$lt', '$lte']
