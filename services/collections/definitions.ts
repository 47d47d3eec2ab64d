import type { Static } from '@sinclair/typebox'
import { AppError, fieldIssue, type ErrorDetails } from '../platform/errors.js'
import { collectionErrors } from './errors.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Clock } from '../platform/clock.js'
import type { Filter, IndexDescription, SharedReads, Store, StoreCollection, WithId } from '../store/types.js'
import { PROJECT_USERS_TABLE, projectCollectionName } from '../projects/naming.js'
import {
  COLLECTION_METHODS, type Collection, type CollectionMethod, type FieldDefinitionT, type IndexDefinitionT, type MethodSettingT, type MethodSettings, type SignUpFieldsT
} from '../../schemas/collections.js'
import { checkNewCollectionName, foreignRelations, invalidDefinition, validateDefinition, type DefinitionSpec } from './definition-validation.js'
import { backfillBuiltInOrders, BUILT_IN_ORDERS_VERSION, DEFINITION_INDEX_PREFIX, sameKey, wantedIndexes, type StartLog, type WantedIndex } from './definition-indexes.js'
import { storedValueFits, valueRulesChanged } from './record-fields.js'
import { FrozenMemo } from '../cache/frozen-memo.js'
import { collectionKey, type WriteGate } from './write-gate.js'
import { isoString } from '../platform/iso-dates.js'

/** A collection definition as the records API reads it. */
export type CollectionDef = {
  projectId: string
  name: string
  fields: FieldDefinitionT[]
  indexes: IndexDefinitionT[]
  methods: Record<CollectionMethod, MethodSettingT>
  /** `_users` only: whether sign-up keeps profile fields the definition does not declare. */
  signUpFields?: SignUpFieldsT
  createdAt: Date
  updatedAt: Date
}

/** What the admin routes answer. */
export type CollectionView = Static<typeof Collection>

/** Fields or indexes given replace the old lists; methods given replace those methods only. */
export interface CollectionChanges {
  fields?: FieldDefinitionT[]
  indexes?: IndexDefinitionT[]
  methods?: Static<typeof MethodSettings>
  signUpFields?: SignUpFieldsT
}

export type CollectionInput = CollectionChanges & { name: string }

/** Run when a collection is dropped: each family that keeps data about its records elsewhere (files) registers one. */
export type CollectionDropHook = (projectId: string, name: string, fields: FieldDefinitionT[]) => Promise<void>

/**
 * The spec is kept as JSON text because rule filters carry `$` operators and
 * dotted paths, and json defaults any keys, which the Store refuses as field names.
 */
type DefinitionRecord = {
  projectId: string
  name: string
  spec: string
  /** BUILT_IN_ORDERS_VERSION once the collection has the built-in orders' indexes; absent on definitions older than them. */
  builtInOrders?: number
  createdAt: Date
  updatedAt: Date
}

export const DEFINITIONS_COLLECTION = 'collection_definitions'
const DISABLED: MethodSettingT = { enabled: false, rule: null }

function definitionId (projectId: string, name: string): string {
  return `${projectId}:${name}`
}

function allDisabled (): Record<CollectionMethod, MethodSettingT> {
  return Object.fromEntries(COLLECTION_METHODS.map((method) => [method, DISABLED])) as Record<CollectionMethod, MethodSettingT>
}

const EMPTY_SPEC: DefinitionSpec = { fields: [], indexes: [], methods: allDisabled() }

function plural (count: number, one: string, many: string): string {
  return `${count} ${count === 1 ? one : many}`
}

function toDef (record: WithId<DefinitionRecord>): CollectionDef {
  const spec = JSON.parse(record.spec) as DefinitionSpec
  return { projectId: record.projectId, name: record.name, ...spec, createdAt: record.createdAt, updatedAt: record.updatedAt }
}

// Every data API call reads its collection's definition: parsed once per stored definition record.
const defOf = new FrozenMemo(toDef)

function toCollectionView (def: CollectionDef): CollectionView {
  return {
    name: def.name,
    fields: def.fields,
    indexes: def.indexes,
    methods: def.methods,
    ...(def.name === PROJECT_USERS_TABLE ? { signUpFields: signUpFieldsOf(def) } : {}),
    createdAt: isoString(def.createdAt),
    updatedAt: isoString(def.updatedAt)
  }
}

/** A `_users` definition saved before the setting existed keeps refusing undeclared fields, as it did then. */
export function signUpFieldsOf (def: { signUpFields?: SignUpFieldsT }): SignUpFieldsT {
  return def.signUpFields ?? 'strict'
}

/** What switching auth on gives: sign-up keeps the profile fields it is sent, as the interface promises. */
function usersSpec (): DefinitionSpec {
  return {
    fields: [{ name: 'email', type: 'email', required: true, unique: true }, { name: 'emailVerified', type: 'boolean' }],
    indexes: [],
    methods: allDisabled(),
    signUpFields: 'open'
  }
}

/**
 * The definitions of each project's collections, and the Store indexes they
 * imply on the collection holding its records (`p_<projectId>_<name>`). A
 * change existing records would violate is refused before anything moves.
 */
export class CollectionDefinitions {
  private readonly records: StoreCollection<DefinitionRecord>
  private readonly shared: SharedReads<DefinitionRecord>
  private readonly dropHooks: CollectionDropHook[] = []

  constructor (private readonly store: Store, private readonly deps: {
    clock: Clock
    /** Orders definition changes against record writes of the same collection, so a change's scans see every record. */
    writes: WriteGate
  }) {
    this.records = store.collection<DefinitionRecord>(DEFINITIONS_COLLECTION)
    this.shared = store.extensions.shared<DefinitionRecord>(DEFINITIONS_COLLECTION)
  }

  async init (log: StartLog): Promise<void> {
    await this.records.createIndex({ projectId: 1, name: 1 })
    await backfillBuiltInOrders(this.store, this.records, log)
  }

  onDrop (hook: CollectionDropHook): void {
    this.dropHooks.push(hook)
  }

  async list (projectId: string): Promise<CollectionView[]> {
    const records = await this.records.find({ projectId }, { sort: { name: 1 } }).toArray()
    return records.map((record) => toCollectionView(toDef(record)))
  }

  /** Shared and frozen: what the data API derives from a definition is remembered by its identity. */
  async find (projectId: string, name: string): Promise<CollectionDef | null> {
    const record = await this.shared.findOne({ _id: definitionId(projectId, name) })
    return record === null ? null : defOf.get(record)
  }

  async get (projectId: string, name: string): Promise<CollectionView> {
    return toCollectionView(await this.require(projectId, name))
  }

  async create (projectId: string, input: CollectionInput): Promise<CollectionView> {
    checkNewCollectionName(input.name)
    const spec: DefinitionSpec = {
      fields: input.fields ?? [],
      indexes: input.indexes ?? [],
      methods: { ...allDisabled(), ...givenMethods(input.methods) },
      ...(input.signUpFields === undefined ? {} : { signUpFields: input.signUpFields })
    }
    await this.validate(projectId, input.name, spec)
    if (await this.find(projectId, input.name) !== null) throw exists(input.name)
    return toCollectionView(await this.insert(projectId, input.name, spec))
  }

  async update (projectId: string, name: string, changes: CollectionChanges): Promise<CollectionView> {
    return await this.deps.writes.change(collectionKey(projectId, name), async () => {
      const current = await this.require(projectId, name)
      const before: DefinitionSpec = { fields: current.fields, indexes: current.indexes, methods: current.methods }
      const signUpFields = changes.signUpFields ?? current.signUpFields
      const after: DefinitionSpec = {
        fields: changes.fields ?? before.fields,
        indexes: changes.indexes ?? before.indexes,
        methods: { ...before.methods, ...givenMethods(changes.methods) },
        ...(signUpFields === undefined ? {} : { signUpFields })
      }
      await this.validate(projectId, name, after)
      await this.applyToRecords(projectId, name, before, after)
      const saved = await this.records.findOneAndUpdate(
        { _id: definitionId(projectId, name) },
        { $set: { spec: JSON.stringify(after), builtInOrders: BUILT_IN_ORDERS_VERSION, updatedAt: this.deps.clock.now() } },
        { returnDocument: 'after' }
      )
      if (saved === null) throw collectionErrors.collectionNotFound({ name })
      return toCollectionView(toDef(saved))
    })
  }

  /** The definition goes first, so the records API stops serving the collection before its records go. */
  async drop (projectId: string, name: string): Promise<void> {
    return await this.deps.writes.change(collectionKey(projectId, name), async () => {
      if (name === PROJECT_USERS_TABLE) {
        throw collectionErrors.reservedCollection({ why: `${PROJECT_USERS_TABLE} holds the project's end users and cannot be dropped; switch project auth off instead`, issue: 'holds the project\'s end users' })
      }
      const referencing = await this.referencesTo(projectId, name)
      if (referencing.length > 0) {
        throw collectionErrors.collectionReferenced({ name, referencing })
      }
      const removed = await this.records.findOneAndDelete({ _id: definitionId(projectId, name) })
      if (removed === null) throw collectionErrors.collectionNotFound({ name })
      await this.dropRecords(projectId, name, toDef(removed).fields)
    })
  }

  /**
   * Definitions are removed last, so a purge interrupted mid-way finds them again when it is retried. Each
   * collection is dropped through the write gate, so a record write already under way lands before its drop.
   */
  async dropAllForProject (projectId: string): Promise<void> {
    const records = await this.records.find({ projectId }).toArray()
    for (const record of records) {
      await this.deps.writes.change(collectionKey(projectId, record.name), async () => { await this.dropRecords(projectId, record.name, toDef(record).fields) })
    }
    await this.store.extensions.sweep(DEFINITIONS_COLLECTION).deleteMany({ projectId })
  }

  /**
   * Gives `_users` its definition the first time project auth goes on. An
   * existing definition is left exactly as the admins made it.
   */
  async ensureUsersCollection (projectId: string): Promise<void> {
    if (await this.find(projectId, PROJECT_USERS_TABLE) !== null) return
    // The very index ProjectUsers.enable makes (engine-default name), so whichever runs first, one key never gets two rival indexes.
    await this.store.collection(projectCollectionName(projectId, PROJECT_USERS_TABLE)).createIndex({ email: 1 }, { unique: true })
    try {
      await this.insert(projectId, PROJECT_USERS_TABLE, usersSpec())
    } catch (error) {
      if (collectionErrors.collectionExists.is(error)) return
      throw error
    }
  }

  /** `collection.field` of every relation in other collections of the project that points at `name`. */
  private async referencesTo (projectId: string, name: string): Promise<string[]> {
    const referencing: string[] = []
    for (const record of await this.records.find({ projectId }).toArray()) {
      if (record.name === name) continue
      for (const relation of foreignRelations(record.name, toDef(record).fields)) {
        if (relation.collection === name) referencing.push(`${record.name}.${relation.field}`)
      }
    }
    return referencing
  }

  private async require (projectId: string, name: string): Promise<CollectionDef> {
    const def = await this.find(projectId, name)
    if (def === null) throw collectionErrors.collectionNotFound({ name })
    return def
  }

  private async validate (projectId: string, name: string, spec: DefinitionSpec): Promise<void> {
    validateDefinition(name, spec)
    for (const relation of foreignRelations(name, spec.fields)) {
      if (await this.find(projectId, relation.collection) === null) {
        throw invalidDefinition(relation.path, `"${relation.collection}" is not a collection of this project`)
      }
    }
  }

  private async insert (projectId: string, name: string, spec: DefinitionSpec): Promise<CollectionDef> {
    // Records may already exist: a crash between dropping a definition and its records, or a re-created name.
    await this.applyToRecords(projectId, name, EMPTY_SPEC, spec)
    const now = this.deps.clock.now()
    const record = { projectId, name, spec: JSON.stringify(spec), builtInOrders: BUILT_IN_ORDERS_VERSION, createdAt: now, updatedAt: now }
    try {
      await this.records.insertOne({ ...record, _id: definitionId(projectId, name) })
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw exists(name)
      throw error
    }
    return toDef({ ...record, _id: definitionId(projectId, name) })
  }

  private async dropRecords (projectId: string, name: string, fields: FieldDefinitionT[]): Promise<void> {
    for (const hook of this.dropHooks) await hook(projectId, name, fields)
    // A page of records per write, then the empty collection: a drop cut short is finished when it runs again.
    await this.store.extensions.sweep(projectCollectionName(projectId, name)).drop()
  }

  /** Checks what existing records would break, then moves the indexes; throws before changing anything on a conflict. */
  private async applyToRecords (projectId: string, name: string, before: DefinitionSpec, after: DefinitionSpec): Promise<void> {
    const records = this.store.collection(projectCollectionName(projectId, name))
    const wasRequired = new Set(before.fields.filter((field) => field.required === true).map((field) => field.name))
    for (const field of after.fields) {
      if (field.required !== true || wasRequired.has(field.name)) continue
      // `null` matches both a missing field and an explicit null, as in MongoDB.
      const lacking = await records.countDocuments({ [field.name]: null })
      if (lacking > 0) {
        throw collectionErrors.definitionConflict({ why: `field "${field.name}" is now required but ${plural(lacking, 'record lacks', 'records lack')} it`, details: { ...fieldIssue(field.name, 'is now required'), count: lacking } })
      }
    }
    await this.checkRetypedFields(records, before, after)
    await this.syncIndexes(records, wantedIndexes(after))
  }

  /**
   * A field whose type or value rules changed must still accept every value
   * records hold (scanned: the Store has no $type). So must a field declared
   * anew: records may hold values under its name already (profile fields
   * sign-up kept undeclared, a field dropped and declared again), which were
   * stored as they came, like a json field's.
   */
  private async checkRetypedFields (records: StoreCollection, before: DefinitionSpec, after: DefinitionSpec): Promise<void> {
    const previous = new Map(before.fields.map((field) => [field.name, field]))
    for (const field of after.fields) {
      const declared = previous.get(field.name)
      if (declared !== undefined && !valueRulesChanged(declared, field)) continue
      const old: FieldDefinitionT = declared ?? { name: field.name, type: 'json' }
      const holding = await records.find({ [field.name]: { $ne: null } }, { projection: { [field.name]: 1 } }).toArray()
      const misfits = holding.filter((record) => !storedValueFits(old, field, record[field.name])).length
      if (misfits > 0) {
        throw collectionErrors.definitionConflict({ why: `field "${field.name}": ${plural(misfits, 'record holds a value', 'records hold values')} the new definition refuses`, details: { ...fieldIssue(field.name, 'refuses values records hold'), count: misfits } })
      }
    }
  }

  private async syncIndexes (records: StoreCollection, wanted: WantedIndex[]): Promise<void> {
    const existing = await records.listIndexes()
    const wantedNames = new Set(wanted.map((index) => index.name))
    const stale = existing.filter((index) => index.name.startsWith(DEFINITION_INDEX_PREFIX) && !wantedNames.has(index.name))
    const missing: WantedIndex[] = []
    for (const want of wanted) {
      if (existing.some((index) => index.name === want.name)) continue
      const sameKeyed = existing.find((index) => sameKey(index.key, want.key))
      // An index someone else made with the same key and kind already does the job (ProjectUsers' email index on _users).
      if (sameKeyed !== undefined && !stale.includes(sameKeyed) && sameKeyed.unique === want.unique) continue
      if (sameKeyed !== undefined && !stale.includes(sameKeyed)) {
        throw collectionErrors.definitionConflict({ why: `index on ${want.label}: the collection already has an index "${sameKeyed.name}" on the same key, not managed by this definition`, details: fieldIssue('indexes', `the collection already has an index "${sameKeyed.name}" on the same key`) })
      }
      missing.push(want)
    }
    // A key can carry one index only, so one whose uniqueness changes is replaced after the others are in place.
    const replacing = (want: WantedIndex): IndexDescription | undefined => stale.find((index) => sameKey(index.key, want.key))
    const ordered = [...missing.filter((want) => replacing(want) === undefined), ...missing.filter((want) => replacing(want) !== undefined)]
    const created: WantedIndex[] = []
    const dropped: IndexDescription[] = []
    for (const want of ordered) {
      try {
        const old = replacing(want)
        if (old !== undefined) { await records.dropIndex(old.name); dropped.push(old) }
        await records.createIndex(want.key, { name: want.name, unique: want.unique })
        created.push(want)
      } catch (error) {
        await restore(records, created, dropped)
        if (error instanceof DuplicateKeyError) throw await duplicateConflict(records, want, error)
        throw error
      }
    }
    for (const index of stale) if (!dropped.includes(index)) await records.dropIndex(index.name)
  }
}

function givenMethods (methods: CollectionChanges['methods']): Partial<Record<CollectionMethod, MethodSettingT>> {
  if (methods === undefined) return {}
  return Object.fromEntries(Object.entries(methods).filter(([, setting]) => setting !== undefined))
}

function exists (name: string): AppError {
  return collectionErrors.collectionExists({ name })
}

/** Best effort: what this change created goes, what it replaced comes back. */
async function restore (records: StoreCollection, created: WantedIndex[], dropped: IndexDescription[]): Promise<void> {
  for (const index of created) await records.dropIndex(index.name).catch(() => {})
  for (const index of dropped) await records.createIndex(index.key, { name: index.name, unique: index.unique }).catch(() => {})
}

async function duplicateConflict (records: StoreCollection, want: WantedIndex, error: DuplicateKeyError): Promise<AppError> {
  const values = error.keyValue
  const details: ErrorDetails = { fields: Object.keys(values).map((key) => ({ path: key === '_id' ? 'id' : key, message: 'holds a value several records share' })) }
  if (Object.keys(values).length === 0) return collectionErrors.definitionConflict({ why: `unique index on ${want.label}: some records share a value`, details })
  const sharing = await records.countDocuments(values as Filter)
  if (Object.values(values).every((value) => value === null)) {
    return collectionErrors.definitionConflict({ why: `unique index on ${want.label}: ${plural(sharing, 'record has', 'records have')} no value, and records without one share the value null`, details: { ...details, count: sharing } })
  }
  const shown = Object.keys(values).length === 1 ? JSON.stringify(Object.values(values)[0]) : JSON.stringify(values)
  return collectionErrors.definitionConflict({ why: `unique index on ${want.label}: ${plural(sharing, 'record shares', 'records share')} the value ${shown}`, details: { ...details, count: sharing } })
}
