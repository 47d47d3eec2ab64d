import { InvalidDocumentError } from '../errors.js'
import { checkFieldName } from '../semantics/documents.js'
import type { Document } from '../types.js'
import { isPlainObject } from '../semantics/values.js'

/**
 * Documents are stored as JSON text. Dates become `{"$date": <ms>}`: user
 * field names may not start with `$`, so the marker cannot collide with data,
 * and SQL can reach the milliseconds at `$.field."$date"`. Documents were
 * checked by semantics/documents.ts before they get here; the checks below
 * hold the same rules for values that reach the codec by other ways (an
 * update's result, a filter's literal).
 */
export const DATE_KEY = '$date'
const DATE_MARKER = '{"$date":'

/** `out[key] = value`, except that a field named "__proto__" stays a field instead of setting the prototype. */
function setField (out: Document, key: string, value: unknown): void {
  if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true })
  else out[key] = value
}

function toStored (value: unknown, path: string): unknown {
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return value
    case 'number':
      if (!Number.isFinite(value)) throw new InvalidDocumentError(path, 'Numbers must be finite (NaN and Infinity cannot be stored)')
      return value
    case 'undefined':
      // Reached only for array elements; object fields holding undefined are dropped, as with the driver's ignoreUndefined.
      return null
    case 'object': {
      if (value === null) return null
      if (Array.isArray(value)) {
        const out = new Array<unknown>(value.length)
        for (let i = 0; i < value.length; i++) out[i] = toStored(value[i], `${path}[${i}]`)
        return out
      }
      if (value instanceof Date) {
        const ms = value.getTime()
        if (Number.isNaN(ms)) throw new InvalidDocumentError(path, 'Invalid Date')
        return { [DATE_KEY]: ms }
      }
      if (!isPlainObject(value)) throw new InvalidDocumentError(path, `Unsupported value type ${value.constructor?.name ?? 'object'}`)
      const source = value as Document
      const out: Document = {}
      for (const key of Object.keys(source)) {
        const field = source[key]
        if (field === undefined) continue
        checkFieldName(key, path)
        setField(out, key, toStored(field, `${path}.${key}`))
      }
      return out
    }
    default:
      throw new InvalidDocumentError(path, `Unsupported value type ${typeof value}`)
  }
}

/** The JSON text of a document, `_id` first as MongoDB stores it. */
export function encodeDocument (doc: Document, id: string, path = 'document'): string {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc) || !isPlainObject(doc)) {
    throw new InvalidDocumentError(path, 'A document must be a plain object')
  }
  const out: Document = { _id: id }
  for (const key of Object.keys(doc)) {
    if (key === '_id') continue
    const field = doc[key]
    if (field === undefined) continue
    checkFieldName(key, path)
    setField(out, key, toStored(field, `${path}.${key}`))
  }
  return JSON.stringify(out)
}

/** A value as it appears inside stored JSON (dates as markers), for comparisons against stored text. */
export function storedValue (value: unknown, path: string): unknown {
  return toStored(value, path)
}

function revive (value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) value[i] = revive(value[i])
    return value
  }
  const object = value as Document
  const ms = object[DATE_KEY]
  if (typeof ms === 'number') return new Date(ms)
  for (const key of Object.keys(object)) object[key] = revive(object[key])
  return object
}

/** Parses stored JSON text (a document or one field of it) back into values, dates included. */
export function decodeValue (json: string): unknown {
  const value = JSON.parse(json) as unknown
  // Escaped quotes inside strings never look like the marker, so a plain search is safe.
  return json.includes(DATE_MARKER) ? revive(value) : value
}

export function decodeDocument (json: string): Document {
  return decodeValue(json) as Document
}

/**
 * A deep copy of a decoded value (plain objects, arrays, dates, scalars):
 * several times cheaper than parsing the JSON again, so cached documents are
 * handed out as copies.
 */
export function cloneDecoded<V> (value: V): V {
  if (typeof value !== 'object' || value === null) return value
  if (value instanceof Date) return new Date(value.getTime()) as V
  if (Array.isArray(value)) {
    const out = new Array<unknown>(value.length)
    for (let i = 0; i < value.length; i++) out[i] = cloneDecoded(value[i])
    return out as V
  }
  const source = value as Document
  const out: Document = {}
  for (const key in source) setField(out, key, cloneDecoded(source[key]))
  return out as V
}
