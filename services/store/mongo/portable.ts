import { BSONRegExp } from 'mongodb'
import { isPlainObject } from '../semantics/values.js'
import { portablePattern } from '../semantics/regex.js'

/**
 * A validated filter or update with every pattern in the form the embedded
 * engine ran (semantics/regex.ts: `$` as end of text, `x` applied, `\s`
 * spelled out), as BSON regular expressions, so PCRE on the server answers
 * exactly what RE2 answered here, and every -0 as 0 (the embedded engine
 * stores JSON, which has no -0). Anything else is returned as it came; only
 * the branches holding a change are copied.
 */
export function portableQuery<T> (value: T, path = 'filter'): T {
  return rewrite(value, path) as T
}

function bsonPattern (pattern: string | RegExp, options: string | undefined, path: string): BSONRegExp {
  const portable = portablePattern(pattern, options, path)
  return new BSONRegExp(portable.serverSource, portable.flags)
}

function rewrite (value: unknown, path: string): unknown {
  if (typeof value === 'number') return value === 0 ? 0 : value
  if (value instanceof RegExp) return bsonPattern(value, undefined, path)
  if (Array.isArray(value)) {
    let copy: unknown[] | null = null
    for (let i = 0; i < value.length; i++) {
      const next = rewrite(value[i], `${path}[${i}]`)
      if (!Object.is(next, value[i])) (copy ??= [...value])[i] = next
    }
    return copy ?? value
  }
  if (!isPlainObject(value)) return value
  let copy: Record<string, unknown> | null = null
  if (Object.hasOwn(value, '$regex')) {
    const { $regex: pattern, $options: options, ...rest } = value
    copy = { ...rest, $regex: bsonPattern(pattern as string | RegExp, options as string | undefined, `${path}.$regex`) }
  }
  for (const key of Object.keys(value)) {
    if (key === '$regex' || key === '$options') continue
    const next = rewrite(value[key], `${path}.${key}`)
    if (!Object.is(next, value[key])) (copy ??= { ...value })[key] = next
  }
  return copy ?? value
}
