import { QueryError } from '../errors.js'
import type { Document, Filter } from '../types.js'
import { LeafArrays, parsePath, someAtPath } from './paths.js'
import { buildRegExp } from './regex.js'
import { validateLiteral } from './literals.js'
import { MISSING, Rank, compareValues, deepEqual, isPlainObject, rankOf } from './values.js'

/** A compiled filter applied to a document (or, inside $elemMatch, to an array element). */
export type RootPredicate = (root: Container) => boolean
type Container = Document | unknown[]

/**
 * One operator clause. `single` is MongoDB's matchesSingleElement (used by
 * $elemMatch's value form); `atPath` walks a path with the array expansion
 * that operator calls for, negations included.
 */
interface OperatorNode {
  single: (value: unknown) => boolean
  atPath: (root: Container, segments: string[]) => boolean
}

const LOGICAL_OPERATORS = new Set(['$and', '$or', '$nor'])

/** Compiles (and validates) a filter once; the returned predicate is what hot paths should call. */
export function compileFilter (filter: unknown, path = 'filter'): (doc: Document) => boolean {
  return scalarEquality(filter) ?? compileQuery(filter, path)
}

const PLAIN_FIELD = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * `{ field: scalar, … }`, the shape rules and id lookups produce on every
 * request, without compiling the general matcher: equal, or an array field
 * holding it, as MongoDB's equality does. Null for anything else.
 */
function scalarEquality (filter: unknown): ((doc: Document) => boolean) | null {
  if (!isPlainObject(filter)) return null
  const keys = Object.keys(filter)
  if (keys.length === 0 || keys.length > 4) return null
  for (const key of keys) {
    const value = filter[key]
    if (key === '__proto__' || !PLAIN_FIELD.test(key)) return null
    if (typeof value !== 'string' && typeof value !== 'boolean' && !(typeof value === 'number' && !Number.isNaN(value))) return null
    if (typeof value === 'string' && !value.isWellFormed()) return null
  }
  const values = keys.map((key) => filter[key])
  return (doc) => {
    for (let i = 0; i < keys.length; i++) {
      const actual = doc[keys[i]]
      if (actual !== values[i] && !(Array.isArray(actual) && actual.includes(values[i]))) return false
    }
    return true
  }
}

export function validateFilter (filter: unknown, path = 'filter'): asserts filter is Filter {
  compileQuery(filter, path)
}

/** Convenience form of compileFilter for one document; prefer compiling once for many. */
export function matches (doc: Document, filter: Filter): boolean {
  return compileQuery(filter, 'filter')(doc)
}

/** True for `{$gt: 1}`-style values: MongoDB decides by the first key alone. */
export function isOperatorObject (value: unknown): value is Document {
  if (!isPlainObject(value)) return false
  const first = Object.keys(value)[0]
  return first !== undefined && first.startsWith('$')
}

export function compileQuery (query: unknown, path: string): RootPredicate {
  if (!isPlainObject(query)) throw new QueryError(path, 'A filter must be a plain object')
  const clauses: RootPredicate[] = []
  for (const key of Object.keys(query)) {
    const value = query[key]
    const keyPath = `${path}.${key}`
    if (key.startsWith('$')) {
      if (!LOGICAL_OPERATORS.has(key)) throw new QueryError(keyPath, `Unknown or unsupported top-level operator '${key}'`)
      clauses.push(compileLogical(key, value, keyPath))
    } else {
      const segments = parsePath(key, keyPath)
      const node = compileFieldValue(value, keyPath)
      clauses.push(root => node.atPath(root, segments))
    }
  }
  return allOf(clauses)
}

function compileLogical (operator: string, value: unknown, path: string): RootPredicate {
  if (!Array.isArray(value) || value.length === 0) throw new QueryError(path, `${operator} must be a non-empty array`)
  const branches = value.map((branch, i) => {
    if (!isPlainObject(branch)) throw new QueryError(`${path}[${i}]`, `Each ${operator} entry must be a plain object`)
    return compileQuery(branch, `${path}[${i}]`)
  })
  if (operator === '$and') return allOf(branches)
  const anyBranch: RootPredicate = root => {
    for (const branch of branches) if (branch(root)) return true
    return false
  }
  return operator === '$or' ? anyBranch : root => !anyBranch(root)
}

function allOf (predicates: RootPredicate[]): RootPredicate {
  if (predicates.length === 0) return () => true
  if (predicates.length === 1) return predicates[0]
  if (predicates.length === 2) {
    const [first, second] = predicates
    return root => first(root) && second(root)
  }
  return root => {
    for (const predicate of predicates) if (!predicate(root)) return false
    return true
  }
}

/** The value of a field in a filter: an operator object, a RegExp or a literal to equal. */
function compileFieldValue (value: unknown, path: string): OperatorNode {
  if (value instanceof RegExp) return regexNode(buildRegExp(value, undefined, path))
  if (isOperatorObject(value)) return compileOperators(value, path)
  validateLiteral(value, path)
  return leafNode(equalityTest(value))
}

function compileOperators (operators: Document, path: string): OperatorNode {
  const nodes: OperatorNode[] = []
  const options = operators.$options
  if (options !== undefined && !Object.hasOwn(operators, '$regex')) throw new QueryError(`${path}.$options`, '$options needs a $regex')
  if (options !== undefined && (typeof options !== 'string' || !/^[imsx]*$/.test(options))) {
    throw new QueryError(`${path}.$options`, '$options must be a string of the flags i, m, s and x')
  }
  for (const operator of Object.keys(operators)) {
    const operand = operators[operator]
    const operandPath = `${path}.${operator}`
    switch (operator) {
      case '$eq':
      case '$ne': {
        validateComparable(operand, operandPath)
        const equal = leafNode(equalityTest(operand))
        nodes.push(operator === '$eq' ? equal : notNode(equal))
        break
      }
      case '$gt':
      case '$gte':
      case '$lt':
      case '$lte':
        validateComparable(operand, operandPath)
        nodes.push(leafNode(comparisonTest(operator, operand)))
        break
      case '$in':
      case '$nin': {
        const member = leafNode(membershipTest(operand, operandPath))
        nodes.push(operator === '$in' ? member : notNode(member))
        break
      }
      case '$exists': {
        if (typeof operand !== 'boolean' && typeof operand !== 'number') throw new QueryError(operandPath, '$exists takes a boolean')
        const exists = leafNode(value => value !== MISSING)
        nodes.push(operand === true || (typeof operand === 'number' && operand !== 0) ? exists : notNode(exists))
        break
      }
      case '$regex':
        if (typeof operand !== 'string' && !(operand instanceof RegExp)) throw new QueryError(operandPath, '$regex takes a string or a RegExp')
        nodes.push(regexNode(buildRegExp(operand, options as string | undefined, operandPath)))
        break
      case '$options':
        break
      case '$not':
        nodes.push(notNode(compileNot(operand, operandPath)))
        break
      case '$elemMatch':
        nodes.push(elemMatchNode(operand, operandPath))
        break
      case '$all':
        nodes.push(allNode(operand, operandPath))
        break
      case '$size': {
        if (typeof operand !== 'number' || !Number.isInteger(operand) || operand < 0) throw new QueryError(operandPath, '$size takes a non-negative integer')
        nodes.push(leafNode(value => Array.isArray(value) && value.length === operand, LeafArrays.NoTraversal))
        break
      }
      default:
        throw new QueryError(operandPath, operator.startsWith('$')
          ? `Unknown or unsupported operator '${operator}'`
          : `Unknown operator '${operator}': an operator object cannot also hold field names`)
    }
  }
  return nodes.length === 1 ? nodes[0] : andNode(nodes)
}

function compileNot (operand: unknown, path: string): OperatorNode {
  if (operand instanceof RegExp) return regexNode(buildRegExp(operand, undefined, path))
  if (!isPlainObject(operand)) throw new QueryError(path, '$not takes a RegExp or an object of operators')
  if (Object.keys(operand).length === 0) throw new QueryError(path, '$not cannot be empty')
  if (!isOperatorObject(operand)) throw new QueryError(path, '$not takes operators, not field names')
  return compileOperators(operand, path)
}

function elemMatchNode (operand: unknown, path: string): OperatorNode {
  if (!isPlainObject(operand)) throw new QueryError(path, '$elemMatch takes an object')
  const firstKey = Object.keys(operand)[0]
  let elementTest: (element: unknown) => boolean
  if (firstKey !== undefined && firstKey.startsWith('$') && !LOGICAL_OPERATORS.has(firstKey)) {
    const node = compileOperators(operand, path)
    elementTest = element => node.single(element)
  } else {
    // The query form treats a nested array like an object keyed "0", "1", … as BSON does.
    const query = compileQuery(operand, path)
    elementTest = element => (isPlainObject(element) || Array.isArray(element)) && query(element)
  }
  return leafNode(value => Array.isArray(value) && value.some(elementTest), LeafArrays.NoTraversal)
}

function allNode (operand: unknown, path: string): OperatorNode {
  if (!Array.isArray(operand)) throw new QueryError(path, '$all takes an array')
  if (operand.length === 0) return { single: () => false, atPath: () => false }
  const elemMatchForm = isPlainObject(operand[0]) && Object.keys(operand[0])[0] === '$elemMatch'
  const nodes = operand.map((member, i) => {
    const memberPath = `${path}[${i}]`
    if (elemMatchForm) {
      if (!isPlainObject(member) || Object.keys(member).length !== 1 || !Object.hasOwn(member, '$elemMatch')) {
        throw new QueryError(memberPath, '$all with $elemMatch takes only {$elemMatch: …} entries')
      }
      return elemMatchNode(member.$elemMatch, `${memberPath}.$elemMatch`)
    }
    if (member instanceof RegExp) return regexNode(buildRegExp(member, undefined, memberPath))
    if (isOperatorObject(member)) throw new QueryError(memberPath, '$all entries cannot be operator objects (other than $elemMatch)')
    validateLiteral(member, memberPath)
    return leafNode(equalityTest(member))
  })
  return nodes.length === 1 ? nodes[0] : andNode(nodes)
}

function validateComparable (operand: unknown, path: string): void {
  if (operand instanceof RegExp) throw new QueryError(path, 'A RegExp can only be used with $regex, $in, $nin, $all, $not or as a field value')
  validateLiteral(operand, path)
}

function leafNode (single: (value: unknown) => boolean, leaf: LeafArrays = LeafArrays.Traverse): OperatorNode {
  return { single, atPath: (root, segments) => someAtPath(root, segments, leaf, single) }
}

function notNode (inner: OperatorNode): OperatorNode {
  return {
    single: value => !inner.single(value),
    atPath: (root, segments) => !inner.atPath(root, segments)
  }
}

function andNode (nodes: OperatorNode[]): OperatorNode {
  return {
    single: value => nodes.every(node => node.single(value)),
    atPath: (root, segments) => nodes.every(node => node.atPath(root, segments))
  }
}

function regexNode (regex: RegExp): OperatorNode {
  return leafNode(value => typeof value === 'string' && regex.test(value))
}

/** Equality as MongoDB's $eq: null also matches a missing path; otherwise BSON equality. */
function equalityTest (expected: unknown): (value: unknown) => boolean {
  if (expected === null) return value => value === MISSING || value === null || value === undefined
  switch (typeof expected) {
    case 'string':
    case 'boolean':
      return value => value === expected
    case 'number':
      return Number.isNaN(expected)
        ? value => typeof value === 'number' && Number.isNaN(value)
        : value => value === expected
    default:
      return value => value !== MISSING && deepEqual(value, expected)
  }
}

/** Comparisons only hold between values of the same BSON type bracket; null compares with null/missing only. */
function comparisonTest (operator: '$gt' | '$gte' | '$lt' | '$lte', expected: unknown): (value: unknown) => boolean {
  const expectedRank = rankOf(expected)
  const inclusive = operator === '$gte' || operator === '$lte'
  const greater = operator === '$gt' || operator === '$gte'
  if (typeof expected === 'number') {
    const expectedNaN = Number.isNaN(expected)
    return value => {
      if (typeof value !== 'number') return false
      if (expectedNaN || Number.isNaN(value)) return inclusive && expectedNaN && Number.isNaN(value)
      if (value === expected) return inclusive
      return greater ? value > expected : value < expected
    }
  }
  return value => {
    if (value === MISSING) return expectedRank === Rank.Null && inclusive
    if (rankOf(value) !== expectedRank) return false
    const order = compareValues(value, expected)
    if (order === 0) return inclusive
    return greater ? order > 0 : order < 0
  }
}

function membershipTest (operand: unknown, path: string): (value: unknown) => boolean {
  if (!Array.isArray(operand)) throw new QueryError(path, '$in and $nin take an array')
  const primitives = new Set<unknown>()
  const structured: unknown[] = []
  const regexes: RegExp[] = []
  let hasNull = false
  operand.forEach((member, i) => {
    const memberPath = `${path}[${i}]`
    if (member instanceof RegExp) {
      regexes.push(buildRegExp(member, undefined, memberPath))
      return
    }
    if (isOperatorObject(member)) throw new QueryError(memberPath, 'Operators cannot be nested inside $in or $nin')
    validateLiteral(member, memberPath)
    if (member === null) hasNull = true
    else if (typeof member === 'object') structured.push(member)
    else primitives.add(member)
  })
  return value => {
    if (value === MISSING || value === null || value === undefined) return hasNull
    if (typeof value !== 'object') {
      if (primitives.has(value)) return true
      return typeof value === 'string' && regexes.some(regex => regex.test(value))
    }
    return structured.some(member => deepEqual(value, member))
  }
}

/** MongoDB's $pull condition: operators test each element (arrays expanded), a plain object queries object elements, anything else is equality. */
export function compilePullCondition (condition: unknown, path: string): (element: unknown) => boolean {
  const segments = ['']
  if (condition instanceof RegExp) {
    const node = regexNode(buildRegExp(condition, undefined, path))
    return element => node.atPath({ '': element }, segments)
  }
  if (isPlainObject(condition)) {
    const firstKey = Object.keys(condition)[0]
    if (firstKey !== undefined && firstKey.startsWith('$') && !LOGICAL_OPERATORS.has(firstKey)) {
      const node = compileOperators(condition, path)
      return element => node.atPath({ '': element }, segments)
    }
    const query = compileQuery(condition, path)
    return element => isPlainObject(element) && query(element)
  }
  validateLiteral(condition, path)
  return element => deepEqual(element, condition)
}
