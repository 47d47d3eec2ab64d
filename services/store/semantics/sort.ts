import { QueryError } from '../errors.js'
import type { Document, Sort, SortDirection } from '../types.js'
import { getField, isArrayIndex, parsePath } from './paths.js'
import { EMPTY_ARRAY_KEY, MISSING, compareValues, isPlainObject } from './values.js'

interface SortField { segments: string[], direction: SortDirection }

/** What a path yields before it meets an array: the value (or the array) and how many segments it consumed. */
interface Extracted { value: unknown, rest: number, indexedArray: boolean }

const PENDING: unique symbol = Symbol('pending')
type KeyPart = unknown

export function validateSort (sort: unknown, path = 'sort'): asserts sort is Sort {
  parseSort(sort, path)
}

function parseSort (sort: unknown, path: string): SortField[] {
  if (!isPlainObject(sort)) throw new QueryError(path, 'A sort must be a plain object')
  return Object.keys(sort).map(field => {
    const fieldPath = `${path}.${field}`
    const direction = sort[field]
    if (direction !== 1 && direction !== -1) throw new QueryError(fieldPath, 'A sort direction must be 1 or -1')
    return { segments: parsePath(field, fieldPath), direction }
  })
}

/**
 * MongoDB's sort order: each document's key is the smallest of the index keys
 * its sort paths generate under the sort's own directions — so an array sorts
 * by its minimum ascending and its maximum descending, keys through one array
 * stay correlated, an empty array sorts before null and missing sorts as null.
 * Ties return 0; callers add `_id` for a stable order.
 */
export function compileSort (sort: Sort): (a: Document, b: Document) => number {
  const fields = parseSort(sort, 'sort')
  if (fields.length === 0) return () => 0
  return (a, b) => {
    for (const { segments, direction } of fields) {
      const x = keyOutsideArrays(a, segments)
      const y = keyOutsideArrays(b, segments)
      if (x === THROUGH_ARRAY || y === THROUGH_ARRAY) return compareKeys(sortKey(a, fields), sortKey(b, fields), fields)
      const order = compareValues(x, y)
      if (order !== 0) return order * direction
    }
    return 0
  }
}

const THROUGH_ARRAY: unique symbol = Symbol('through-array')

/** The key of a path that meets no array (the common case), without allocating. */
function keyOutsideArrays (doc: Document, segments: string[]): KeyPart {
  let current: unknown = doc
  for (const segment of segments) {
    if (Array.isArray(current)) return THROUGH_ARRAY
    if (!isPlainObject(current) || !Object.hasOwn(current, segment)) return null
    current = current[segment]
  }
  if (Array.isArray(current)) return THROUGH_ARRAY
  return current === undefined ? null : current
}

/** Sorts a copy of `docs`, computing each document's key once (faster than compileSort for whole result sets). */
export function sortDocuments<T extends Document> (docs: T[], sort: Sort): T[] {
  const fields = parseSort(sort, 'sort')
  if (fields.length === 0) return docs.slice()
  return docs
    .map(doc => ({ doc, key: sortKey(doc, fields) }))
    .sort((a, b) => compareKeys(a.key, b.key, fields))
    .map(entry => entry.doc)
}

function compareKeys (a: KeyPart[], b: KeyPart[], fields: SortField[]): number {
  for (let i = 0; i < fields.length; i++) {
    const order = compareValues(a[i], b[i])
    if (order !== 0) return order * fields[i].direction
  }
  return 0
}

function sortKey (doc: Document, fields: SortField[]): KeyPart[] {
  const simple: KeyPart[] = []
  for (const field of fields) {
    const key = keyOutsideArrays(doc, field.segments)
    if (key === THROUGH_ARRAY) return keyThroughArrays(doc, fields)
    simple.push(key)
  }
  return simple
}

function keyThroughArrays (doc: Document, fields: SortField[]): KeyPart[] {
  const candidates: KeyPart[][] = []
  expand(doc, fields, fields.map(() => PENDING), fields.map(() => 0), fields.map(() => undefined), candidates)
  let best = candidates[0]
  for (let i = 1; i < candidates.length; i++) {
    if (compareKeys(candidates[i], best, fields) < 0) best = candidates[i]
  }
  return best
}

/** Follows a path through objects until it ends, goes missing, or meets an array. */
function extract (container: unknown, segments: string[], start: number): Extracted {
  let current = container
  for (let i = start; i < segments.length; i++) {
    if (!isPlainObject(current) && !(i === start && Array.isArray(current))) return { value: MISSING, rest: i, indexedArray: false }
    current = getField(current, segments[i])
    if (current === MISSING || Array.isArray(current)) return { value: current, rest: i + 1, indexedArray: false }
  }
  return { value: current, rest: segments.length, indexedArray: false }
}

/**
 * Generates the candidate keys as MongoDB's index key generator does: only
 * one array may be expanded per step (paths through two different arrays are
 * "parallel arrays", an error), a numeric segment after an array picks that
 * element, and array elements that are not objects yield null for deeper paths.
 */
function expand (
  container: unknown,
  fields: SortField[],
  keys: Array<KeyPart | typeof PENDING>,
  starts: number[],
  positional: Array<Extracted | undefined>,
  out: KeyPart[][]
): void {
  const resolved = keys.slice()
  let array: unknown[] | undefined
  const atArray: number[] = []
  const rests: number[] = []
  const unexpanded: boolean[] = []
  for (let i = 0; i < fields.length; i++) {
    if (resolved[i] !== PENDING) continue
    const found = positional[i] ?? extract(container, fields[i].segments, starts[i])
    if (found.value === MISSING) {
      resolved[i] = null
    } else if (Array.isArray(found.value)) {
      if (array === undefined) array = found.value
      else if (array !== found.value) throw new QueryError('sort', 'Cannot sort with keys that are parallel arrays')
      atArray.push(i)
      rests[i] = found.rest
      unexpanded[i] = found.indexedArray
    } else {
      resolved[i] = found.value
    }
  }
  if (array === undefined) {
    out.push(resolved)
    return
  }
  const nextStarts = starts.slice()
  const nextPositional = positional.slice()
  for (const i of atArray) {
    const segments = fields[i].segments
    nextPositional[i] = undefined
    if (rests[i] === segments.length) {
      if (array.length === 0) resolved[i] = EMPTY_ARRAY_KEY
      continue
    }
    nextStarts[i] = rests[i]
    const segment = segments[rests[i]]
    if (isArrayIndex(segment) && Number(segment) < array.length) {
      nextPositional[i] = { ...extract(array, segments, rests[i]), indexedArray: Array.isArray(array[Number(segment)]) }
    }
  }
  if (array.length === 0) {
    expand({}, fields, resolved, nextStarts, nextPositional, out)
    return
  }
  for (const element of array) {
    const elementKeys = resolved.slice()
    for (const i of atArray) {
      if (rests[i] === fields[i].segments.length) elementKeys[i] = unexpanded[i] ? array : element
    }
    expand(isPlainObject(element) ? element : {}, fields, elementKeys, nextStarts, nextPositional, out)
  }
}
