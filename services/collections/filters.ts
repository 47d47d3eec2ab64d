import { collectionErrors } from './errors.js'
import { nestedDeeperThan } from '../platform/nesting.js'
import { parseIsoDate } from '../platform/iso-dates.js'
import { validateFilter } from '../store/semantics/match.js'
import { QueryError } from '../store/errors.js'
import { isPlainObject } from '../store/semantics/values.js'
import type { Document, Filter } from '../store/types.js'
import type { FieldDefinitionT } from '../../schemas/collections.js'
import type { FieldMap } from './record-fields.js'
import { deepFreeze } from '../platform/deep-freeze.js'
import { BoundedMap } from '../cache/bounded-map.js'
import { QUERY_LIMITS, fieldType } from './query.js'
import { NO_FIELDS } from './access.js'

/**
 * A client's filter over a collection's records: checked against the
 * operator whitelist, the published limits, the collection's fields and
 * their types, and the fields the caller's rule hides, then put in Store terms.
 */

const LOGICAL = new Set(['$and', '$or', '$nor'])
const FIELD_OPERATORS = new Set(['$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$exists', '$regex', '$options', '$not', '$elemMatch', '$all', '$size'])
const RANGE_OPERATORS = new Set(['$gt', '$gte', '$lt', '$lte'])
const LIST_OPERATORS = new Set(['$in', '$nin', '$all'])
const STRING_TYPES = new Set(['text', 'email', 'url', 'select', 'relation'])
/** Present on every record the data API writes. */
const ALWAYS_PRESENT = new Set(['_id', 'createdAt', 'updatedAt'])

/** What the values at a filter path may be: a typed field's, or anything (json fields and their sub-paths). */
type Target = { field: string, type: FieldDefinitionT['type'], multiple: boolean } | { field: string, type: 'any', multiple: false }

function invalidFilter (path: string, message: string, field?: string): Error {
  return collectionErrors.invalidFilter({ path, why: message, field })
}

const TYPE_WORDS: Record<string, string> = { number: 'numbers', boolean: 'true or false', date: 'ISO 8601 dates (2024-02-29, 2024-02-29T10:00:00Z)', file: 'files' }

/** One value compared with a typed field: the field's own type, dates turned into Dates. */
function scalarOperand (target: Target, value: unknown, path: string): unknown {
  if (target.type === 'any') return value
  const ok = STRING_TYPES.has(target.type)
    ? typeof value === 'string'
    : target.type === 'number' ? typeof value === 'number' : target.type === 'boolean' ? typeof value === 'boolean' : target.type === 'date' ? parseIsoDate(value) !== null : false
  if (!ok) {
    const holds = STRING_TYPES.has(target.type) ? 'strings' : TYPE_WORDS[target.type]
    throw invalidFilter(path, `"${target.field}" holds ${holds}; ${target.type === 'file' ? 'test it with $exists or null' : `got ${JSON.stringify(value)?.slice(0, 40) ?? typeof value}`}`, target.field)
  }
  return target.type === 'date' ? parseIsoDate(value) : value
}

/** An equality operand: null (no value), one element of the field's type, or a whole array for a field with several values. */
function equalityOperand (target: Target, value: unknown, path: string): unknown {
  if (value === null || target.type === 'any') return value
  if (target.multiple && Array.isArray(value)) return value.map((item, i) => scalarOperand(target, item, `${path}[${i}]`))
  return scalarOperand(target, value, path)
}

class FilterWalker {
  private clauses = 0
  /** The top-level fields the filter names, so hidden ones can be refused on every use of a remembered parse. */
  readonly heads = new Set<string>()

  constructor (private readonly fields: FieldMap) {}

  clause (node: unknown, path: string, depth: number): Document {
    if (depth > QUERY_LIMITS.maxDepth) throw invalidFilter(path, `nested deeper than ${QUERY_LIMITS.maxDepth} levels`)
    if (!isPlainObject(node)) throw invalidFilter(path, 'must be an object')
    const out: Document = {}
    for (const key of Object.keys(node)) {
      const value = node[key]
      const at = `${path}.${key}`
      if (++this.clauses > QUERY_LIMITS.maxClauses) throw invalidFilter(at, `more than ${QUERY_LIMITS.maxClauses} clauses`)
      if (key.startsWith('$')) {
        if (!LOGICAL.has(key)) throw invalidFilter(at, `operator ${key} is not allowed here`)
        if (!Array.isArray(value) || value.length === 0) throw invalidFilter(at, 'must be a non-empty array')
        out[key] = value.map((item, index) => this.clause(item, `${at}[${index}]`, depth + 1))
        continue
      }
      const [head, ...rest] = key.split('.')
      const type = fieldType(this.fields, head)
      if (type === undefined) throw invalidFilter(at, `"${head}" is not a field of this collection`, head)
      if (rest.length > 0 && type !== 'json') throw invalidFilter(at, 'only json fields have sub-fields', head)
      this.heads.add(head)
      const name = head === 'id' ? ['_id', ...rest].join('.') : key
      const target: Target = type === 'json' ? { field: head, type: 'any', multiple: false } : { field: head, type, multiple: this.fields.get(head)?.multiple === true }
      out[name] = this.condition(value, at, depth + 1, target)
    }
    return out
  }

  private condition (value: unknown, path: string, depth: number, target: Target): unknown {
    if (depth > QUERY_LIMITS.maxDepth) throw invalidFilter(path, `nested deeper than ${QUERY_LIMITS.maxDepth} levels`)
    if (!isPlainObject(value) || !Object.keys(value).some((key) => key.startsWith('$'))) return equalityOperand(target, value, path)
    const out: Document = {}
    for (const op of Object.keys(value)) {
      const operand = value[op]
      const at = `${path}.${op}`
      if (++this.clauses > QUERY_LIMITS.maxClauses) throw invalidFilter(at, `more than ${QUERY_LIMITS.maxClauses} clauses`)
      if (!FIELD_OPERATORS.has(op)) throw invalidFilter(at, `operator ${op} is not allowed`)
      out[op] = this.operand(op, operand, at, depth, target)
    }
    return out
  }

  private operand (op: string, operand: unknown, at: string, depth: number, target: Target): unknown {
    const typed = target.type !== 'any'
    if (LIST_OPERATORS.has(op)) {
      if (!Array.isArray(operand)) throw invalidFilter(at, 'must be an array')
      if (operand.length > QUERY_LIMITS.maxInValues) throw invalidFilter(at, `more than ${QUERY_LIMITS.maxInValues} values`)
      return operand.map((item, index) => op === '$all' && item !== null ? scalarOperand(target, item, `${at}[${index}]`) : equalityOperand(target, item, `${at}[${index}]`))
    }
    if (op === '$eq' || op === '$ne') return equalityOperand(target, operand, at)
    if (RANGE_OPERATORS.has(op)) return scalarOperand(target, operand, at)
    if (op === '$regex') {
      if (typeof operand !== 'string' || operand.length > QUERY_LIMITS.maxRegexLength) throw invalidFilter(at, `must be a string of at most ${QUERY_LIMITS.maxRegexLength} characters`)
      if (typed && !STRING_TYPES.has(target.type)) throw invalidFilter(at, `"${target.field}" holds ${TYPE_WORDS[target.type]}, not text`, target.field)
      return operand
    }
    if (op === '$not') return this.condition(operand, at, depth + 1, target)
    if (op === '$size') {
      if (typed && !target.multiple) throw invalidFilter(at, `"${target.field}" holds one value, not a list`, target.field)
      return operand
    }
    if (op === '$elemMatch') {
      if (!isPlainObject(operand)) throw invalidFilter(at, 'must be an object')
      if (!typed) return Object.keys(operand).every((key) => key.startsWith('$')) ? this.condition(operand, at, depth + 1, target) : operand
      if (!target.multiple) throw invalidFilter(at, `"${target.field}" holds one value, not a list`, target.field)
      return this.condition(operand, at, depth + 1, { ...target, multiple: false })
    }
    return operand
  }
}

interface ParsedFilter { filter: Filter, heads: ReadonlySet<string> }

// Filters sent as query-string text, checked against one collection shape: the same page is asked for again and again.
const parsedTexts = new BoundedMap<string, { fields: FieldMap, parsed: ParsedFilter }>(1024)

/**
 * A client's filter in Store terms. Text filters are remembered per
 * collection shape; what comes back is frozen and shared. A field in
 * `hidden` (denied to the caller's rule) is refused wherever it appears:
 * a filter on it would tell its value one question at a time.
 */
export function parseFilter (raw: unknown, fields: FieldMap, hidden: ReadonlySet<string> = NO_FIELDS): Filter {
  let parsed: ParsedFilter
  if (typeof raw !== 'string') {
    parsed = checkFilter(raw, fields)
  } else {
    const known = parsedTexts.get(raw)
    if (known !== undefined && known.fields === fields) {
      parsed = known.parsed
    } else {
      parsed = checkFilter(raw, fields)
      deepFreeze(parsed.filter)
      parsedTexts.set(raw, { fields, parsed })
    }
  }
  if (hidden.size > 0) {
    for (const head of parsed.heads) {
      if (hidden.has(head)) throw invalidFilter(`filter.${head}`, `"${head}" is hidden from this method's callers and cannot be filtered on`, head)
    }
  }
  return parsed.filter
}

/** The same limits whether the filter came as query-string text or as a JSON body. */
function checkFilter (raw: unknown, fields: FieldMap): ParsedFilter {
  let value = raw
  if (typeof raw === 'string') {
    if (Buffer.byteLength(raw, 'utf8') > QUERY_LIMITS.maxFilterBytes) throw invalidFilter('filter', `larger than ${QUERY_LIMITS.maxFilterBytes} bytes`)
    try { value = JSON.parse(raw) } catch { throw invalidFilter('filter', 'is not valid JSON') }
  }
  // Measured without recursion before anything recurses over it (JSON.stringify below, the walker): operands such
  // as an $in list of lists are values the walker does not descend into, so depth is checked here, on either path.
  if (nestedDeeperThan(value, QUERY_LIMITS.maxDepth * 2 + 2)) throw invalidFilter('filter', `nested deeper than ${QUERY_LIMITS.maxDepth} levels`)
  if (typeof raw !== 'string' && Buffer.byteLength(JSON.stringify(raw) ?? '', 'utf8') > QUERY_LIMITS.maxFilterBytes) {
    throw invalidFilter('filter', `larger than ${QUERY_LIMITS.maxFilterBytes} bytes`)
  }
  const walker = new FilterWalker(fields)
  const filter = walker.clause(value, 'filter', 0)
  try {
    validateFilter(filter, 'filter')
  } catch (error) {
    if (error instanceof QueryError) throw invalidFilter(error.path.replace(/\._id\b/, '.id'), error.message)
    throw error
  }
  return { filter, heads: walker.heads }
}

/**
 * True for a filter that holds for every record by its form alone: `{}`,
 * `{$and: [{}]}`, an `$or` with such a branch, `$exists: true` on a field
 * every record has. Bulk writes need a filter that selects.
 */
export function matchesEverything (filter: Filter): boolean {
  for (const key of Object.keys(filter)) {
    const value = filter[key]
    if (key === '$and') {
      if (!(value as Filter[]).every(matchesEverything)) return false
    } else if (key === '$or') {
      if (!(value as Filter[]).some(matchesEverything)) return false
    } else if (!(ALWAYS_PRESENT.has(key) && isPlainObject(value) && Object.keys(value).length === 1 && value.$exists !== undefined && value.$exists !== false && value.$exists !== 0)) {
      return false
    }
  }
  return true
}
