import { QueryError } from '../errors.js'
import type { Document } from '../types.js'
import { MISSING, compareStrings, isPlainObject, type Missing } from './values.js'

/** Splits a dotted field path, refusing empty segments and `$` segments (positional operators are not supported). */
export function parsePath (path: string, errorPath: string): string[] {
  if (path.length === 0) throw new QueryError(errorPath, 'A field path cannot be empty')
  // BSON names are C strings and UTF-8: a NUL or a lone surrogate would fail or change on the way to MongoDB.
  if (path.includes('\0') || !path.isWellFormed()) throw new QueryError(errorPath, 'A field path cannot contain a null byte or unpaired surrogates')
  const segments = path.split('.')
  for (const segment of segments) {
    if (segment.length === 0) throw new QueryError(errorPath, `The field path '${path}' has an empty segment`)
    if (segment.startsWith('$')) throw new QueryError(errorPath, `The field path '${path}' has a segment starting with '$', which is not supported`)
    if (segment === '__proto__') throw new QueryError(errorPath, "A field path cannot use '__proto__'")
  }
  return segments
}

/** How BSON names array elements: "0", "1", … with no leading zeros. */
export function isArrayIndex (segment: string): boolean {
  const length = segment.length
  if (length === 0 || length > 9) return false
  if (segment.charCodeAt(0) === 48) return length === 1
  for (let i = 0; i < length; i++) {
    const code = segment.charCodeAt(i)
    if (code < 48 || code > 57) return false
  }
  return true
}

/** A field of a plain object, or an element of an array looked up by its BSON field name; callers pass only those two. */
export function getField (container: Document | unknown[], segment: string): unknown {
  if (Array.isArray(container)) {
    if (!isArrayIndex(segment)) return MISSING
    const index = Number(segment)
    return index < container.length ? container[index] : MISSING
  }
  return Object.hasOwn(container, segment) ? container[segment] : MISSING
}

/** Traverse: test each element of an array at the end of the path, then the array; NoTraversal: the array only ($size, $elemMatch). */
export const LeafArrays = { Traverse: 0, NoTraversal: 1 } as const
export type LeafArrays = typeof LeafArrays[keyof typeof LeafArrays]

export type ElementTest = (value: unknown | Missing) => boolean

/**
 * True when `test` holds for any value MongoDB's matcher generates for the
 * path: objects are walked, arrays of objects are expanded at every level, a
 * numeric segment also indexes the array, and a path that dead-ends in an
 * object yields MISSING (so `{a: null}` matches it) while one that dead-ends
 * among array scalars yields nothing.
 */
export function someAtPath (root: Document | unknown[], segments: string[], leaf: LeafArrays, test: ElementTest): boolean {
  return fromContainer(root, segments, 0, leaf, test)
}

function fromContainer (container: Document | unknown[], segments: string[], start: number, leaf: LeafArrays, test: ElementTest): boolean {
  let current = container
  let i = start
  for (;;) {
    const next = getField(current, segments[i])
    i++
    if (next === MISSING) return test(MISSING)
    if (Array.isArray(next)) return fromArray(next, segments, i, leaf, test)
    if (i === segments.length) return test(next)
    if (!isPlainObject(next)) return test(MISSING)
    current = next
  }
}

function fromArray (array: unknown[], segments: string[], i: number, leaf: LeafArrays, test: ElementTest): boolean {
  if (i === segments.length) {
    if (leaf === LeafArrays.NoTraversal) return test(array)
    for (const element of array) if (test(element)) return true
    return test(array)
  }
  const offset = isArrayIndex(segments[i]) ? Number(segments[i]) : -1
  const lastSegment = i + 1 === segments.length
  for (let k = 0; k < array.length; k++) {
    const element = array[k]
    if (isPlainObject(element)) {
      if (fromContainer(element, segments, i, leaf, test)) return true
      if (k === offset && (lastSegment ? test(element) : fromContainer(element, segments, i + 1, leaf, test))) return true
    } else if (k === offset) {
      if (lastSegment) {
        if (test(element)) return true
      } else if (Array.isArray(element) && fromArray(element, segments, i + 1, leaf, test)) {
        return true
      }
    }
  }
  return false
}

/** Orders update paths the way MongoDB builds its update tree: numbers numerically, other names bytewise. */
function compareFieldNames (a: string, b: string): number {
  const aNumeric = a.length > 0 && isDigit(a.charCodeAt(0)) && !(a.charCodeAt(0) === 48 && a.length > 1)
  const bNumeric = b.length > 0 && isDigit(b.charCodeAt(0)) && !(b.charCodeAt(0) === 48 && b.length > 1)
  if (aNumeric && bNumeric && a.length !== b.length) return a.length < b.length ? -1 : 1
  return compareStrings(a, b)
}

function isDigit (code: number): boolean {
  return code >= 48 && code <= 57
}

/** Orders split paths segment by segment with compareFieldNames. */
export function compareSegments (a: string[], b: string[]): number {
  const length = Math.min(a.length, b.length)
  for (let i = 0; i < length; i++) {
    const order = compareFieldNames(a[i], b[i])
    if (order !== 0) return order
  }
  return a.length - b.length
}

/** True when one path equals the other or is a prefix of it on a segment boundary. */
export function pathsConflict (a: string, b: string): boolean {
  if (a === b) return true
  const [shorter, longer] = a.length < b.length ? [a, b] : [b, a]
  return longer.startsWith(shorter) && longer.charCodeAt(shorter.length) === 46
}
