import { InvalidDocumentError } from '../errors.js'
import type { Document } from '../types.js'
import { isPlainObject } from './values.js'

/** MongoDB's limit on nested objects and arrays; the embedded engine holds documents to it too. */
export const MAX_DOCUMENT_DEPTH = 100

/**
 * The one check of what a document may hold, run by both engines before a
 * write reaches them (inserts, upsert seeds, every value an update stores),
 * so a document one engine would store is never refused, or stored
 * differently, by the other: MongoDB ≥ 5 stores `$`-prefixed and dotted names
 * and then cannot `$set` them back, NUL in a name is a BSON error, NaN and
 * ±Infinity do not survive JSON, binary has no JSON form, and a lone
 * surrogate turns into U+FFFD in BSON's UTF-8 but not in SQLite's text.
 * Undefined fields are dropped and undefined array elements stored as null,
 * as the driver does with `ignoreUndefined`.
 */
export function validateDocument (doc: unknown, path = 'document'): asserts doc is Document {
  if (!isPlainObject(doc)) throw new InvalidDocumentError(path, 'A document must be a plain object')
  const id = doc._id
  if (id !== undefined && typeof id !== 'string') throw new InvalidDocumentError(`${path}._id`, '_id must be a string')
  checkObject(doc, path, 1)
}

/** A value an update writes at a path (`$set`, `$push`…): the same rules as a document's fields. */
export function validateStoredValue (value: unknown, path: string): void {
  if (value === undefined) throw new InvalidDocumentError(path, 'undefined is not a valid value (use null)')
  checkValue(value, path, 1)
}

/** A field name as both engines store it. */
export function checkFieldName (key: string, path: string): void {
  if (key.length === 0 || key.charCodeAt(0) === 36 || key.includes('.') || key.includes('\0') || !key.isWellFormed()) {
    throw new InvalidDocumentError(`${path}.${key}`, `Field names cannot be empty, start with '$', contain '.' or a null byte, or hold unpaired surrogates ('${key}')`)
  }
}

function checkObject (object: Document, path: string, depth: number): void {
  if (depth > MAX_DOCUMENT_DEPTH) throw new InvalidDocumentError(path, `Documents cannot be nested deeper than ${MAX_DOCUMENT_DEPTH} levels`)
  for (const key of Object.keys(object)) {
    checkFieldName(key, path)
    const value = object[key]
    if (value !== undefined) checkValue(value, `${path}.${key}`, depth)
  }
}

function checkValue (value: unknown, path: string, depth: number): void {
  switch (typeof value) {
    case 'boolean':
      return
    case 'string':
      if (!value.isWellFormed()) throw new InvalidDocumentError(path, 'Text cannot hold unpaired surrogates')
      return
    case 'number':
      if (!Number.isFinite(value)) throw new InvalidDocumentError(path, 'Numbers must be finite (NaN and Infinity cannot be stored)')
      return
    case 'undefined':
      return // only reached for array elements, stored as null
    case 'object':
      if (value === null) return
      if (Array.isArray(value)) {
        if (depth + 1 > MAX_DOCUMENT_DEPTH) throw new InvalidDocumentError(path, `Documents cannot be nested deeper than ${MAX_DOCUMENT_DEPTH} levels`)
        for (let i = 0; i < value.length; i++) checkValue(value[i], `${path}[${i}]`, depth + 1)
        return
      }
      if (value instanceof Date) {
        if (Number.isNaN(value.getTime())) throw new InvalidDocumentError(path, 'Invalid Date')
        return
      }
      if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) {
        throw new InvalidDocumentError(path, 'Binary values cannot be stored in documents (files go to the file store)')
      }
      if (isPlainObject(value)) {
        checkObject(value, path, depth + 1)
        return
      }
      throw new InvalidDocumentError(path, `Unsupported value type ${(value as object).constructor?.name ?? 'object'}`)
    default:
      throw new InvalidDocumentError(path, `Unsupported value type ${typeof value}`)
  }
}
