import { DocumentTooDeepError, DocumentTooLargeError, InvalidDocumentError } from '../errors.js'
import type { Document } from '../types.js'
import { isPlainObject } from './values.js'

/** MongoDB's documented limit on nested objects and arrays; both engines hold documents to it. */
export const MAX_DOCUMENT_DEPTH = 100
/**
 * MongoDB's limit on one document, measured as BSON; both engines refuse a
 * document of this size or more. The server takes one of exactly this size,
 * but the driver's bulk writes (insertMany) refuse it, so the bound is the
 * stricter of the two.
 */
export const MAX_DOCUMENT_BYTES = 16 * 1024 * 1024

const INT32_MIN = -0x80000000
const INT32_MAX = 0x7fffffff

/**
 * The one check of what a document may hold, run by both engines before a
 * write reaches them (inserts, upsert seeds, every value an update stores),
 * so a document one engine would store is never refused, or stored
 * differently, by the other: MongoDB ≥ 5 stores `$`-prefixed and dotted names
 * and then cannot `$set` them back, NUL in a name is a BSON error, NaN and
 * ±Infinity do not survive JSON, binary has no JSON form, and a lone
 * surrogate turns into U+FFFD in BSON's UTF-8 but not in SQLite's text.
 * Undefined fields are dropped and undefined array elements stored as null,
 * as the driver does with `ignoreUndefined`. The size is the document's BSON
 * size, `_id` included (`assignedId` is the one the engine is about to give
 * a document without one), measured on the way.
 */
export function validateDocument (doc: unknown, path = 'document', assignedId?: string): asserts doc is Document {
  if (!isPlainObject(doc)) throw new InvalidDocumentError(path, 'A document must be a plain object')
  const id = doc._id
  if (id !== undefined && typeof id !== 'string') throw new InvalidDocumentError(`${path}._id`, '_id must be a string')
  const bytes = checkObject(doc, path, 1) + (id === undefined && assignedId !== undefined ? elementBytes('_id') + stringBytes(assignedId) : 0)
  if (bytes >= MAX_DOCUMENT_BYTES) throw new DocumentTooLargeError(path, bytes)
}

/**
 * A value an update writes at a path (`$set`, `$push`…): the same rules as a
 * document's fields. `containerDepth` is the level of the object or array that
 * will hold it (a top-level field's is 1, `a.b`'s is 2, an element pushed onto
 * `a`'s array 2), so a dotted path cannot build a document deeper than the limit.
 */
export function validateStoredValue (value: unknown, path: string, containerDepth = 1): void {
  if (value === undefined) throw new InvalidDocumentError(path, 'undefined is not a valid value (use null)')
  if (containerDepth > MAX_DOCUMENT_DEPTH) throw tooDeep(path)
  const bytes = checkValue(value, path, containerDepth)
  // A value larger than a whole document cannot be part of one.
  if (bytes >= MAX_DOCUMENT_BYTES) throw new DocumentTooLargeError(path, bytes)
}

/**
 * The BSON size and nesting depth of a document already held to the rules
 * (an update's result on the embedded engine, which applies updates itself):
 * MongoDB refuses an update whose result passes 16 MiB, and so does the
 * embedded engine, with the same error.
 */
export function checkDocumentBounds (doc: Document, path: string): void {
  const bytes = measureObject(doc, path, 1)
  if (bytes >= MAX_DOCUMENT_BYTES) throw new DocumentTooLargeError(path, bytes)
}

/** A field name as both engines store it. */
export function checkFieldName (key: string, path: string): void {
  if (key.length === 0 || key.charCodeAt(0) === 36 || key.includes('.') || key.includes('\0') || !key.isWellFormed()) {
    throw new InvalidDocumentError(`${path}.${key}`, `Field names cannot be empty, start with '$', contain '.' or a null byte, or hold unpaired surrogates ('${key}')`)
  }
}

function tooDeep (path: string): DocumentTooDeepError {
  return new DocumentTooDeepError(path, `Documents cannot be nested deeper than ${MAX_DOCUMENT_DEPTH} levels`)
}

/** UTF-8 bytes of well-formed text: short ASCII-heavy names are counted here, long text by Buffer. */
function utf8Bytes (text: string): number {
  if (text.length > 32) return Buffer.byteLength(text, 'utf8')
  let bytes = text.length
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code < 0x80) continue
    if (code < 0x800) {
      bytes += 1
    } else if (code >= 0xd800 && code <= 0xdbff) {
      bytes += 2 // a surrogate pair: 4 bytes for its 2 code units
      i++
    } else {
      bytes += 2
    }
  }
  return bytes
}

/** An element's type byte and its name as a C string. */
const elementBytes = (name: string): number => 1 + utf8Bytes(name) + 1
const stringBytes = (text: string): number => 4 + utf8Bytes(text) + 1
/** What BSON's serializer writes: an int32 for whole numbers in its range, a double otherwise. */
const numberBytes = (value: number): number => Number.isInteger(value) && value >= INT32_MIN && value <= INT32_MAX ? 4 : 8
/** Array elements are named "0", "1", …: their name bytes summed. */
function indexNameBytes (length: number): number {
  let bytes = 0
  for (let digits = 1, from = 0, to = 10; from < length; digits++, from = to, to *= 10) bytes += (Math.min(length, to) - from) * (digits + 2)
  return bytes
}

function checkObject (object: Document, path: string, depth: number): number {
  if (depth > MAX_DOCUMENT_DEPTH) throw tooDeep(path)
  let bytes = 5
  for (const key of Object.keys(object)) {
    checkFieldName(key, path)
    const value = object[key]
    if (value !== undefined) bytes += elementBytes(key) + checkValue(value, `${path}.${key}`, depth)
  }
  return bytes
}

/** Checks a value held by a container at `depth`; its BSON bytes, without the element's name. */
function checkValue (value: unknown, path: string, depth: number): number {
  switch (typeof value) {
    case 'boolean':
      return 1
    case 'string':
      if (!value.isWellFormed()) throw new InvalidDocumentError(path, 'Text cannot hold unpaired surrogates')
      return stringBytes(value)
    case 'number':
      if (!Number.isFinite(value)) throw new InvalidDocumentError(path, 'Numbers must be finite (NaN and Infinity cannot be stored)')
      return numberBytes(value)
    case 'undefined':
      return 0 // only reached for array elements, stored as null
    case 'object': {
      if (value === null) return 0
      if (Array.isArray(value)) {
        if (depth + 1 > MAX_DOCUMENT_DEPTH) throw tooDeep(path)
        let bytes = 5 + indexNameBytes(value.length)
        for (let i = 0; i < value.length; i++) bytes += checkValue(value[i], `${path}[${i}]`, depth + 1)
        return bytes
      }
      if (value instanceof Date) {
        if (Number.isNaN(value.getTime())) throw new InvalidDocumentError(path, 'Invalid Date')
        return 8
      }
      if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) {
        throw new InvalidDocumentError(path, 'Binary values cannot be stored in documents (files go to the file store)')
      }
      if (isPlainObject(value)) return checkObject(value, path, depth + 1)
      throw new InvalidDocumentError(path, `Unsupported value type ${(value as object).constructor?.name ?? 'object'}`)
    }
    default:
      throw new InvalidDocumentError(path, `Unsupported value type ${typeof value}`)
  }
}

/** BSON bytes and the depth check alone, for documents whose names and values were checked when written. */
function measureObject (object: Document, path: string, depth: number): number {
  if (depth > MAX_DOCUMENT_DEPTH) throw tooDeep(path)
  let bytes = 5
  for (const key in object) {
    const value = object[key]
    if (value !== undefined) bytes += elementBytes(key) + measureValue(value, path, depth)
  }
  return bytes
}

function measureValue (value: unknown, path: string, depth: number): number {
  switch (typeof value) {
    case 'boolean': return 1
    case 'string': return stringBytes(value)
    case 'number': return numberBytes(value)
    case 'object': {
      if (value === null) return 0
      if (value instanceof Date) return 8
      if (Array.isArray(value)) {
        if (depth + 1 > MAX_DOCUMENT_DEPTH) throw tooDeep(path)
        let bytes = 5 + indexNameBytes(value.length)
        for (const element of value) bytes += measureValue(element, path, depth + 1)
        return bytes
      }
      return measureObject(value as Document, path, depth + 1)
    }
    default: return 0
  }
}
