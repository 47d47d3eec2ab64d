import { createHmac } from 'node:crypto'
import { badRequest } from '../errors.js'
import { nestedDeeperThan } from '../nesting.js'
import { constantTimeEqual } from '../crypto.js'
import { validateFilter } from '../store/semantics/match.js'
import { QueryError } from '../store/errors.js'
import type { Document, Filter, Sort } from '../store/types.js'
import type { FieldMap } from './record-fields.js'
import { deepFreeze } from '../deep-freeze.js'

/** Published in openapi.yaml and the README; anything beyond them is a 400 naming the clause. */
export const QUERY_LIMITS = {
  maxFilterBytes: 4096,
  maxDepth: 6,
  maxClauses: 64,
  maxInValues: 100,
  maxRegexLength: 256,
  defaultLimit: 30,
  maxLimit: 200,
  maxOffset: 10_000,
  maxSortKeys: 4
} as const

const LOGICAL = new Set(['$and', '$or', '$nor'])
const FIELD_OPERATORS = new Set(['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$exists', '$regex', '$options', '$not', '$elemMatch', '$all', '$size'])
const LIST_OPERATORS = new Set(['$in', '$nin', '$all'])
const BUILT_IN: Record<string, string> = { id: 'text', createdAt: 'date', updatedAt: 'date' }
const UNSORTABLE = new Set(['json', 'file'])

function invalidFilter (path: string, message: string): Error {
  return badRequest('APP_INVALID_FILTER', `${path}: ${message}`, { path })
}

function isPlain (value: unknown): value is Document {
  return value !== null && typeof value === 'object' && !Array.isArray(value)
}

function typeOf (fields: FieldMap, name: string): string | undefined {
  return BUILT_IN[name] ?? fields.get(name)?.type
}

/** Date fields are stored as dates; a filter names them with ISO strings. */
function dateValue (value: unknown, path: string): unknown {
  if (typeof value !== 'string') return value
  const date = new Date(value)
  if (Number.isNaN(date.getTime())) throw invalidFilter(path, 'expected an ISO 8601 date')
  return date
}

class FilterWalker {
  private clauses = 0
  constructor (private readonly fields: FieldMap) {}

  clause (node: unknown, path: string, depth: number): Document {
    if (depth > QUERY_LIMITS.maxDepth) throw invalidFilter(path, `nested deeper than ${QUERY_LIMITS.maxDepth} levels`)
    if (!isPlain(node)) throw invalidFilter(path, 'must be an object')
    const out: Document = {}
    for (const [key, value] of Object.entries(node)) {
      const at = `${path}.${key}`
      if (++this.clauses > QUERY_LIMITS.maxClauses) throw invalidFilter(at, `more than ${QUERY_LIMITS.maxClauses} clauses`)
      if (key.startsWith('$')) {
        if (!LOGICAL.has(key)) throw invalidFilter(at, `operator ${key} is not allowed here`)
        if (!Array.isArray(value) || value.length === 0) throw invalidFilter(at, 'must be a non-empty array')
        out[key] = value.map((item, index) => this.clause(item, `${at}[${index}]`, depth + 1))
        continue
      }
      const [head, ...rest] = key.split('.')
      const type = typeOf(this.fields, head)
      if (type === undefined) throw invalidFilter(at, `"${head}" is not a field of this collection`)
      if (rest.length > 0 && type !== 'json') throw invalidFilter(at, 'only json fields have sub-fields')
      const name = head === 'id' ? ['_id', ...rest].join('.') : key
      out[name] = this.condition(value, at, depth + 1, rest.length === 0 && type === 'date')
    }
    return out
  }

  private condition (value: unknown, path: string, depth: number, isDate: boolean): unknown {
    if (depth > QUERY_LIMITS.maxDepth) throw invalidFilter(path, `nested deeper than ${QUERY_LIMITS.maxDepth} levels`)
    if (!isPlain(value) || !Object.keys(value).some((key) => key.startsWith('$'))) return isDate ? dateValue(value, path) : value
    const out: Document = {}
    for (const [op, operand] of Object.entries(value)) {
      const at = `${path}.${op}`
      if (++this.clauses > QUERY_LIMITS.maxClauses) throw invalidFilter(at, `more than ${QUERY_LIMITS.maxClauses} clauses`)
      if (!FIELD_OPERATORS.has(op)) throw invalidFilter(at, `operator ${op} is not allowed`)
      if (LIST_OPERATORS.has(op)) {
        if (!Array.isArray(operand)) throw invalidFilter(at, 'must be an array')
        if (operand.length > QUERY_LIMITS.maxInValues) throw invalidFilter(at, `more than ${QUERY_LIMITS.maxInValues} values`)
        out[op] = isDate ? operand.map((item, index) => dateValue(item, `${at}[${index}]`)) : operand
      } else if (op === '$regex') {
        if (typeof operand !== 'string' || operand.length > QUERY_LIMITS.maxRegexLength) throw invalidFilter(at, `must be a string of at most ${QUERY_LIMITS.maxRegexLength} characters`)
        out[op] = operand
      } else if (op === '$not') {
        out[op] = this.condition(operand, at, depth + 1, isDate)
      } else if (op === '$elemMatch') {
        if (!isPlain(operand)) throw invalidFilter(at, 'must be an object')
        out[op] = Object.keys(operand).every((key) => key.startsWith('$')) ? this.condition(operand, at, depth + 1, false) : operand
      } else {
        out[op] = isDate && (op !== '$exists' && op !== '$size') ? dateValue(operand, at) : operand
      }
    }
    return out
  }
}

// Filters sent as query-string text, already checked, by collection shape: the same page is asked for again and again.
const parsedTexts = new WeakMap<FieldMap, Map<string, Filter>>()
const PARSED_TEXTS_PER_SHAPE = 256

/**
 * A client's filter, checked against the whitelist, the limits and the
 * collection's fields, in Store terms. Text filters are remembered per
 * collection shape; what comes back is frozen and shared.
 */
export function parseFilter (raw: unknown, fields: FieldMap): Filter {
  if (typeof raw !== 'string') return checkFilter(raw, fields)
  let texts = parsedTexts.get(fields)
  if (texts === undefined) parsedTexts.set(fields, texts = new Map())
  let filter = texts.get(raw)
  if (filter === undefined) {
    filter = deepFreeze(checkFilter(raw, fields))
    if (texts.size >= PARSED_TEXTS_PER_SHAPE) texts.delete(texts.keys().next().value as string)
    texts.set(raw, filter)
  }
  return filter
}

function checkFilter (raw: unknown, fields: FieldMap): Filter {
  let value = raw
  if (typeof raw === 'string') {
    if (Buffer.byteLength(raw, 'utf8') > QUERY_LIMITS.maxFilterBytes) throw invalidFilter('filter', `larger than ${QUERY_LIMITS.maxFilterBytes} bytes`)
    try { value = JSON.parse(raw) } catch { throw invalidFilter('filter', 'is not valid JSON') }
  } else if (nestedDeeperThan(raw, QUERY_LIMITS.maxDepth * 2 + 2) || Buffer.byteLength(JSON.stringify(raw) ?? '', 'utf8') > QUERY_LIMITS.maxFilterBytes) {
    throw invalidFilter('filter', `larger than ${QUERY_LIMITS.maxFilterBytes} bytes`)
  }
  const filter = new FilterWalker(fields).clause(value, 'filter', 0)
  try {
    validateFilter(filter, 'filter')
  } catch (error) {
    if (error instanceof QueryError) throw invalidFilter(error.path.replace(/\._id\b/, '.id'), error.message)
    throw error
  }
  return filter
}

export type SortKey = [string, 1 | -1]

/** A list's order: its keys (the id last), the Store's sort, and the text cursors carry to tie them to it. */
export interface SortPlan { keys: readonly SortKey[], sort: Sort, spec: string }

// Sorts as sent, by collection shape, like filter texts: the same order is asked for again and again.
const parsedSorts = new WeakMap<FieldMap, Map<string, SortPlan>>()
const PARSED_SORTS_PER_SHAPE = 64

/** `-createdAt,title` → the plan; the id is always the last key so the order is total. Shared and frozen. */
export function parseSort (raw: string | undefined, fields: FieldMap): SortPlan {
  const text = raw ?? ''
  let sorts = parsedSorts.get(fields)
  if (sorts === undefined) parsedSorts.set(fields, sorts = new Map())
  let plan = sorts.get(text)
  if (plan === undefined) {
    const keys = sortKeys(text, fields)
    plan = deepFreeze({ keys, sort: Object.fromEntries(keys), spec: keys.map(([key, dir]) => `${dir < 0 ? '-' : ''}${key}`).join(',') })
    if (sorts.size >= PARSED_SORTS_PER_SHAPE) sorts.delete(sorts.keys().next().value as string)
    sorts.set(text, plan)
  }
  return plan
}

function sortKeys (raw: string, fields: FieldMap): SortKey[] {
  const keys: SortKey[] = []
  for (const part of raw.split(',').map((item) => item.trim()).filter((item) => item !== '')) {
    const descending = part.startsWith('-')
    const name = descending ? part.slice(1) : part
    const field = fields.get(name)
    const type = typeOf(fields, name)
    if (type === undefined) throw badRequest('APP_INVALID_SORT', `sort: "${name}" is not a field of this collection`, { field: name })
    if (UNSORTABLE.has(type) || field?.multiple === true) throw badRequest('APP_INVALID_SORT', `sort: "${name}" cannot be sorted on`, { field: name })
    const key = name === 'id' ? '_id' : name
    if (keys.some(([existing]) => existing === key)) throw badRequest('APP_INVALID_SORT', `sort: "${name}" is given twice`, { field: name })
    keys.push([key, descending ? -1 : 1])
  }
  if (keys.length > QUERY_LIMITS.maxSortKeys) throw badRequest('APP_INVALID_SORT', `sort: at most ${QUERY_LIMITS.maxSortKeys} keys`)
  if (!keys.some(([key]) => key === '_id')) keys.push(['_id', 1])
  return keys
}

interface CursorBody { s: string, v: unknown[] }

function encodeValue (value: unknown): unknown {
  return value instanceof Date ? { $date: value.getTime() } : value
}
function decodeValue (value: unknown): unknown {
  return isPlain(value) && typeof value.$date === 'number' ? new Date(value.$date) : value
}

// Signatures are a pure function of the text; recent ones are kept because clients page through the same cursors.
const REMEMBERED_SIGNATURES = 1024

/** Opaque, signed keyset cursors: the position after a record, valid only for the same sort. */
export class Cursors {
  private readonly signatures = new Map<string, string>()
  // Per shared (frozen, unchanging) record, the cursor after it under each sort: the same page is asked for again and again.
  private readonly afterShared = new WeakMap<Document, Map<string, string>>()

  constructor (private readonly key: Buffer) {}

  encode (plan: SortPlan, record: Document): string {
    if (!Object.isFrozen(record)) return this.write(plan, record)
    let bySpec = this.afterShared.get(record)
    if (bySpec === undefined) this.afterShared.set(record, bySpec = new Map())
    let cursor = bySpec.get(plan.spec)
    if (cursor === undefined) {
      cursor = this.write(plan, record)
      bySpec.set(plan.spec, cursor)
    }
    return cursor
  }

  decode (cursor: string, plan: SortPlan): unknown[] {
    const [text, signature] = cursor.split('.')
    if (text === undefined || signature === undefined || !constantTimeEqual(signature, this.sign(text))) throw badRequest('APP_INVALID_CURSOR', 'cursor is not one this server issued')
    const body = JSON.parse(Buffer.from(text, 'base64url').toString()) as CursorBody
    if (body.s !== plan.spec) throw badRequest('APP_INVALID_CURSOR', 'cursor was issued for another sort order')
    return body.v.map(decodeValue)
  }

  private write (plan: SortPlan, record: Document): string {
    const body: CursorBody = { s: plan.spec, v: plan.keys.map(([key]) => encodeValue(record[key] ?? null)) }
    const text = Buffer.from(JSON.stringify(body)).toString('base64url')
    return `${text}.${this.sign(text)}`
  }

  private sign (text: string): string {
    let signature = this.signatures.get(text)
    if (signature === undefined) {
      signature = createHmac('sha256', this.key).update(text).digest('base64url').slice(0, 32)
      if (this.signatures.size >= REMEMBERED_SIGNATURES) this.signatures.delete(this.signatures.keys().next().value as string)
      this.signatures.set(text, signature)
    }
    return signature
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
