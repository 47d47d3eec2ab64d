import { quoteLiteral } from './names.js'
import { DATE_KEY } from './codec.js'
import { UNADDRESSABLE_SEGMENT } from '../semantics/indexes.js'

/**
 * SQL views of a document field. A path is "addressable" when SQLite's JSON
 * path syntax can name it: numeric segments are excluded because MongoDB
 * reads `a.0` as either an array position or a field named "0".
 */
export function addressableSegments (path: string): string[] | null {
  const segments = path.split('.')
  for (const segment of segments) {
    if (segment.length === 0 || segment.startsWith('$') || UNADDRESSABLE_SEGMENT.test(segment)) return null
  }
  return segments
}

/** The inlined JSON path literal, e.g. `'$."a"."b"'`; inlined so expression indexes can match it. */
export function jsonPath (segments: string[]): string {
  return quoteLiteral('$' + segments.map((segment) => '."' + segment + '"').join(''))
}

export function jsonType (segments: string[]): string {
  return `json_type(doc, ${jsonPath(segments)})`
}

export function jsonValue (segments: string[]): string {
  return `json_extract(doc, ${jsonPath(segments)})`
}

export function dateMillis (segments: string[]): string {
  return jsonValue([...segments, DATE_KEY])
}

/** True when some proper prefix of the path holds an array (MongoDB then fans the path out over its elements). */
function prefixArrayCondition (segments: string[]): string | null {
  if (segments.length < 2) return null
  const terms: string[] = []
  for (let i = 1; i < segments.length; i++) terms.push(`${jsonType(segments.slice(0, i))} = 'array'`)
  return terms.join(' OR ')
}

/** Any array along the path, its end included. */
export function anyArrayCondition (segments: string[]): string {
  const prefix = prefixArrayCondition(segments)
  const leaf = `${jsonType(segments)} = 'array'`
  return prefix === null ? leaf : `${prefix} OR ${leaf}`
}

/** Type ranks of the key expressions, in BSON order. */
export const KeyRank = {
  Null: 1,
  Number: 2,
  String: 3,
  Object: 4,
  Array: 5,
  Boolean: 8,
  Date: 9
} as const

/**
 * The two expressions an index stores per field: a BSON type rank and a value
 * that orders correctly within that rank. Null and missing share (1, 0), so a
 * unique index treats them as one value, like MongoDB. A document with an
 * array anywhere along the path gets rank Array and its own `id` as value: the
 * SQL index then never reports a false conflict for it, and the engine checks
 * such documents element by element itself.
 */
export function keyRankExpression (segments: string[]): string {
  const type = jsonType(segments)
  const byType = `CASE ${type} WHEN 'integer' THEN ${KeyRank.Number} WHEN 'real' THEN ${KeyRank.Number} WHEN 'text' THEN ${KeyRank.String}` +
    ` WHEN 'object' THEN iif(${jsonType([...segments, DATE_KEY])} IS NULL, ${KeyRank.Object}, ${KeyRank.Date})` +
    ` WHEN 'array' THEN ${KeyRank.Array} WHEN 'true' THEN ${KeyRank.Boolean} WHEN 'false' THEN ${KeyRank.Boolean} ELSE ${KeyRank.Null} END`
  const prefix = prefixArrayCondition(segments)
  return prefix === null ? `(${byType})` : `(CASE WHEN ${prefix} THEN ${KeyRank.Array} ELSE ${byType} END)`
}

export function keyValueExpression (segments: string[]): string {
  const type = jsonType(segments)
  const value = jsonValue(segments)
  const byType = `CASE ${type} WHEN 'integer' THEN ${value} WHEN 'real' THEN ${value} WHEN 'text' THEN ${value}` +
    ` WHEN 'object' THEN coalesce(${dateMillis(segments)}, ${value}) WHEN 'array' THEN id` +
    " WHEN 'true' THEN 1 WHEN 'false' THEN 0 ELSE 0 END"
  const prefix = prefixArrayCondition(segments)
  return prefix === null ? `(${byType})` : `(CASE WHEN ${prefix} THEN id ELSE ${byType} END)`
}
