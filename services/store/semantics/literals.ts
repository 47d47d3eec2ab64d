import { QueryError } from '../errors.js'
import { isPlainObject } from './values.js'

/**
 * A value a filter compares with or an update stores: null, boolean, number,
 * string, Date, arrays and plain objects whose field names do not start with
 * `$`. Anything else (undefined, RegExp in a stored or compared position,
 * class instances, bigint…) is refused rather than guessed at.
 */
export function validateLiteral (value: unknown, path: string): void {
  switch (typeof value) {
    case 'string':
    case 'number':
    case 'boolean':
      return
    case 'undefined':
      throw new QueryError(path, 'undefined is not a valid value (use null)')
    case 'object':
      if (value === null || value instanceof Date) return
      if (Array.isArray(value)) {
        value.forEach((element, i) => { validateLiteral(element, `${path}[${i}]`) })
        return
      }
      if (value instanceof RegExp) throw new QueryError(path, 'A RegExp is not valid here')
      if (isPlainObject(value)) {
        for (const key of Object.keys(value)) {
          if (key.startsWith('$')) throw new QueryError(`${path}.${key}`, `Field names cannot start with '$' ('${key}')`)
          if (key === '__proto__') throw new QueryError(`${path}.${key}`, "A field cannot be named '__proto__'")
          validateLiteral(value[key], `${path}.${key}`)
        }
        return
      }
      throw new QueryError(path, `Unsupported value type ${value.constructor?.name ?? 'object'}`)
    default:
      throw new QueryError(path, `Unsupported value type ${typeof value}`)
  }
}

/** A value an update writes into a document: a literal whose object keys also hold no dots. */
export function validateStorable (value: unknown, path: string): void {
  validateLiteral(value, path)
  checkFieldNames(value, path)
}

function checkFieldNames (value: unknown, path: string): void {
  if (Array.isArray(value)) {
    value.forEach((element, i) => { checkFieldNames(element, `${path}[${i}]`) })
  } else if (isPlainObject(value)) {
    for (const key of Object.keys(value)) {
      if (key.length === 0 || key.includes('.')) throw new QueryError(`${path}.${key}`, `Stored field names cannot be empty or contain '.' ('${key}')`)
      checkFieldNames(value[key], `${path}.${key}`)
    }
  }
}
