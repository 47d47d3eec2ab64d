import { collectionErrors } from './errors.js'
import { normalizeEmail } from '../identity/users.js'
import { deepEqual } from '../store/semantics/values.js'
import { MAX_NESTING, nestedDeeperThan } from '../platform/nesting.js'
import type { Document } from '../store/types.js'
import type { FieldDefinitionT } from '../../schemas/collections.js'
import { isoString, parseIsoDate } from '../platform/iso-dates.js'
import { FrozenMemo } from '../cache/frozen-memo.js'
import { compilePattern, isFieldName } from './definition-validation.js'
import { NO_FIELDS } from './access.js'

/** Kept by the service on every record; clients read them but never write them. */
export const SYSTEM_FIELDS = new Set(['id', 'createdAt', 'updatedAt', 'version'])
/** Stored but never returned by the data API, whatever the rules say. */
const HIDDEN_FIELDS = new Set(['_id', 'passwordHash', 'sessionEpoch'])

const EMAIL = /^[^\s@]{1,64}@[^\s@.]+(\.[^\s@.]+)+$/
const MAX_JSON_BYTES = 64 * 1024
const MAX_TEXT = 100_000

export type FieldMap = ReadonlyMap<string, FieldDefinitionT>

// A shared definition's fields are frozen, so one map stands for one collection shape, and what is keyed by it is shared too.
const fieldMaps = new FrozenMemo((fields: readonly FieldDefinitionT[]): FieldMap => new Map(fields.map((field) => [field.name, field])))

export function fieldMap (fields: readonly FieldDefinitionT[]): FieldMap {
  return fieldMaps.get(fields)
}

function invalid (field: string, message: string): Error {
  return collectionErrors.invalidField({ field, why: message })
}

function checkCount (field: FieldDefinitionT, count: number): void {
  if (field.min !== undefined && count < field.min) throw invalid(field.name, `needs at least ${field.min} values`)
  if (field.max !== undefined && count > field.max) throw invalid(field.name, `takes at most ${field.max} values`)
}

function scalar (field: FieldDefinitionT, value: unknown): unknown {
  const name = field.name
  switch (field.type) {
    case 'text': case 'email': case 'url': {
      if (typeof value !== 'string') throw invalid(name, 'must be a string')
      // Stored as sign-up stores them, so a unique email field is unique whatever the case.
      const text = field.type === 'email' ? normalizeEmail(value) : value
      if (text.length > MAX_TEXT) throw invalid(name, `is longer than ${MAX_TEXT} characters`)
      if (field.type === 'text') {
        if (field.min !== undefined && text.length < field.min) throw invalid(name, `must be at least ${field.min} characters`)
        if (field.max !== undefined && text.length > field.max) throw invalid(name, `must be at most ${field.max} characters`)
      }
      if (field.type === 'email' && !EMAIL.test(text)) throw invalid(name, 'must be an email address')
      if (field.type === 'url') {
        let url: URL | null = null
        try { url = new URL(text) } catch {}
        if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw invalid(name, 'must be an http or https URL')
      }
      if (field.pattern !== undefined && compilePattern(field.pattern)?.test(text) !== true) throw invalid(name, `must match ${field.pattern}`)
      return text
    }
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) throw invalid(name, 'must be a finite number')
      if (field.min !== undefined && value < field.min) throw invalid(name, `must be at least ${field.min}`)
      if (field.max !== undefined && value > field.max) throw invalid(name, `must be at most ${field.max}`)
      return value
    case 'boolean':
      if (typeof value !== 'boolean') throw invalid(name, 'must be true or false')
      return value
    case 'date': {
      const date = parseIsoDate(value)
      if (date === null) throw invalid(name, 'must be an ISO 8601 date or date-time that exists (2024-02-29, 2024-02-29T10:00:00Z)')
      return date
    }
    case 'json':
      if (nestedDeeperThan(value)) throw invalid(name, `may nest at most ${MAX_NESTING} levels`)
      if (Buffer.byteLength(JSON.stringify(value) ?? '', 'utf8') > MAX_JSON_BYTES) throw invalid(name, `is larger than ${MAX_JSON_BYTES} bytes`)
      return value
    case 'select':
      if (typeof value !== 'string' || !(field.values ?? []).includes(value)) throw invalid(name, `must be one of ${(field.values ?? []).join(', ')}`)
      return value
    case 'relation':
      if (typeof value !== 'string' || !/^[0-9A-Za-z_-]{1,64}$/.test(value)) throw invalid(name, 'must be a record id')
      return value
    case 'file':
      throw collectionErrors.readonlyField({ why: `${name}: files are set through the upload routes`, field: name, issue: 'is set through the upload routes' })
  }
}

function convert (field: FieldDefinitionT, value: unknown): unknown {
  if (value === null) {
    if (field.required === true) throw invalid(field.name, 'is required')
    return null
  }
  if (field.type !== 'json' && field.multiple === true) {
    if (!Array.isArray(value)) throw invalid(field.name, 'must be an array')
    checkCount(field, value.length)
    const items = value.map((item) => scalar(field, item))
    if (new Set(items.map((item) => JSON.stringify(item))).size !== items.length) throw invalid(field.name, 'must not repeat a value')
    if (field.required === true && items.length === 0) throw invalid(field.name, 'is required')
    return items
  }
  return scalar(field, value)
}

/**
 * Checks a create or update body against the definition and returns the
 * values to store. Unknown fields, system fields and the rule's readonly
 * fields are refused rather than dropped, so a typo never passes silently.
 * `setByServer` names fields the caller supplies beside the body (sign-up's
 * email), which therefore count as given.
 */
export function recordValues (fields: FieldMap, body: Document, mode: 'create' | 'update', readonly: ReadonlySet<string>, setByServer: ReadonlySet<string> = NO_FIELDS): Document {
  const values: Document = {}
  for (const [name, value] of Object.entries(body)) {
    if (SYSTEM_FIELDS.has(name)) throw collectionErrors.readonlyField({ field: name, issue: 'is set by the server' })
    const field = fields.get(name)
    if (field === undefined) throw collectionErrors.unknownField({ field: name })
    if (readonly.has(name)) throw collectionErrors.readonlyField({ field: name, issue: 'cannot be written by this method\'s callers' })
    if (value === undefined) continue
    values[name] = convert(field, value)
  }
  if (mode === 'create') {
    for (const field of fields.values()) {
      if (field.type === 'file' || Object.hasOwn(values, field.name) || setByServer.has(field.name)) continue
      if (field.default !== undefined) values[field.name] = convert(field, field.default)
      else if (field.required === true) throw collectionErrors.fieldRequired({ field: field.name })
    }
  }
  return values
}

/**
 * Sign-up's profile fields under an open `_users`: those the definition does
 * not declare, set apart to be kept as sent (sign-up has bounded their size
 * and names), and the rest, which meet the definition. An undeclared name
 * must be one a field could be given, so the admins can declare it later.
 */
export function undeclaredFields (fields: FieldMap, body: Document): { declared: Document, undeclared: Document } {
  const declared: Document = {}
  const undeclared: Document = {}
  for (const [name, value] of Object.entries(body)) {
    if (fields.has(name) || SYSTEM_FIELDS.has(name)) { declared[name] = value; continue }
    if (!isFieldName(name)) throw invalid(name, 'is not a name a field can have: letters, digits and underscores, starting with a letter, at most 64')
    if (value !== undefined) undeclared[name] = value
  }
  return { declared, undeclared }
}

/** What decides which values a field accepts; a change to any of it means stored values must be checked again. */
export function valueRulesChanged (before: FieldDefinitionT, after: FieldDefinitionT): boolean {
  const rules = (field: FieldDefinitionT): string => JSON.stringify([field.type, field.multiple === true, field.values, field.min, field.max, field.pattern, field.collection])
  return rules(before) !== rules(after)
}

/**
 * Whether a stored, non-null value of a field defined as `before` is one the
 * field as `after` accepts, unchanged: judged as if a client sent it again,
 * and refused when that would store something else (a string that would now
 * become a date, an email that would be lower-cased). Records are never
 * rewritten by a definition change. Files only stay files, and relation ids
 * only keep their target collection.
 */
export function storedValueFits (before: FieldDefinitionT, after: FieldDefinitionT, value: unknown): boolean {
  if (before.type === 'file' || after.type === 'file') return before.type === after.type && (before.multiple === true) === (after.multiple === true)
  if (after.type === 'relation' && (before.type !== 'relation' || before.collection !== after.collection)) return false
  try {
    return deepEqual(convert({ ...after, required: false }, toJson(value)), value)
  } catch {
    return false
  }
}

/** Relation values that must exist in their target collections: collection name → ids. */
export function relationTargets (fields: FieldMap, values: Document, ownCollection: string): Map<string, Set<string>> {
  const targets = new Map<string, Set<string>>()
  for (const [name, value] of Object.entries(values)) {
    const field = fields.get(name)
    if (field?.type !== 'relation' || value === null) continue
    const target = field.collection ?? ownCollection
    const ids = targets.get(target) ?? new Set<string>()
    for (const id of Array.isArray(value) ? value : [value]) ids.add(id as string)
    targets.set(target, ids)
  }
  return targets
}

function toJson (value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value
  if (value instanceof Date) return isoString(value)
  if (Array.isArray(value)) return value.map(toJson)
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, toJson(item)]))
}

export type ApiRecord = { id: string, [field: string]: unknown }

/** A stored record as the API shows it: `id` first, dates as ISO strings, hidden and denied fields left out. */
export function toApiRecord (doc: Document, deny: ReadonlySet<string>, only: ReadonlySet<string> | null = null): ApiRecord {
  const out: ApiRecord = { id: doc._id as string }
  for (const name of Object.keys(doc)) {
    if (HIDDEN_FIELDS.has(name) || deny.has(name)) continue
    if (only !== null && !only.has(name)) continue
    out[name] = toJson(doc[name])
  }
  return out
}

// A document read shared is one frozen instance while it is unchanged: its API form is made once per deny mask.
const apiForms = new FrozenMemo((doc: Document, deny: ReadonlySet<string>) => toApiRecord(doc, deny))

/** toApiRecord for documents read shared; a field selection is converted afresh. */
export function sharedApiRecord (doc: Document, deny: ReadonlySet<string>, only: ReadonlySet<string> | null): ApiRecord {
  return only === null ? apiForms.get(doc, deny) : toApiRecord(doc, deny, only)
}
