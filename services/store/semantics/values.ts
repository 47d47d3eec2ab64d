import type { Document } from '../types.js'

/** A path that leads nowhere; distinct from a stored null (`$exists` tells them apart). */
export const MISSING: unique symbol = Symbol('missing')
export type Missing = typeof MISSING

/**
 * The sort key of an empty array at the end of a sort path: MongoDB indexes it
 * as BSON `undefined`, which sorts before null.
 */
export const EMPTY_ARRAY_KEY: unique symbol = Symbol('empty-array-key')

/** BSON canonical type ranks for the value types a document may hold. */
export const Rank = {
  Undefined: 0,
  Null: 5,
  Number: 10,
  String: 15,
  Object: 20,
  Array: 25,
  Boolean: 40,
  Date: 45,
  RegExp: 50
} as const

export function isPlainObject (value: unknown): value is Document {
  if (value === null || typeof value !== 'object') return false
  const proto = Object.getPrototypeOf(value)
  return proto === Object.prototype || proto === null
}

export function rankOf (value: unknown): number {
  switch (typeof value) {
    case 'number': return Rank.Number
    case 'string': return Rank.String
    case 'boolean': return Rank.Boolean
    case 'object':
      if (value === null) return Rank.Null
      if (Array.isArray(value)) return Rank.Array
      if (value instanceof Date) return Rank.Date
      if (value instanceof RegExp) return Rank.RegExp
      return Rank.Object
    case 'symbol':
      return value === EMPTY_ARRAY_KEY ? Rank.Undefined : Rank.Null
    default:
      return Rank.Null
  }
}

/** NaN sorts below every other number and equals itself, as in BSON. */
function compareNumbers (a: number, b: number): number {
  if (a < b) return -1
  if (a > b) return 1
  if (a === b) return 0
  const aNaN = Number.isNaN(a)
  const bNaN = Number.isNaN(b)
  if (aNaN && bNaN) return 0
  return aNaN ? -1 : 1
}

/**
 * Code point order, which is MongoDB's (UTF-8 byte) order. Plain `<` compares
 * UTF-16 units and misplaces astral characters against U+E000–U+FFFF.
 */
export function compareStrings (a: string, b: string): number {
  if (a === b) return 0
  const length = Math.min(a.length, b.length)
  for (let i = 0; i < length; i++) {
    const x = a.charCodeAt(i)
    const y = b.charCodeAt(i)
    if (x !== y) return codePointWeight(x) < codePointWeight(y) ? -1 : 1
  }
  return a.length < b.length ? -1 : 1
}

function codePointWeight (unit: number): number {
  if (unit < 0xD800) return unit
  return unit >= 0xE000 ? unit - 0x800 : unit + 0x2000
}

function compareObjects (a: Document, b: Document): number {
  const aKeys = Object.keys(a)
  const bKeys = Object.keys(b)
  const length = Math.min(aKeys.length, bKeys.length)
  for (let i = 0; i < length; i++) {
    const aValue = a[aKeys[i]]
    const bValue = b[bKeys[i]]
    const byRank = rankOf(aValue) - rankOf(bValue)
    if (byRank !== 0) return byRank < 0 ? -1 : 1
    const byName = compareStrings(aKeys[i], bKeys[i])
    if (byName !== 0) return byName
    const byValue = compareValues(aValue, bValue)
    if (byValue !== 0) return byValue
  }
  return compareNumbers(aKeys.length, bKeys.length)
}

function compareArrays (a: unknown[], b: unknown[]): number {
  const length = Math.min(a.length, b.length)
  for (let i = 0; i < length; i++) {
    const byValue = compareValues(a[i], b[i])
    if (byValue !== 0) return byValue
  }
  return compareNumbers(a.length, b.length)
}

/**
 * MongoDB's BSON order restricted to our value types: null (and missing) <
 * numbers < strings < objects < arrays < booleans < dates.
 */
export function compareValues (a: unknown, b: unknown): number {
  if (typeof a === 'number' && typeof b === 'number') return compareNumbers(a, b)
  const aRank = rankOf(a)
  const bRank = rankOf(b)
  if (aRank !== bRank) return aRank < bRank ? -1 : 1
  switch (aRank) {
    case Rank.Number: return compareNumbers(a as number, b as number)
    case Rank.String: return compareStrings(a as string, b as string)
    case Rank.Object: return compareObjects(a as Document, b as Document)
    case Rank.Array: return compareArrays(a as unknown[], b as unknown[])
    case Rank.Boolean: return a === b ? 0 : (a === true ? 1 : -1)
    case Rank.Date: return compareNumbers((a as Date).getTime(), (b as Date).getTime())
    case Rank.RegExp: {
      const x = a as RegExp
      const y = b as RegExp
      return compareStrings(x.source, y.source) || compareStrings(x.flags, y.flags)
    }
    default: return 0
  }
}

/** BSON equality: numbers by value, objects field by field in order, dates by time. */
export function deepEqual (a: unknown, b: unknown): boolean {
  if (a === b) return true
  switch (typeof a) {
    case 'number':
      return typeof b === 'number' && Number.isNaN(a) && Number.isNaN(b)
    case 'object':
      if (a === null || b === null || typeof b !== 'object') return rankOf(a) === Rank.Null && rankOf(b) === Rank.Null
      if (Array.isArray(a)) {
        if (!Array.isArray(b) || a.length !== b.length) return false
        for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false
        return true
      }
      if (a instanceof Date) return b instanceof Date && compareNumbers(a.getTime(), b.getTime()) === 0
      if (a instanceof RegExp) return b instanceof RegExp && a.source === b.source && a.flags === b.flags
      if (!isPlainObject(a) || !isPlainObject(b)) return false
      return objectsEqual(a, b)
    case 'undefined':
      return b === null
    default:
      return false
  }
}

function objectsEqual (a: Document, b: Document): boolean {
  const aKeys = Object.keys(a)
  const bKeys = Object.keys(b)
  if (aKeys.length !== bKeys.length) return false
  for (let i = 0; i < aKeys.length; i++) {
    if (aKeys[i] !== bKeys[i] || !deepEqual(a[aKeys[i]], b[bKeys[i]])) return false
  }
  return true
}

/** A deep copy of a document value; dates are copied, scalars shared. */
export function cloneValue<T> (value: T): T {
  if (value === null || typeof value !== 'object') return value
  if (Array.isArray(value)) return value.map(cloneValue) as T
  if (value instanceof Date) return new Date(value.getTime()) as T
  if (!isPlainObject(value)) return value
  const copy: Document = {}
  for (const key of Object.keys(value)) setField(copy, key, cloneValue(value[key]))
  return copy as T
}

/** Sets an own field; plain assignment to `__proto__` (a legal key after JSON.parse) would swap the prototype instead. */
export function setField (target: Document, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
  else target[key] = value
}

/** A short rendering of a value for error messages. */
export function describeValue (value: unknown): string {
  if (value === MISSING) return 'missing'
  if (value instanceof Date) return `new Date(${value.getTime()})`
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? value.slice(0, 40) + '…' : value)
  if (value === undefined) return 'undefined'
  try {
    const text = JSON.stringify(value)
    return text.length > 60 ? text.slice(0, 60) + '…' : text
  } catch {
    return String(value)
  }
}

export function typeName (value: unknown): string {
  switch (rankOf(value)) {
    case Rank.Null: return 'null'
    case Rank.Number: return 'number'
    case Rank.String: return 'string'
    case Rank.Object: return 'object'
    case Rank.Array: return 'array'
    case Rank.Boolean: return 'bool'
    case Rank.Date: return 'date'
    default: return typeof value
  }
}
