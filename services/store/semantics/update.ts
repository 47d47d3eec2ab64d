import { DocumentTooDeepError, InvalidDocumentError, InvalidUpdateError, QueryError } from '../errors.js'
import { UPDATE_OPERATORS, type Document, type Update } from '../types.js'
import { MAX_DOCUMENT_DEPTH } from './documents.js'
import { validateStorable } from './literals.js'
import { withoutNegativeZero } from './writes.js'
import { compilePullCondition } from './match.js'
import { compareSegments, parsePath, pathsConflict } from './paths.js'
import { MISSING, cloneValue, deepEqual, describeValue, isPlainObject, typeName } from './values.js'

type UpdateOperator = typeof UPDATE_OPERATORS[number]
type Container = Document | unknown[]

interface Operation {
  field: string
  segments: string[]
  apply: (doc: Document, isInsert: boolean) => void
}

export interface UpdateOptions { isInsert: boolean }
export interface UpdateOutcome { doc: Document, modified: boolean }
export type CompiledUpdate = (doc: Document, options: UpdateOptions) => UpdateOutcome

/** MongoDB refuses to pad an array past this many nulls. */
const MAX_PADDING = 1_500_000
const OPERATORS = new Set<string>(UPDATE_OPERATORS)
const DIGITS = /^\d+$/

/** Compiles (and validates) an update once; the returned function never mutates its input document. */
export function compileUpdate (update: unknown, path = 'update'): CompiledUpdate {
  const operations = parseUpdate(update, path)
  return (doc, options) => {
    const result = cloneValue(doc)
    for (const operation of operations) operation.apply(result, options.isInsert)
    if (Object.hasOwn(doc, '_id') && !deepEqual(result._id, doc._id)) {
      throw new InvalidUpdateError('_id', "The immutable field '_id' cannot be changed")
    }
    return { doc: result, modified: !deepEqual(result, doc) }
  }
}

export function validateUpdate (update: unknown, path = 'update'): asserts update is Update {
  parseUpdate(update, path)
}

export function applyUpdate (doc: Document, update: Update, options: UpdateOptions): UpdateOutcome {
  return compileUpdate(update)(doc, options)
}

function parseUpdate (update: unknown, path: string): Operation[] {
  if (!isPlainObject(update)) throw new QueryError(path, 'An update must be a plain object of update operators')
  const operatorNames = Object.keys(update)
  if (operatorNames.length === 0) throw new QueryError(path, 'An update cannot be empty')
  const operations: Operation[] = []
  for (const operator of operatorNames) {
    const operatorPath = `${path}.${operator}`
    if (!OPERATORS.has(operator)) {
      throw new QueryError(operatorPath, operator.startsWith('$')
        ? `Unknown or unsupported update operator '${operator}'`
        : 'Replacement documents are not supported; use update operators such as $set')
    }
    const operand = update[operator]
    if (!isPlainObject(operand)) throw new QueryError(operatorPath, `${operator} takes an object of field paths`)
    for (const field of Object.keys(operand)) {
      const fieldPath = `${operatorPath}.${field}`
      const segments = parsePath(field, fieldPath)
      const value = operand[field]
      checkIdField(operator as UpdateOperator, segments, value, fieldPath)
      const clash = operations.find(other => pathsConflict(other.field, field))
      if (clash !== undefined) {
        const at = clash.field.length <= field.length ? clash.field : field
        throw new QueryError(fieldPath, `Updating the path '${field}' would create a conflict at '${at}'`)
      }
      operations.push({ field, segments, apply: buildOperation(operator as UpdateOperator, segments, field, value, fieldPath) })
    }
  }
  // MongoDB walks its update tree in field-name order, which fixes the order new fields are appended in.
  return operations.sort((a, b) => compareSegments(a.segments, b.segments))
}

function checkIdField (operator: UpdateOperator, segments: string[], value: unknown, path: string): void {
  if (segments[0] !== '_id') return
  if (operator === '$setOnInsert' && segments.length === 1) {
    if (typeof value !== 'string') throw new InvalidDocumentError(path, '_id must be a string')
    return
  }
  throw new QueryError(path, "The immutable field '_id' cannot be updated")
}

/**
 * Values are written as given but for -0, written as 0 (withoutNegativeZero).
 * A value's depth counts from its path: `a.b` holds it at level 2, so a
 * dotted path cannot nest a document past the limit.
 */
function buildOperation (operator: UpdateOperator, segments: string[], field: string, given: unknown, path: string): Operation['apply'] {
  if (operator !== '$push' && operator !== '$addToSet' && isPlainObject(given) && Object.hasOwn(given, '$each')) {
    throw new QueryError(`${path}.$each`, '$each is only valid in $push and $addToSet')
  }
  if (operator !== '$unset' && operator !== '$pull' && segments.length > MAX_DOCUMENT_DEPTH) {
    throw new DocumentTooDeepError(path, `Documents cannot be nested deeper than ${MAX_DOCUMENT_DEPTH} levels`)
  }
  const value = operator === '$pull' ? given : withoutNegativeZero(given)
  switch (operator) {
    case '$set':
    case '$setOnInsert': {
      validateStorable(value, path, segments.length)
      const onInsertOnly = operator === '$setOnInsert'
      return (doc, isInsert) => {
        if (onInsertOnly && !isInsert) return
        const parent = resolveParent(doc, segments, field, true)
        if (parent !== undefined) assignChild(parent, segments, segments.length - 1, cloneValue(value), field)
      }
    }
    case '$unset':
      return doc => { unsetAt(doc, segments, field) }
    case '$inc':
      if (typeof value !== 'number') throw new QueryError(path, '$inc takes a number')
      if (!Number.isFinite(value)) throw new InvalidDocumentError(path, 'Numbers must be finite (NaN and Infinity cannot be stored)')
      return doc => { incrementAt(doc, segments, field, value) }
    case '$push':
    case '$addToSet': {
      const values = parseEach(value, path, segments.length + 1)
      const unique = operator === '$addToSet'
      return doc => { pushAt(doc, segments, field, values, unique) }
    }
    case '$pull': {
      const condition = compilePullCondition(value, path)
      return doc => { pullAt(doc, segments, field, condition) }
    }
  }
}

function parseEach (value: unknown, path: string, elementDepth: number): unknown[] {
  if (isPlainObject(value) && Object.hasOwn(value, '$each')) {
    for (const key of Object.keys(value)) {
      if (key !== '$each') throw new QueryError(`${path}.${key}`, `The modifier '${key}' is not supported (only $each)`)
    }
    const each = value.$each
    if (!Array.isArray(each)) throw new QueryError(`${path}.$each`, '$each takes an array')
    each.forEach((element, i) => { validateStorable(element, `${path}.$each[${i}]`, elementDepth) })
    return each
  }
  validateStorable(value, path, elementDepth)
  return [value]
}

function childOf (container: Container, segment: string): unknown {
  if (Array.isArray(container)) {
    if (!DIGITS.test(segment)) return MISSING
    const index = Number(segment)
    return index < container.length ? container[index] : MISSING
  }
  return Object.hasOwn(container, segment) ? container[segment] : MISSING
}

/** Where an update writes: refuses to turn a scalar into an object or to name an array element by anything but its index. */
function assignChild (container: Container, segments: string[], i: number, value: unknown, field: string): void {
  const segment = segments[i]
  if (!Array.isArray(container)) {
    container[segment] = value
    return
  }
  if (!DIGITS.test(segment)) {
    throw new InvalidUpdateError(field, `Cannot create field '${segment}' in element {${segments[i - 1] ?? ''}: ${describeValue(container)}}`)
  }
  const index = Number(segment)
  if (index - container.length > MAX_PADDING) throw new InvalidUpdateError(field, `Cannot pad the array at '${segments.slice(0, i).join('.')}' to index ${index}`)
  while (container.length < index) container.push(null)
  container[index] = value
}

/**
 * The container that holds the last segment. With `create`, missing
 * intermediate fields become objects (arrays are padded); without it a
 * missing or non-viable path yields undefined (so $unset and $pull do nothing).
 */
function resolveParent (doc: Document, segments: string[], field: string, create: boolean): Container | undefined {
  let current: Container = doc
  for (let i = 0; i < segments.length - 1; i++) {
    let child = childOf(current, segments[i])
    if (child === MISSING) {
      if (!create) return undefined
      child = {}
      assignChild(current, segments, i, child, field)
    } else if (!isPlainObject(child) && !Array.isArray(child)) {
      if (!create) return undefined
      throw new InvalidUpdateError(field, `Cannot create field '${segments[i + 1]}' in element {${segments[i]}: ${describeValue(child)}}`)
    }
    current = child as Container
  }
  return current
}

function unsetAt (doc: Document, segments: string[], field: string): void {
  const parent = resolveParent(doc, segments, field, false)
  if (parent === undefined) return
  const last = segments[segments.length - 1]
  if (Array.isArray(parent)) {
    // MongoDB keeps array positions stable: an unset element becomes null.
    if (childOf(parent, last) !== MISSING) parent[Number(last)] = null
  } else {
    delete parent[last]
  }
}

function incrementAt (doc: Document, segments: string[], field: string, amount: number): void {
  const parent = resolveParent(doc, segments, field, true) as Container
  const last = segments.length - 1
  const current = childOf(parent, segments[last])
  if (current === MISSING) {
    assignChild(parent, segments, last, amount, field)
  } else if (typeof current === 'number') {
    assignChild(parent, segments, last, current + amount, field)
  } else {
    throw new InvalidUpdateError(field, `Cannot apply $inc to a value of non-numeric type: '${field}' is ${typeName(current)}`)
  }
}

function pushAt (doc: Document, segments: string[], field: string, values: unknown[], unique: boolean): void {
  const parent = resolveParent(doc, segments, field, true) as Container
  const last = segments.length - 1
  const current = childOf(parent, segments[last])
  let target: unknown[]
  if (current === MISSING) {
    target = []
    assignChild(parent, segments, last, target, field)
  } else if (Array.isArray(current)) {
    target = current
  } else {
    throw new InvalidUpdateError(field, `The field '${field}' must be an array but is of type ${typeName(current)}`)
  }
  for (const value of values) {
    if (unique && target.some(existing => deepEqual(existing, value))) continue
    target.push(cloneValue(value))
  }
}

function pullAt (doc: Document, segments: string[], field: string, condition: (element: unknown) => boolean): void {
  const parent = resolveParent(doc, segments, field, false)
  if (parent === undefined) return
  const last = segments.length - 1
  const current = childOf(parent, segments[last])
  if (current === MISSING) return
  if (!Array.isArray(current)) throw new InvalidUpdateError(field, `Cannot apply $pull to a non-array value: '${field}' is ${typeName(current)}`)
  const kept = current.filter(element => !condition(element))
  if (kept.length !== current.length) assignChild(parent, segments, last, kept, field)
}
