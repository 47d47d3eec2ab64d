import { AppError } from '../platform/errors.js'
import { collectionErrors } from './errors.js'
import { projectErrors } from '../projects/errors.js'
import { QueryError } from '../store/errors.js'
import { validateStorable } from '../store/semantics/literals.js'
import { validateFilter } from '../store/semantics/match.js'
import { linearRegExp } from '../store/semantics/regex.js'
import { MAX_INDEXES } from '../store/semantics/indexes.js'
import { PROJECT_USERS_TABLE } from '../projects/naming.js'
import { parseIsoDate } from '../platform/iso-dates.js'
import { MAX_NESTING, nestedDeeperThan } from '../platform/nesting.js'
import {
  COLLECTION_METHODS, FIELD_TYPES, type AccessRuleT, type CollectionMethod, type FieldDefinitionT, type IndexDefinitionT, type MethodSettingT, type SignUpFieldsT
} from '../../schemas/collections.js'

/** What a definition says, apart from who owns it and when it changed. */
export interface DefinitionSpec {
  fields: FieldDefinitionT[]
  indexes: IndexDefinitionT[]
  methods: Record<CollectionMethod, MethodSettingT>
  /** `_users` only; absent on definitions made before the setting existed, which are strict. */
  signUpFields?: SignUpFieldsT
}

type FieldType = typeof FIELD_TYPES[number]

const DEFINITION_LIMITS = { maxFields: 100, maxIndexes: 20, maxRuleFilterBytes: 8 * 1024, maxRuleFilterDepth: 8 } as const

const COLLECTION_NAME = /^[a-z][a-z0-9_]{0,62}$/
const FIELD_NAME = /^[A-Za-z][A-Za-z0-9_]{0,63}$/
// Kept by the records service on every record, or never to be exposed as a field.
const RESERVED_FIELDS = new Set(['id', 'createdAt', 'updatedAt', 'version', 'passwordHash'])
// In _users, `password` would sit beside the hash as plain text if the records API ever wrote it.
const RESERVED_USER_FIELDS = new Set(['password', 'sessionEpoch'])
const BUILT_IN_TYPES: Record<string, FieldType> = { id: 'text', createdAt: 'date', updatedAt: 'date' }
const INDEXABLE_BUILT_INS = new Set(['createdAt', 'updatedAt'])
/**
 * Orders every collection is indexed for, declared or not: newest first by
 * either date, the id breaking ties (a list's order always ends with it), so a
 * page of the records table or of a feed, and each page after it through a
 * cursor, is read from the index. The oldest-first orders need a declared index.
 */
export const BUILT_IN_ORDERS: readonly IndexDefinitionT[] = [{ fields: ['-createdAt'] }, { fields: ['-updatedAt'] }]
const OPTION_TYPES: Record<string, readonly FieldType[]> = {
  values: ['select'],
  collection: ['relation'],
  maxSize: ['file'],
  allowedTypes: ['file'],
  pattern: ['text', 'email', 'url'],
  multiple: ['select', 'relation', 'file']
}
const WITHOUT_UNIQUE: readonly FieldType[] = ['json', 'file']
const OWNER_TYPES: readonly FieldType[] = ['text', 'relation']
const EMAIL = /^[^\s@]{1,64}@[^\s@.]+(\.[^\s@.]+)+$/
const RECORD_ID = /^[0-9A-Za-z_-]{1,64}$/

/** A name a definition may give a field; sign-up keeps undeclared profile fields only under such names. */
export function isFieldName (name: string): boolean {
  return FIELD_NAME.test(name)
}

export function invalidDefinition (path: string, message: string): AppError {
  return collectionErrors.invalidDefinition({ path, why: message })
}

function reservedField (path: string, message: string): AppError {
  return projectErrors.reservedField({ message: `${path}: ${message}`, path, issue: message })
}

/** Names starting with `_` belong to the platform; `_users` is made by switching project auth on. */
export function checkNewCollectionName (name: string): void {
  if (name.startsWith('_')) {
    throw collectionErrors.reservedCollection({ why: `name: "${name}" is reserved; names starting with "_" belong to the platform (_users is created by switching project auth on)`, issue: 'is reserved' })
  }
  // `/api/p/:projectId/auth/...` are the end-user auth routes; a collection there would be half shadowed.
  if (name === 'auth') throw collectionErrors.reservedCollection({ why: 'name: "auth" is reserved for the project\'s end-user auth routes', issue: 'is reserved' })
  // `/api/p/:projectId/realtime` is the realtime stream, which would shadow a collection's list route.
  if (name === 'realtime') throw collectionErrors.reservedCollection({ why: 'name: "realtime" is reserved for the project\'s realtime stream', issue: 'is reserved' })
  if (!COLLECTION_NAME.test(name)) throw invalidDefinition('name', 'must be lower-case letters, digits and underscores, starting with a letter')
}

/**
 * A field's `pattern`, anchored to the whole value, on the linear-time engine
 * the filters use; null when RE2 cannot express it (backreferences,
 * lookaround), which the definition refuses.
 */
export function compilePattern (pattern: string): RegExp | null {
  try {
    return linearRegExp(`^(?:${pattern})$`)
  } catch {
    return null
  }
}

/** Why a pattern was refused: not a regular expression at all, or one only a backtracking engine runs. */
function unsupportedPattern (pattern: string): string {
  try {
    RegExp(pattern, 'u')
  } catch {
    return 'invalid regular expression'
  }
  return 'uses what the linear-time engine cannot run (backreferences, lookahead or lookbehind)'
}

function isCount (value: number): boolean {
  return Number.isInteger(value) && value >= 0
}

function checkScalar (field: FieldDefinitionT, value: unknown, path: string): void {
  switch (field.type) {
    case 'text': case 'email': case 'url': {
      if (typeof value !== 'string') throw invalidDefinition(path, 'must be a string')
      if (field.type === 'text' && field.min !== undefined && value.length < field.min) throw invalidDefinition(path, `must be at least ${field.min} characters`)
      if (field.type === 'text' && field.max !== undefined && value.length > field.max) throw invalidDefinition(path, `must be at most ${field.max} characters`)
      if (field.type === 'email' && !EMAIL.test(value)) throw invalidDefinition(path, 'must be an email address')
      if (field.type === 'url') {
        const url = URL.canParse(value) ? new URL(value) : null
        if (url === null || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw invalidDefinition(path, 'must be an http or https URL')
      }
      if (field.pattern !== undefined && compilePattern(field.pattern)?.test(value) !== true) throw invalidDefinition(path, `must match the field's pattern ${field.pattern}`)
      return
    }
    case 'number':
      if (typeof value !== 'number' || !Number.isFinite(value)) throw invalidDefinition(path, 'must be a finite number')
      if (field.min !== undefined && value < field.min) throw invalidDefinition(path, `must be at least ${field.min}`)
      if (field.max !== undefined && value > field.max) throw invalidDefinition(path, `must be at most ${field.max}`)
      return
    case 'boolean':
      if (typeof value !== 'boolean') throw invalidDefinition(path, 'must be true or false')
      return
    case 'date':
      if (parseIsoDate(value) === null) throw invalidDefinition(path, 'must be an ISO 8601 date or date-time')
      return
    case 'json':
      try {
        validateStorable(value, path)
      } catch (error) {
        if (error instanceof QueryError) throw invalidDefinition(error.path, 'cannot be stored: object keys must not be empty, start with "$" or contain "."')
        throw error
      }
      return
    case 'select':
      if (typeof value !== 'string' || !(field.values ?? []).includes(value)) throw invalidDefinition(path, 'must be one of the field\'s values')
      return
    case 'relation':
      if (typeof value !== 'string' || !RECORD_ID.test(value)) throw invalidDefinition(path, 'must be a record id')
      return
    case 'file':
      throw invalidDefinition(path, 'file fields take no default; files are set by upload')
  }
}

/** A default is stored as if a client had sent it, so it must pass the field's own checks. */
function checkDefault (field: FieldDefinitionT, value: unknown, path: string): void {
  if (value === null) {
    if (field.required === true) throw invalidDefinition(path, 'cannot be null for a required field')
    return
  }
  if (nestedDeeperThan(value)) throw invalidDefinition(path, `may nest at most ${MAX_NESTING} levels`)
  if (field.multiple !== true || field.type === 'json') { checkScalar(field, value, path); return }
  if (!Array.isArray(value)) throw invalidDefinition(path, 'must be an array for a field with multiple values')
  if (field.min !== undefined && value.length < field.min) throw invalidDefinition(path, `needs at least ${field.min} values`)
  if (field.max !== undefined && value.length > field.max) throw invalidDefinition(path, `takes at most ${field.max} values`)
  value.forEach((item, i) => { checkScalar(field, item, `${path}[${i}]`) })
  if (new Set(value.map((item) => JSON.stringify(item))).size !== value.length) throw invalidDefinition(path, 'must not repeat a value')
}

function checkBounds (field: FieldDefinitionT, path: string): void {
  const bounded = field.min !== undefined || field.max !== undefined
  if (!bounded) return
  const counts = field.type === 'text' || field.multiple === true
  if (field.type !== 'number' && !counts) {
    throw invalidDefinition(`${path}.${field.min !== undefined ? 'min' : 'max'}`, `is only for number and text fields, and for select, relation and file fields with multiple values (not ${field.type})`)
  }
  for (const bound of ['min', 'max'] as const) {
    const value = field[bound]
    if (value === undefined) continue
    if (!Number.isFinite(value)) throw invalidDefinition(`${path}.${bound}`, 'must be a finite number')
    if (counts && !isCount(value)) throw invalidDefinition(`${path}.${bound}`, 'must be a whole number of at least 0')
  }
  if (field.min !== undefined && field.max !== undefined && field.min > field.max) throw invalidDefinition(`${path}.min`, `must not exceed max (${field.max})`)
}

function checkField (field: FieldDefinitionT, path: string): void {
  if (!FIELD_NAME.test(field.name)) throw invalidDefinition(`${path}.name`, 'must be letters, digits and underscores, starting with a letter')
  if (RESERVED_FIELDS.has(field.name)) throw reservedField(`${path}.name`, `"${field.name}" is reserved`)
  if (!(FIELD_TYPES as readonly string[]).includes(field.type)) throw invalidDefinition(`${path}.type`, `must be one of ${FIELD_TYPES.join(', ')}`)
  for (const [option, types] of Object.entries(OPTION_TYPES)) {
    if (field[option as keyof FieldDefinitionT] !== undefined && !types.includes(field.type)) {
      throw invalidDefinition(`${path}.${option}`, `is only for ${types.join(', ')} fields (not ${field.type})`)
    }
  }
  if (field.unique === true && WITHOUT_UNIQUE.includes(field.type)) throw invalidDefinition(`${path}.unique`, `is not available for ${field.type} fields`)
  if (field.type === 'select') {
    if (field.values === undefined || field.values.length === 0) throw invalidDefinition(`${path}.values`, 'is required for select fields')
    if (new Set(field.values).size !== field.values.length) throw invalidDefinition(`${path}.values`, 'must not repeat a value')
  }
  if (field.pattern !== undefined && compilePattern(field.pattern) === null) throw invalidDefinition(`${path}.pattern`, unsupportedPattern(field.pattern))
  checkBounds(field, path)
  if (field.default !== undefined) checkDefault(field, field.default, `${path}.default`)
}

function checkUsersFields (fields: FieldDefinitionT[]): void {
  fields.forEach((field, i) => {
    if (RESERVED_USER_FIELDS.has(field.name)) throw reservedField(`fields[${i}].name`, `"${field.name}" is reserved in ${PROJECT_USERS_TABLE}`)
  })
  const email = fields.findIndex((field) => field.name === 'email')
  if (email === -1) throw reservedField('fields', `"email" cannot be removed from ${PROJECT_USERS_TABLE}`)
  const { type, required, unique } = fields[email]
  if (type !== 'email' || required !== true || unique !== true) throw reservedField(`fields[${email}]`, `"email" of ${PROJECT_USERS_TABLE} must stay an email field, required and unique`)
  const verified = fields.findIndex((field) => field.name === 'emailVerified')
  if (verified === -1) throw reservedField('fields', `"emailVerified" cannot be removed from ${PROJECT_USERS_TABLE}`)
  if (fields[verified].type !== 'boolean') throw reservedField(`fields[${verified}].type`, `"emailVerified" of ${PROJECT_USERS_TABLE} must stay a boolean field`)
}

function mayHoldArray (field: FieldDefinitionT | undefined): boolean {
  return field !== undefined && (field.multiple === true || field.type === 'json')
}

function checkIndexes (indexes: IndexDefinitionT[], fields: ReadonlyMap<string, FieldDefinitionT>): void {
  const uniqueFields = [...fields.values()].filter((field) => field.unique === true).length
  // Each unique field has an index of its own beside the declared ones, as have the id and the built-in orders: all count towards MongoDB's 64.
  const room = MAX_INDEXES - 1 - BUILT_IN_ORDERS.length
  if (uniqueFields + indexes.length > room) {
    throw invalidDefinition('indexes', `at most ${room} indexes, counting one for each unique field (${uniqueFields} here); a collection holds at most ${MAX_INDEXES}, the id's and the newest-first orders' (createdAt, updatedAt) included`)
  }
  const seen = new Map<string, number>()
  indexes.forEach((index, i) => {
    if (index.fields.length === 0) throw invalidDefinition(`indexes[${i}].fields`, 'needs at least one field')
    const names = new Set<string>()
    index.fields.forEach((entry, j) => {
      const name = entry.startsWith('-') ? entry.slice(1) : entry
      if (!fields.has(name) && !INDEXABLE_BUILT_INS.has(name)) throw invalidDefinition(`indexes[${i}].fields[${j}]`, `"${name}" is not a field of this collection`)
      if (names.has(name)) throw invalidDefinition(`indexes[${i}].fields[${j}]`, `"${name}" appears twice`)
      names.add(name)
    })
    // MongoDB cannot index two arrays of one document together ("parallel arrays"): refused now, not at some later write.
    const arrays = [...names].filter((name) => mayHoldArray(fields.get(name)))
    if (arrays.length > 1) {
      throw invalidDefinition(`indexes[${i}].fields`, `cannot hold two fields that may hold arrays (${arrays.map((name) => `"${name}"`).join(', ')}: multiple-valued or json); index them separately`)
    }
    const key = index.fields.join(',')
    const earlier = seen.get(key)
    if (earlier !== undefined) throw invalidDefinition(`indexes[${i}]`, `has the same fields as indexes[${earlier}]`)
    seen.set(key, i)
  })
}

/** Only field names are checked here; `$elemMatch` sub-documents name fields of array elements, not of the record. */
function checkFilterFields (filter: Record<string, unknown>, path: string, fields: ReadonlyMap<string, FieldDefinitionT>): void {
  for (const [key, value] of Object.entries(filter)) {
    if (key === '$and' || key === '$or' || key === '$nor') {
      (value as Array<Record<string, unknown>>).forEach((branch, i) => { checkFilterFields(branch, `${path}.${key}[${i}]`, fields) })
      continue
    }
    const [head, ...rest] = key.split('.')
    const type = BUILT_IN_TYPES[head] ?? fields.get(head)?.type
    if (type === undefined) throw invalidDefinition(`${path}.${key}`, `"${head}" is not a field of this collection`)
    if (rest.length > 0 && type !== 'json') throw invalidDefinition(`${path}.${key}`, 'only json fields have sub-fields')
  }
}

function checkRuleFilter (filter: Record<string, unknown>, path: string, fields: ReadonlyMap<string, FieldDefinitionT>): void {
  const { maxRuleFilterBytes, maxRuleFilterDepth } = DEFINITION_LIMITS
  // Depth first and without recursion: JSON.stringify of a filter thousands of levels deep overflows the stack.
  if (nestedDeeperThan(filter, maxRuleFilterDepth)) throw invalidDefinition(path, `is nested deeper than ${maxRuleFilterDepth} levels`)
  if (Buffer.byteLength(JSON.stringify(filter), 'utf8') > maxRuleFilterBytes) throw invalidDefinition(path, `is larger than ${maxRuleFilterBytes} bytes of JSON`)
  try {
    validateFilter(filter, path)
  } catch (error) {
    if (error instanceof QueryError) throw invalidDefinition(error.path, error.message.replace(/ \(at [^)]*\)$/, ''))
    throw error
  }
  checkFilterFields(filter, path, fields)
}

function checkRule (rule: AccessRuleT, path: string, fields: ReadonlyMap<string, FieldDefinitionT>): void {
  if (rule.owner !== undefined) {
    const type = fields.get(rule.owner)?.type
    if (type === undefined || !OWNER_TYPES.includes(type)) throw invalidDefinition(`${path}.owner`, `"${rule.owner}" must be a text or relation field of this collection`)
  }
  if (rule.filter !== undefined) checkRuleFilter(rule.filter, `${path}.filter`, fields)
  if (rule.check !== undefined) checkRuleFilter(rule.check, `${path}.check`, fields)
  for (const list of ['deny', 'readonly'] as const) {
    rule[list]?.forEach((name, i) => {
      if (!fields.has(name)) throw invalidDefinition(`${path}.${list}[${i}]`, `"${name}" is not a field of this collection`)
    })
  }
}

/**
 * Everything that can be decided from the definition alone, in the order a
 * reader would fix it: fields, then indexes, then method rules. Whether a
 * relation's target exists needs the Store and is the service's job.
 */
export function validateDefinition (collection: string, spec: DefinitionSpec): void {
  const { maxFields, maxIndexes } = DEFINITION_LIMITS
  if (spec.fields.length > maxFields) throw invalidDefinition('fields', `at most ${maxFields} fields`)
  if (spec.indexes.length > maxIndexes) throw invalidDefinition('indexes', `at most ${maxIndexes} indexes`)
  const fields = new Map<string, FieldDefinitionT>()
  spec.fields.forEach((field, i) => {
    checkField(field, `fields[${i}]`)
    if (fields.has(field.name)) throw invalidDefinition(`fields[${i}].name`, `"${field.name}" is defined twice`)
    fields.set(field.name, field)
  })
  if (collection === PROJECT_USERS_TABLE) checkUsersFields(spec.fields)
  else if (spec.signUpFields !== undefined) throw invalidDefinition('signUpFields', `is only for ${PROJECT_USERS_TABLE}, whose records sign-up writes`)
  checkIndexes(spec.indexes, fields)
  for (const method of COLLECTION_METHODS) {
    const rule = spec.methods[method].rule as AccessRuleT | null
    if (rule !== null) checkRule(rule, `methods.${method}.rule`, fields)
  }
}

/** Relation fields pointing at another collection, which must exist in the same project. */
export function foreignRelations (collection: string, fields: FieldDefinitionT[]): Array<{ path: string, field: string, collection: string }> {
  const targets: Array<{ path: string, field: string, collection: string }> = []
  fields.forEach((field, i) => {
    if (field.collection !== undefined && field.collection !== collection) targets.push({ path: `fields[${i}].collection`, field: field.name, collection: field.collection })
  })
  return targets
}
