import { InvalidUpdateError, QueryError } from '../errors.js'
import type { Document, Filter, Update } from '../types.js'
import { compileQuery, isOperatorObject } from './match.js'
import { compareSegments, pathsConflict } from './paths.js'
import { cloneValue, deepEqual, isPlainObject } from './values.js'
import { withoutNegativeZero } from './writes.js'

interface Equality { path: string, segments: string[], value: unknown }

/**
 * The document an upsert starts from: the filter's equality conditions
 * (plain values, $eq, a one-element $in, $all members, inside $and or a
 * one-branch $or, as the server's query normaliser leaves them) written at
 * their paths. `_id` comes first; other fields in path order.
 */
export function seedFromFilter (filter: Filter): Document {
  compileQuery(filter, 'filter')
  const equalities: Equality[] = []
  collectEqualities(filter, equalities)
  equalities.sort((a, b) => compareSegments(a.segments, b.segments))
  const seed: Document = {}
  const id = equalities.find(equality => equality.path === '_id')
  if (id !== undefined) seed._id = cloneValue(id.value)
  for (const equality of equalities) {
    if (equality !== id) writeAt(seed, equality.segments, cloneValue(equality.value))
  }
  return withoutNegativeZero(seed)
}

/**
 * The seed of an upsert with `update`, refused (on both engines, whether or
 * not a document matches) when `$setOnInsert` gives `_id` a value other than
 * the filter's: MongoDB would refuse the insert with ImmutableField.
 */
export function upsertSeed (filter: Filter, update: Update): Document {
  const seed = seedFromFilter(filter)
  const onInsert = update.$setOnInsert
  if (seed._id !== undefined && isPlainObject(onInsert) && onInsert._id !== undefined && !deepEqual(onInsert._id, seed._id)) {
    throw new InvalidUpdateError('update.$setOnInsert._id', "Performing an update on the path '_id' would modify the immutable field '_id' (the filter's _id differs)")
  }
  return seed
}

function collectEqualities (query: Document, into: Equality[]): void {
  for (const key of Object.keys(query)) {
    const value = query[key]
    if (key === '$and') {
      for (const branch of value as Document[]) collectEqualities(branch, into)
    } else if (key === '$or') {
      const branches = value as Document[]
      if (branches.length === 1) collectEqualities(branches[0], into)
    } else if (key.startsWith('$') || value instanceof RegExp) {
      continue
    } else if (isOperatorObject(value)) {
      if (Object.hasOwn(value, '$eq')) addEquality(into, key, value.$eq)
      const members = value.$in
      if (Array.isArray(members) && members.length === 1 && !(members[0] instanceof RegExp)) addEquality(into, key, members[0])
      // $all is an $and of equalities, so two members on one path are a conflict, as on the server.
      const all = value.$all
      if (Array.isArray(all)) {
        for (const member of all) if (!(member instanceof RegExp) && !isOperatorObject(member)) addEquality(into, key, member)
      }
    } else {
      addEquality(into, key, value)
    }
  }
}

function addEquality (into: Equality[], path: string, value: unknown): void {
  const clash = into.find(other => pathsConflict(other.path, path))
  if (clash !== undefined) {
    throw new QueryError('filter', `Cannot infer the fields to insert: '${clash.path}' and '${path}' are both matched by equality`)
  }
  into.push({ path, segments: path.split('.'), value })
}

/** Equality paths never conflict, so every intermediate is missing or an object this function created. */
function writeAt (doc: Document, segments: string[], value: unknown): void {
  let current = doc
  for (let i = 0; i < segments.length - 1; i++) {
    const next = current[segments[i]]
    if (!isPlainObject(next)) current[segments[i]] = {}
    current = current[segments[i]] as Document
  }
  current[segments[segments.length - 1]] = value
}
