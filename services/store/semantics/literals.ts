import { QueryError } from '../errors.js'
import { validateStoredValue } from './documents.js'
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
      // A lone surrogate reaches MongoDB as U+FFFD (BSON is UTF-8), so the two engines would compare different text.
      if (!value.isWellFormed()) throw new QueryError(path, 'Text cannot hold unpaired surrogates')
      return
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
          if (key.includes('\0')) throw new QueryError(`${path}.${key}`, 'Field names cannot contain a null byte')
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

/** A value an update writes into a document, held by a container at `containerDepth`: the same rules as an inserted document's fields. */
export function validateStorable (value: unknown, path: string, containerDepth = 1): void {
  validateStoredValue(value, path, containerDepth)
  // What only updates refuse: fields named __proto__ (a path to the prototype) and undefined in arrays.
  validateLiteral(value, path)
}
