import { QueryError } from '../errors.js'
import type { Document, Projection } from '../types.js'
import { parsePath, pathsConflict } from './paths.js'
import { cloneValue, isPlainObject, setField } from './values.js'

/** A projection as a tree of field names; `true` marks a projected leaf. */
type FieldTree = Map<string, FieldTree | true>

interface ParsedProjection { inclusion: boolean, tree: FieldTree }

export function validateProjection (projection: unknown, path = 'projection'): asserts projection is Projection {
  compileProjection(projection, path)
}

/** Compiles (and validates) a projection once; the returned function copies what it keeps. */
export function compileProjection (projection: unknown, path = 'projection'): (doc: Document) => Document {
  if (projection === undefined) return cloneValue
  const { inclusion, tree } = parseProjection(projection, path)
  if (tree.size === 0) return cloneValue
  return inclusion ? doc => includeFields(doc, tree) : doc => excludeFields(doc, tree)
}

export function applyProjection (doc: Document, projection: Projection | undefined): Document {
  return compileProjection(projection)(doc)
}

function parseProjection (projection: unknown, path: string): ParsedProjection {
  if (!isPlainObject(projection)) throw new QueryError(path, 'A projection must be a plain object')
  const fields = Object.keys(projection)
  let inclusion: boolean | undefined
  let idSetting: boolean | undefined
  const paths: string[] = []
  for (const field of fields) {
    const fieldPath = `${path}.${field}`
    const setting = projection[field]
    if (setting !== 0 && setting !== 1 && setting !== true && setting !== false) {
      throw new QueryError(fieldPath, 'A projection value must be 0, 1, true or false')
    }
    parsePath(field, fieldPath)
    const include = setting === 1 || setting === true
    if (field === '_id') {
      idSetting = include
      continue
    }
    if (inclusion !== undefined && inclusion !== include) {
      throw new QueryError(path, `Cannot mix inclusion and exclusion in a projection (at '${field}')`)
    }
    inclusion = include
    const clash = paths.find(other => pathsConflict(other, field))
    if (clash !== undefined) throw new QueryError(fieldPath, `Path collision between '${clash}' and '${field}'`)
    paths.push(field)
  }
  // {_id: 1} alone is an inclusion projection; {_id: 0} alone an exclusion one.
  const isInclusion = inclusion ?? (idSetting === true)
  const includeId = idSetting ?? true
  const tree: FieldTree = new Map()
  for (const field of paths) addToTree(tree, field.split('.'))
  // In an inclusion tree `_id` is kept; in an exclusion tree it is dropped.
  if (isInclusion === includeId) tree.set('_id', true)
  return { inclusion: isInclusion, tree }
}

function addToTree (tree: FieldTree, segments: string[]): void {
  let node = tree
  for (let i = 0; i < segments.length - 1; i++) {
    let child = node.get(segments[i])
    if (child === undefined || child === true) {
      child = new Map()
      node.set(segments[i], child)
    }
    node = child
  }
  node.set(segments[segments.length - 1], true)
}

/** Keeps the listed fields in document order; through arrays, objects are projected and scalars dropped. */
function includeFields (doc: Document, tree: FieldTree): Document {
  const result: Document = {}
  for (const key of Object.keys(doc)) {
    const node = tree.get(key)
    if (node === undefined) continue
    const value = doc[key]
    if (node === true) {
      setField(result, key, cloneValue(value))
    } else if (isPlainObject(value)) {
      setField(result, key, includeFields(value, node))
    } else if (Array.isArray(value)) {
      setField(result, key, includeInArray(value, node))
    }
  }
  return result
}

function includeInArray (array: unknown[], tree: FieldTree): unknown[] {
  const result: unknown[] = []
  for (const element of array) {
    if (isPlainObject(element)) result.push(includeFields(element, tree))
    else if (Array.isArray(element)) result.push(includeInArray(element, tree))
  }
  return result
}

/** Drops the listed fields; through arrays, objects are projected and everything else kept. */
function excludeFields (doc: Document, tree: FieldTree): Document {
  const result: Document = {}
  for (const key of Object.keys(doc)) {
    const node = tree.get(key)
    const value = doc[key]
    if (node === true) continue
    if (node === undefined || !(isPlainObject(value) || Array.isArray(value))) setField(result, key, cloneValue(value))
    else setField(result, key, isPlainObject(value) ? excludeFields(value, node) : excludeInArray(value, node))
  }
  return result
}

function excludeInArray (array: unknown[], tree: FieldTree): unknown[] {
  return array.map(element => {
    if (isPlainObject(element)) return excludeFields(element, tree)
    if (Array.isArray(element)) return excludeInArray(element, tree)
    return cloneValue(element)
  })
}
