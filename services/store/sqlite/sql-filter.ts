import type { Filter } from '../types.js'
import { DATE_KEY } from './codec.js'
import { quoteLiteral } from './names.js'
import { isOperatorObject } from '../semantics/match.js'
import { isPlainObject } from '../semantics/values.js'
import {
  KeyRank, addressableSegments, anyArrayCondition, dateMillis, jsonPath, jsonType, jsonValue, keyRankExpression, keyValueExpression
} from './paths.js'

/**
 * Translates a (validated) MongoDB filter into a SQL condition that every
 * matching document satisfies. `exact` says the condition is also sufficient,
 * so rows need no second check by the semantics matcher. Every translation
 * below either mirrors MongoDB's rules precisely (arrays included) or is
 * marked loose; negations are only translated when their operand is exact.
 */
export interface SqlCondition { sql: string, params: unknown[], exact: boolean }

/** What the engine knows about a collection's paths. */
export interface FilterContext {
  /** Paths some index stores as (rank, value) expressions. */
  keyed: (path: string) => boolean
  /** Paths known to hold no array anywhere along them in any document. */
  arrayFree: (path: string) => boolean
  /**
   * Rows are read one by one by their number (a text search's matches), so
   * nothing is gained from an index's expressions or from a substring test
   * before the JSON is parsed: each field is then read with as few JSON
   * calls as its exact translation needs.
   */
  perRow?: boolean
}

const LOOSE: SqlCondition = { sql: '1', params: [], exact: false }
const ALWAYS: SqlCondition = { sql: '1', params: [], exact: true }
const NEVER: SqlCondition = { sql: '0', params: [], exact: true }

function cond (sql: string, params: unknown[] = [], exact = true): SqlCondition {
  return { sql, params, exact }
}

export function and (parts: SqlCondition[]): SqlCondition {
  const kept = parts.filter((part) => part.sql !== '1')
  const exact = parts.every((part) => part.exact)
  if (kept.some((part) => part.sql === '0')) return NEVER
  if (kept.length === 0) return exact ? ALWAYS : LOOSE
  if (kept.length === 1) return { ...kept[0], exact }
  return cond(kept.map((part) => `(${part.sql})`).join(' AND '), kept.flatMap((part) => part.params), exact)
}

export function or (parts: SqlCondition[]): SqlCondition {
  const kept = parts.filter((part) => part.sql !== '0')
  const exact = parts.every((part) => part.exact)
  if (kept.length === 0) return NEVER
  if (kept.some((part) => part.sql === '1')) return exact ? ALWAYS : LOOSE
  if (kept.length === 1) return { ...kept[0], exact }
  return cond(kept.map((part) => `(${part.sql})`).join(' OR '), kept.flatMap((part) => part.params), exact)
}

function not (part: SqlCondition): SqlCondition {
  if (!part.exact) return LOOSE
  if (part.sql === '1') return NEVER
  if (part.sql === '0') return ALWAYS
  // coalesce: a NULL from a missing field must read as false before it is negated.
  return cond(`NOT coalesce((${part.sql}), 0)`, part.params)
}

export function compileSqlFilter (filter: Filter, context: FilterContext): SqlCondition {
  const parts: SqlCondition[] = []
  for (const key of Object.keys(filter)) {
    const value = filter[key]
    if (key === '$and' || key === '$or' || key === '$nor') {
      const branches = (value as Filter[]).map((branch) => compileSqlFilter(branch, context))
      parts.push(key === '$and' ? and(branches) : key === '$or' ? or(branches) : not(or(branches)))
    } else if (key === '_id') {
      parts.push(idField(value))
    } else {
      const segments = addressableSegments(key)
      parts.push(segments === null ? LOOSE : fieldValue(new FieldView(key, segments, context), value))
    }
  }
  return and(parts)
}

type Comparison = '=' | '>' | '>=' | '<' | '<='
const COMPARISONS: Record<string, Comparison> = { $eq: '=', $gt: '>', $gte: '>=', $lt: '<', $lte: '<=' }

/** A scalar as SQL sees it: its key rank, the bound value, and the json_type names it may appear under. */
interface SqlScalar { rank: number, param: unknown, types: string[] }

function sqlScalar (value: unknown): SqlScalar | null {
  switch (typeof value) {
    case 'string': return { rank: KeyRank.String, param: value, types: ['text'] }
    case 'number': return Number.isNaN(value) ? null : { rank: KeyRank.Number, param: value, types: ['integer', 'real'] }
    case 'boolean': return { rank: KeyRank.Boolean, param: value ? 1 : 0, types: ['true', 'false'] }
    default:
      if (value instanceof Date && !Number.isNaN(value.getTime())) return { rank: KeyRank.Date, param: value.getTime(), types: ['object'] }
      return null
  }
}

function typeList (types: string[]): string {
  return types.map((type) => `'${type}'`).join(', ')
}

class FieldView {
  readonly keyed: boolean
  readonly arrayFree: boolean
  readonly single: boolean
  readonly path: string
  readonly perRow: boolean

  constructor (path: string, readonly segments: string[], context: FilterContext) {
    this.perRow = context.perRow === true
    this.keyed = !this.perRow && context.keyed(path)
    this.arrayFree = context.arrayFree(path)
    this.single = segments.length === 1
    this.path = jsonPath(segments)
  }

  /** The field compared directly, arrays aside. */
  direct (op: Comparison, scalar: SqlScalar): SqlCondition {
    if (this.keyed) return cond(`${keyRankExpression(this.segments)} = ${scalar.rank} AND ${keyValueExpression(this.segments)} ${op} ?`, [scalar.param])
    if (scalar.rank === KeyRank.Date) return cond(`${dateMillis(this.segments)} ${op} ?`, [scalar.param])
    if (scalar.rank === KeyRank.Boolean && op === '=') return cond(`${jsonType(this.segments)} = '${scalar.param === 1 ? 'true' : 'false'}'`)
    return cond(`${jsonType(this.segments)} IN (${typeList(scalar.types)}) AND ${jsonValue(this.segments)} ${op} ?`, [scalar.param])
  }

  directIn (scalars: SqlScalar[]): SqlCondition {
    const marks = scalars.map(() => '?').join(', ')
    const params = scalars.map((scalar) => scalar.param)
    if (this.keyed) return cond(`${keyRankExpression(this.segments)} = ${scalars[0].rank} AND ${keyValueExpression(this.segments)} IN (${marks})`, params)
    return cond(`${jsonType(this.segments)} IN (${typeList(scalars[0].types)}) AND ${jsonValue(this.segments)} IN (${marks})`, params)
  }

  directNull (): SqlCondition {
    if (this.keyed) return cond(`${keyRankExpression(this.segments)} = ${KeyRank.Null}`)
    return cond(`coalesce(${jsonType(this.segments)}, 'null') = 'null'`)
  }

  /** A condition on the direct value that cannot be exact (objects, arrays, regexes). */
  directLoose (sql: string): SqlCondition {
    return cond(sql, [], false)
  }

  /**
   * Documents where an array lies along the path, narrowed by a condition on
   * the elements of an array at its end (json_each columns `type`, `value`).
   */
  arrays (element: SqlCondition | null): SqlCondition {
    if (this.arrayFree) return NEVER
    if (!this.single) return cond(this.keyed ? `${keyRankExpression(this.segments)} = ${KeyRank.Array}` : anyArrayCondition(this.segments), [], false)
    const isArray = this.keyed ? `${keyRankExpression(this.segments)} = ${KeyRank.Array}` : `${jsonType(this.segments)} = 'array'`
    if (element === null) return cond(isArray, [], false)
    if (element.sql === '0') return NEVER
    return cond(`${isArray} AND EXISTS (SELECT 1 FROM json_each(doc, ${this.path}) WHERE ${element.sql})`, element.params, element.exact)
  }

  /** Exact only when arrays cannot fan the path out in ways the SQL does not follow. */
  settle (part: SqlCondition): SqlCondition {
    return this.arrayFree || this.single ? part : { ...part, exact: false }
  }
}

function elementCondition (op: Comparison, scalar: SqlScalar): SqlCondition {
  if (scalar.rank === KeyRank.Date) return cond(`type = 'object' AND json_extract(value, ${quoteLiteral(`$."${DATE_KEY}"`)}) ${op} ?`, [scalar.param])
  if (scalar.rank === KeyRank.Boolean && op === '=') return cond(`type = '${scalar.param === 1 ? 'true' : 'false'}'`)
  return cond(`type IN (${typeList(scalar.types)}) AND value ${op} ?`, [scalar.param])
}

function fieldValue (view: FieldView, value: unknown): SqlCondition {
  if (value instanceof RegExp) return regex(view, value.source, value.flags)
  if (!isOperatorObject(value)) return equal(view, value)
  const parts: SqlCondition[] = []
  for (const operator of Object.keys(value)) {
    const operand = value[operator]
    switch (operator) {
      case '$eq': parts.push(equal(view, operand)); break
      case '$ne': parts.push(not(equal(view, operand))); break
      case '$gt': case '$gte': case '$lt': case '$lte':
        parts.push(compare(view, COMPARISONS[operator], operand)); break
      case '$in': parts.push(memberOf(view, operand as unknown[])); break
      case '$nin': parts.push(not(memberOf(view, operand as unknown[]))); break
      case '$exists': parts.push(operand === true || (typeof operand === 'number' && operand !== 0) ? exists(view) : not(exists(view))); break
      case '$regex': parts.push(regexOperand(view, operand, value.$options)); break
      case '$options': break
      case '$not': parts.push(not(operand instanceof RegExp ? LOOSE : fieldValue(view, operand))); break
      case '$size': parts.push(size(view, operand as number)); break
      case '$all': parts.push(all(view, operand as unknown[])); break
      case '$elemMatch': parts.push(elemMatch(view)); break
      default: parts.push(LOOSE)
    }
  }
  return and(parts)
}

/**
 * A necessary condition for a string to be stored anywhere in the document:
 * every document is JSON.stringify's text (codec.encodeDocument), which writes
 * a given string as the same token wherever it appears, so a substring search
 * for that token rules out most rows before SQLite parses their JSON. Only
 * for paths no index keys, where the row is being read anyway, and not where
 * each row is parsed anyway (`perRow`): scanning a kilobyte for an absent
 * token costs more than the JSON call it would save.
 */
function storedText (view: FieldView, strings: string[]): SqlCondition {
  if (view.keyed || view.perRow) return ALWAYS
  return or(strings.map((value) => cond('instr(doc, ?) > 0', [JSON.stringify(value)])))
}

function equal (view: FieldView, value: unknown): SqlCondition {
  if (value === null) return view.settle(or([view.directNull(), view.arrays(cond("type = 'null'"))]))
  if (typeof value === 'number' && Number.isNaN(value)) return NEVER // NaN is never stored
  const scalar = sqlScalar(value)
  if (typeof value === 'string') return and([storedText(view, [value]), view.settle(or([view.direct('=', scalar as SqlScalar), view.arrays(elementCondition('=', scalar as SqlScalar))]))])
  if (scalar !== null) return view.settle(or([view.direct('=', scalar), view.arrays(elementCondition('=', scalar))]))
  if (Array.isArray(value)) {
    const direct = view.keyed ? `${keyRankExpression(view.segments)} = ${KeyRank.Array}` : `${jsonType(view.segments)} = 'array'`
    return or([view.directLoose(direct), view.arrays(cond("type = 'array'", [], false))])
  }
  if (isPlainObject(value)) {
    const direct = view.keyed ? `${keyRankExpression(view.segments)} = ${KeyRank.Object}` : `${jsonType(view.segments)} = 'object'`
    return or([view.directLoose(direct), view.arrays(cond("type = 'object'", [], false))])
  }
  return LOOSE
}

function compare (view: FieldView, op: Comparison, value: unknown): SqlCondition {
  if (op === '=') return equal(view, value)
  if (value === null) return op === '>=' || op === '<=' ? equal(view, null) : NEVER
  if (typeof value === 'number' && Number.isNaN(value)) return NEVER
  const scalar = sqlScalar(value)
  if (scalar === null) return LOOSE
  return view.settle(or([view.direct(op, scalar), view.arrays(elementCondition(op, scalar))]))
}

function memberOf (view: FieldView, members: unknown[]): SqlCondition {
  const byRank = new Map<number, SqlScalar[]>()
  const parts: SqlCondition[] = []
  for (const member of members) {
    const scalar = member instanceof RegExp ? null : sqlScalar(member)
    if (scalar !== null && (scalar.rank === KeyRank.String || scalar.rank === KeyRank.Number)) {
      byRank.set(scalar.rank, [...(byRank.get(scalar.rank) ?? []), scalar])
    } else {
      parts.push(member instanceof RegExp ? regex(view, member.source, member.flags) : equal(view, member))
    }
  }
  for (const scalars of byRank.values()) {
    const marks = scalars.map(() => '?').join(', ')
    const element = cond(`type IN (${typeList(scalars[0].types)}) AND value IN (${marks})`, scalars.map((scalar) => scalar.param))
    const matched = view.settle(or([view.directIn(scalars), view.arrays(element)]))
    parts.push(scalars[0].rank === KeyRank.String ? and([storedText(view, scalars.map((scalar) => scalar.param as string)), matched]) : matched)
  }
  return or(parts)
}

function exists (view: FieldView): SqlCondition {
  const present = cond(`${jsonType(view.segments)} IS NOT NULL`)
  if (view.single || view.arrayFree) return present
  return or([{ ...present, exact: false }, view.arrays(null)])
}

function size (view: FieldView, length: number): SqlCondition {
  const direct = cond(`${jsonType(view.segments)} = 'array' AND json_array_length(doc, ${view.path}) = ?`, [length])
  if (view.single) return direct
  if (view.arrayFree) return NEVER
  return or([{ ...direct, exact: false }, view.arrays(null)])
}

function all (view: FieldView, members: unknown[]): SqlCondition {
  if (members.length === 0) return NEVER
  return and(members.map((member) => {
    if (member instanceof RegExp) return regex(view, member.source, member.flags)
    if (isPlainObject(member) && Object.hasOwn(member, '$elemMatch')) return elemMatch(view)
    return equal(view, member)
  }))
}

function elemMatch (view: FieldView): SqlCondition {
  return view.arrays(null)
}

function regexOperand (view: FieldView, pattern: unknown, options: unknown): SqlCondition {
  const flags = typeof options === 'string' ? options : ''
  return pattern instanceof RegExp ? regex(view, pattern.source, pattern.flags + flags) : regex(view, String(pattern), flags)
}

function regex (view: FieldView, source: string, flags: string): SqlCondition {
  const prefix = literalPrefix(source, flags)
  let direct: SqlCondition
  if (prefix !== null) {
    const upper = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)
    direct = view.direct('>=', sqlScalar(prefix) as SqlScalar)
    direct = and([direct, view.direct('<', sqlScalar(upper) as SqlScalar)])
  } else {
    direct = cond(`${jsonType(view.segments)} = 'text'`)
  }
  return or([{ ...direct, exact: false }, view.arrays(cond("type = 'text'", [], false))])
}

/** The literal text an anchored, case-sensitive pattern requires at the start (`^abc` → `abc`), for an index range. */
function literalPrefix (source: string, flags: string): string | null {
  if (!source.startsWith('^') || source.includes('|') || /[imx]/.test(flags)) return null
  let prefix = ''
  for (let i = 1; i < source.length; i++) {
    const char = source[i]
    if (/[?*{]/.test(char)) { prefix = prefix.slice(0, -1); break }
    if (!/[A-Za-z0-9 _\-:/@#,;=<>!%&'"~`]/.test(char)) break
    prefix += char
  }
  return prefix.length > 0 ? prefix : null
}

function idField (value: unknown): SqlCondition {
  if (value instanceof RegExp) return idRegex(value.source, value.flags)
  if (!isOperatorObject(value)) return idEqual(value)
  const parts: SqlCondition[] = []
  for (const operator of Object.keys(value)) {
    const operand = value[operator]
    switch (operator) {
      case '$eq': parts.push(idEqual(operand)); break
      case '$ne': parts.push(not(idEqual(operand))); break
      case '$gt': case '$gte': case '$lt': case '$lte':
        parts.push(typeof operand === 'string' ? cond(`id ${COMPARISONS[operator]} ?`, [operand]) : NEVER); break
      case '$in': parts.push(idIn(operand as unknown[])); break
      case '$nin': parts.push(not(idIn(operand as unknown[]))); break
      case '$exists': parts.push(operand === true || (typeof operand === 'number' && operand !== 0) ? ALWAYS : NEVER); break
      case '$regex': parts.push(operand instanceof RegExp ? idRegex(operand.source, operand.flags) : idRegex(String(operand), String(value.$options ?? ''))); break
      case '$options': break
      case '$not': parts.push(not(operand instanceof RegExp ? LOOSE : idField(operand))); break
      case '$size': case '$elemMatch': parts.push(NEVER); break
      case '$all': parts.push((operand as unknown[]).length === 0 ? NEVER : and((operand as unknown[]).map((member) => member instanceof RegExp ? idRegex(member.source, member.flags) : idEqual(member)))); break
      default: parts.push(LOOSE)
    }
  }
  return and(parts)
}

/** `_id` is always a string, so only string comparisons can hold. */
function idEqual (value: unknown): SqlCondition {
  return typeof value === 'string' ? cond('id = ?', [value]) : NEVER
}

function idIn (members: unknown[]): SqlCondition {
  const strings = members.filter((member): member is string => typeof member === 'string')
  const regexes = members.filter((member): member is RegExp => member instanceof RegExp)
  const parts = regexes.map((member) => idRegex(member.source, member.flags))
  if (strings.length > 0) parts.push(cond(`id IN (${strings.map(() => '?').join(', ')})`, strings))
  return or(parts)
}

function idRegex (source: string, flags: string): SqlCondition {
  const prefix = literalPrefix(source, flags)
  if (prefix === null) return LOOSE
  const upper = prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1)
  return cond('id >= ? AND id < ?', [prefix, upper], false)
}
