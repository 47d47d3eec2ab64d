import { IndexConflictError, InvalidIndexError } from '../errors.js'
import type { CreateIndexOptions, Document, Filter, IndexDescription, IndexKey } from '../types.js'
import { isPlainObject } from './values.js'

/** MongoDB's limit per collection, the `_id_` index included; the embedded engine keeps to it too. */
export const MAX_INDEXES = 64
export const MAX_INDEX_FIELDS = 32
const MAX_INDEX_NAME = 120

/**
 * Segments neither engine can index alike: empty or `$` segments, numeric
 * ones (MongoDB reads `a.0` as an array position or a field named "0", which
 * SQLite's JSON paths cannot express), and characters SQLite's JSON paths
 * cannot quote.
 */
export const UNADDRESSABLE_SEGMENT = /["\\\u0000-\u001f\ud800-\udfff]|^\d+$/

export interface IndexSpec { key: IndexKey, fields: string[], name: string, unique: boolean, partial: Filter | null }

export function defaultIndexName (key: IndexKey): string {
  return Object.entries(key).map(([field, direction]) => `${field}_${direction}`).join('_')
}

export function validateIndexName (name: unknown): asserts name is string {
  if (typeof name !== 'string' || name.length === 0) throw new InvalidIndexError('An index name must be a non-empty string')
  if (name.length > MAX_INDEX_NAME) throw new InvalidIndexError(`An index name cannot be longer than ${MAX_INDEX_NAME} characters`)
  if (name.includes('\0') || !name.isWellFormed()) throw new InvalidIndexError('An index name cannot contain a null byte or unpaired surrogates')
}

/** The index both engines would build for `createIndex(key, options)`, or the one refusal both give. */
export function indexSpec (key: unknown, options: CreateIndexOptions = {}): IndexSpec {
  if (key === null || typeof key !== 'object' || Array.isArray(key)) throw new InvalidIndexError('An index key must be an object such as {field: 1}')
  const fields = Object.keys(key)
  if (fields.length === 0) throw new InvalidIndexError('An index key needs at least one field')
  if (fields.length > MAX_INDEX_FIELDS) throw new InvalidIndexError(`An index key can hold at most ${MAX_INDEX_FIELDS} fields`)
  for (const field of fields) {
    const direction = (key as Record<string, unknown>)[field]
    if (direction !== 1 && direction !== -1) throw new InvalidIndexError(`The direction of '${field}' in an index key must be 1 or -1`)
    if (field !== '_id' && field.split('.').some((segment) => segment.length === 0 || segment.startsWith('$') || UNADDRESSABLE_SEGMENT.test(segment))) {
      throw new InvalidIndexError(`The field path '${field}' cannot be indexed (empty, '$' or numeric segments, quotes, backslashes or control characters)`)
    }
  }
  const name = options.name ?? defaultIndexName(key as IndexKey)
  validateIndexName(name)
  const unique = options.unique === true
  const partial = options.partialFilterExpression === undefined ? null : partialFilter(options.partialFilterExpression, fields, unique)
  return { key: key as IndexKey, fields, name, unique, partial }
}

function partialFilter (partial: unknown, fields: string[], unique: boolean): Filter {
  if (!isPlainObject(partial) || Object.keys(partial).length === 0) throw new InvalidIndexError('A partialFilterExpression must be an object naming at least one field')
  if (unique) throw new InvalidIndexError('A unique index cannot have a partialFilterExpression in the Store\'s subset')
  for (const [field, condition] of Object.entries(partial)) {
    if (field === '_id' || !fields.includes(field)) throw new InvalidIndexError(`The partialFilterExpression field '${field}' must be one of the index key's fields other than _id`)
    if (!isPlainObject(condition) || Object.keys(condition).length !== 1 || condition.$gte !== '') {
      throw new InvalidIndexError(`The partialFilterExpression of '${field}' must be { $gte: '' } (the field holds a string), the one form the Store supports`)
    }
  }
  // Rebuilt in the key's order, so two specs of the same filter compare equal whatever order they were written in.
  return Object.fromEntries(fields.filter((field) => Object.hasOwn(partial, field)).map((field) => [field, { $gte: '' }]))
}

function sameKey (a: IndexKey, b: IndexKey): boolean {
  return JSON.stringify(a) === JSON.stringify(b)
}

function samePartial (a: Filter | undefined | null, b: Filter | null): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b)
}

/**
 * Given the collection's indexes now (`_id_` included once it exists), the
 * name of an identical index already there, or null when `spec` may be
 * built; refuses what MongoDB refuses (IndexOptionsConflict,
 * IndexKeySpecsConflict, too many indexes) with one error per case.
 */
export function existingIndex (existing: IndexDescription[], spec: IndexSpec): string | null {
  // Every collection has it: asking for it by key (under its default or its own name) is a no-op.
  if (spec.fields.length === 1 && spec.key._id === 1 && (spec.name === '_id_1' || spec.name === '_id_')) return '_id_'
  const byName = existing.find((index) => index.name === spec.name) ?? (spec.name === '_id_' ? { name: '_id_', key: { _id: 1 }, unique: true } as IndexDescription : undefined)
  if (byName !== undefined) {
    if (sameKey(byName.key, spec.key) && byName.unique === spec.unique && samePartial(byName.partialFilterExpression, spec.partial)) return byName.name
    throw new IndexConflictError(`An index named '${spec.name}' already exists with a different key or options`)
  }
  const byKey = existing.find((index) => sameKey(index.key, spec.key))
  if (byKey !== undefined) throw new IndexConflictError(`An index with this key already exists as '${byKey.name}'`)
  const count = existing.some((index) => index.name === '_id_') ? existing.length : existing.length + 1
  if (count >= MAX_INDEXES) throw new InvalidIndexError(`A collection can have at most ${MAX_INDEXES} indexes, _id_ included`)
  return null
}

/** Dropping `_id_` is refused by both engines alike. */
export function checkDropIndex (name: unknown): asserts name is string {
  validateIndexName(name)
  if (name === '_id_') throw new InvalidIndexError('The _id index cannot be dropped')
}

/**
 * The two fields of a compound index that hold different arrays in `doc`
 * ("parallel arrays", which MongoDB cannot index and refuses), or null.
 * Fields reaching the same array (`a.x` and `a.y` through an array `a`) are
 * followed into each element, where they must not fork into arrays again.
 */
export function parallelArrays (doc: Document, fields: string[]): [string, string] | null {
  return forkedArrays(doc, fields.map((field) => ({ field, rest: field.split('.') })))
}

interface IndexPath { field: string, rest: string[] }

function forkedArrays (container: Document, paths: IndexPath[]): [string, string] | null {
  const arrays = new Map<string, { array: unknown[], paths: IndexPath[] }>()
  for (const path of paths) {
    let value: unknown = container
    let depth = 0
    while (depth < path.rest.length && isPlainObject(value)) {
      value = value[path.rest[depth]]
      depth++
      if (Array.isArray(value)) break
    }
    if (!Array.isArray(value)) continue
    const prefix = path.rest.slice(0, depth).join('.')
    const entry = arrays.get(prefix) ?? { array: value, paths: [] as IndexPath[] }
    entry.paths.push({ field: path.field, rest: path.rest.slice(depth) })
    arrays.set(prefix, entry)
  }
  if (arrays.size > 1) {
    const [first, second] = [...arrays.values()]
    return [first.paths[0].field, second.paths[0].field]
  }
  const [shared] = arrays.values()
  const deeper = shared?.paths.filter((path) => path.rest.length > 0) ?? []
  if (deeper.length < 2) return null
  for (const element of shared.array) {
    if (!isPlainObject(element)) continue
    const forked = forkedArrays(element, deeper)
    if (forked !== null) return forked
  }
  return null
}
