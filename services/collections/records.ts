import { AppError, commonErrors, fieldIssue } from '../platform/errors.js'
import { collectionErrors } from './errors.js'
import { DuplicateKeyError, storeErrors } from '../store/errors.js'
import { identityErrors } from '../identity/errors.js'
import { compileFilter } from '../store/semantics/match.js'
import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Document, SharedReads, Store, StoreCollection, WithId } from '../store/types.js'
import { PROJECT_USERS_TABLE, projectCollectionName } from '../projects/naming.js'
import type { CollectionMethod, FieldDefinitionT, IndexDefinitionT, MethodSettingT, SignUpFieldsT } from '../../schemas/collections.js'
import { allowFileDelete, enforceCheck, NO_FIELDS, readDeny, resolveAccess, restrict, signUpAccess, type Access, type DataCaller } from './access.js'
import { actorOf, RecordListeners, type RecordActor, type RecordChange, type RecordChangeFeed, type RecordsRemoved, type RecordsUpdated } from './record-changes.js'
import { fieldMap, recordValues, relationTargets, sharedApiRecord, SYSTEM_FIELDS, toApiRecord, undeclaredFields, type ApiRecord, type FieldMap } from './record-fields.js'
import { checkSortVisible, cursorScope, indexedLeads, parseSort, QUERY_LIMITS, servedByIndex, type Cursors } from './query.js'
import { readPage } from './record-pages.js'
import { matchesEverything, parseFilter } from './filters.js'
import { collectionKey, type WriteGate } from './write-gate.js'
import { signUpFieldsOf } from './definitions.js'

/** The slice of a collection definition the data API needs. */
export interface DataCollection {
  name: string
  fields: FieldDefinitionT[]
  indexes: IndexDefinitionT[]
  methods: Record<CollectionMethod, MethodSettingT>
  /** `_users` only: `open` keeps profile fields sign-up is sent that the definition does not declare. */
  signUpFields?: SignUpFieldsT
}

export interface ListParams {
  filter?: unknown
  sort?: string
  limit?: number
  offset?: number
  cursor?: string
  fields?: string
  count?: boolean
}

/** Items may be shared, frozen instances (see sharedApiRecord): read them, never change them. */
export interface ListPage { items: ApiRecord[], nextCursor: string | null, total?: number }

export interface BulkParams { filter: unknown, dryRun?: boolean, maxAffected?: number }

// One request never rewrites or deletes more than this many records; larger jobs page through with filters.
export const BULK_MAX = QUERY_LIMITS.maxAffected
const WRITE_ATTEMPTS = 3

interface Scope { collection: DataCollection, fields: FieldMap, records: StoreCollection<Document>, access: Access }

/** Records written before versions existed (or holding something else there) count as version 0. */
function versionOf (record: Document): number {
  return typeof record.version === 'number' ? record.version : 0
}

function duplicate (error: unknown): unknown {
  if (!(error instanceof DuplicateKeyError)) return error
  const fields = Object.keys(error.keyValue).map((key) => key === '_id' ? 'id' : key)
  return collectionErrors.duplicateValue({ fields })
}

/**
 * One record by id, if the rule lets the caller see it. Read by primary key
 * and matched against the rule in memory: the same answer as querying with
 * the rule ANDed in, without planning a query on every call.
 */
async function findVisible (records: StoreCollection<Document>, id: string, access: Access): Promise<WithId<Document> | null> {
  const doc = await records.findOne({ _id: id })
  if (doc === null || access.filter === null) return doc
  return compileFilter(access.filter)(doc) ? doc : null
}

/**
 * The per-project data API over the Store: every call resolves the method's
 * rule first, and reads, updates and deletes only ever see records inside it.
 */
export class Records {
  private readonly listeners = new RecordListeners()

  constructor (private readonly store: Store, private readonly deps: {
    clock: Clock
    newId: IdGenerator
    cursors: Cursors
    findCollection: (projectId: string, name: string) => Promise<DataCollection | null>
    /** Orders record writes against definition changes of the same collection. */
    writes: WriteGate
  }) {}

  onRemove (hook: RecordsRemoved): void {
    this.listeners.onRemove(hook)
  }

  onUpdate (hook: RecordsUpdated): void {
    this.listeners.onUpdate(hook)
  }

  /** Set once, by the family that follows record writes (the auxiliary area's record webhooks). */
  useChangeFeed (feed: RecordChangeFeed): void {
    this.listeners.useChangeFeed(feed)
  }

  async list (projectId: string, table: string, caller: DataCaller, params: ListParams): Promise<ListPage> {
    const { collection, fields, records, access } = await this.scope(projectId, table, 'list', caller)
    // What the rule hides may not be filtered, sorted or selected on: each would tell its values.
    const asked = parseFilter(params.filter ?? {}, fields, access.deny)
    const filter = restrict(asked, access)
    const order = parseSort(params.sort, fields)
    checkSortVisible(order, access.deny)
    const only = this.selection(params.fields, fields, access.deny)
    const limit = params.limit ?? QUERY_LIMITS.defaultLimit
    if (params.cursor !== undefined && params.offset !== undefined) throw storeErrors.invalidQuery({ path: 'query.offset', why: 'Give either cursor or offset, not both' })
    const scope = cursorScope(projectId, table, asked, order)
    const after = params.cursor === undefined ? null : this.deps.cursors.decode(params.cursor, order, scope)
    const scanned = Object.keys(asked).length > 0 && !servedByIndex(filter, indexedLeads(collection.fields, collection.indexes))
    const { docs, last } = await readPage(this.shared(projectId, table), { filter, access, order, after, offset: params.offset ?? 0, limit: limit + 1, scanned })
    const page = docs.slice(0, limit)
    let next: Document | null = docs.length > limit ? page[page.length - 1] : null
    if (next === null && last !== null) {
      // An offset cannot say where to go on past the examined records; a cursor can.
      if (params.offset !== undefined) throw collectionErrors.scanLimit({ limit: QUERY_LIMITS.maxExamined })
      next = last
    }
    return {
      items: page.map((doc) => sharedApiRecord(doc, access.deny, only)),
      nextCursor: next === null ? null : this.deps.cursors.encode(next, scope),
      ...(params.count === true ? { total: await records.countDocuments(filter) } : {})
    }
  }

  /** Reads of the collection whose documents may come back as the one shared, frozen instance (see StoreExtensions). */
  private shared (projectId: string, table: string): SharedReads<Document> {
    return this.store.extensions.shared(projectCollectionName(projectId, table))
  }

  async get (projectId: string, table: string, caller: DataCaller, id: string, selection?: string): Promise<ApiRecord> {
    const { fields, records, access } = await this.scope(projectId, table, 'get', caller)
    const doc = await findVisible(records, id, access)
    if (doc === null) throw collectionErrors.recordNotFound()
    return toApiRecord(doc, access.deny, this.selection(selection, fields, access.deny))
  }

  async create (projectId: string, table: string, caller: DataCaller, body: Document): Promise<ApiRecord> {
    return await this.deps.writes.write(collectionKey(projectId, table), async () => {
      const scope = await this.scope(projectId, table, 'create', caller)
      const { fields, access } = scope
      const values = recordValues(fields, body, 'create', access.readonly)
      if (access.owner !== null && access.userId !== null && values[access.owner] === undefined) values[access.owner] = access.userId
      return toApiRecord(await this.insert(projectId, scope, values, actorOf(caller)), access.deny)
    })
  }

  /**
   * Sign-up's record in `_users`: the new user's own fields (`profile`) meet
   * the definition exactly as a data-API create does — types, required,
   * unique, select values, relations; file fields refused — and the fields
   * the `create` and `update` rules make read-only are refused too, since
   * the user would be choosing them for themselves. Fields the definition
   * does not declare are kept as sent while `signUpFields` is `open` (rules
   * name declared fields only, so none of them is one a rule protects), and
   * refused when it is `strict`. `account` (email, password hash) is the
   * server's, set beside them.
   */
  async createUser (projectId: string, account: Document, profile: Document): Promise<WithId<Document>> {
    return await this.deps.writes.write(collectionKey(projectId, PROJECT_USERS_TABLE), async () => {
      const collection = await this.deps.findCollection(projectId, PROJECT_USERS_TABLE)
      if (collection === null) throw collectionErrors.collectionNotFound({ why: `${PROJECT_USERS_TABLE} is not defined; switch project auth on` })
      const id = this.deps.newId()
      const access = signUpAccess(collection.methods, id, this.deps.clock)
      const fields = fieldMap(collection.fields)
      const { declared, undeclared } = signUpFieldsOf(collection) === 'open' ? undeclaredFields(fields, profile) : { declared: profile, undeclared: {} }
      // The server's own fields meet the definition too (an email field's pattern), though no rule makes them read-only.
      const values: Document = { ...undeclared, ...recordValues(fields, declared, 'create', access.readonly, new Set(Object.keys(account))), ...account, ...recordValues(fields, { email: account.email }, 'update', NO_FIELDS), _id: id }
      if (access.owner !== null && values[access.owner] === undefined) values[access.owner] = id
      const scope: Scope = { collection, fields, records: this.store.collection(projectCollectionName(projectId, PROJECT_USERS_TABLE)), access }
      try {
        return await this.insert(projectId, scope, values, { type: 'user', id })
      } catch (error) {
        if (collectionErrors.duplicateValue.is(error) && error.details?.fields?.some((issue) => issue.path === 'email') === true) {
          throw identityErrors.emailTaken()
        }
        throw error
      }
    })
  }

  /** Relations checked, the rule's check enforced, then stored with its timestamps and first version. */
  private async insert (projectId: string, scope: Scope, values: Document, actor: RecordActor): Promise<WithId<Document>> {
    await this.checkRelations(projectId, scope, values)
    const now = this.deps.clock.now()
    const doc: WithId<Document> = { ...values, _id: typeof values._id === 'string' ? values._id : this.deps.newId(), createdAt: now, updatedAt: now, version: 1 }
    enforceCheck(scope.access, doc)
    const change = (): RecordChange[] => [{ collection: scope.collection.name, type: 'record.created', record: doc, before: null, actor, at: now }]
    return await this.listeners.logged(projectId, change, async (batch) => {
      try {
        await scope.records.insertOne(doc)
      } catch (error) {
        throw duplicate(error)
      }
      await batch?.done()
      return doc
    })
  }

  /** Changes the fields given. With `ifMatch`, only if the record is still at that version. */
  async update (projectId: string, table: string, caller: DataCaller, id: string, body: Document, ifMatch?: number): Promise<ApiRecord> {
    return await this.deps.writes.write(collectionKey(projectId, table), async () => {
      const scope = await this.scope(projectId, table, 'update', caller)
      const { fields, records, access } = scope
      const values = recordValues(fields, body, 'update', access.readonly)
      const fileDelete = this.fileDeleteAccess(scope, caller, values)
      await this.checkRelations(projectId, scope, values)
      for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
        const current = await findVisible(records, id, access)
        if (current === null) throw collectionErrors.recordNotFound()
        const version = versionOf(current)
        if (ifMatch !== undefined && version !== ifMatch) throw collectionErrors.versionMismatch({ expected: ifMatch, actual: version })
        const changes = { ...values, updatedAt: this.deps.clock.now(), version: version + 1 }
        const next = { ...current, ...changes }
        enforceCheck(access, next)
        if (fileDelete !== null) allowFileDelete(fileDelete, current, next)
        const change = (): RecordChange[] => [{ collection: scope.collection.name, type: 'record.updated', record: next, before: current, actor: actorOf(caller), at: changes.updatedAt }]
        const written = await this.listeners.logged(projectId, change, async (batch) => {
          try {
            // Matched on the stored value itself (null also matches a record that has none), so only a concurrent write misses.
            const result = await records.updateOne({ _id: id, version: current.version ?? null }, { $set: changes })
            await (result.matchedCount === 1 ? batch?.done() : batch?.failed())
            return result.matchedCount === 1
          } catch (error) {
            throw duplicate(error)
          }
        })
        if (written) {
          await this.listeners.updated(projectId, scope.collection, [id], values, [current])
          return toApiRecord(next, access.deny)
        }
        // Someone else wrote the record meanwhile; without If-Match, re-apply the change to the new version.
      }
      throw collectionErrors.writeConflict()
    })
  }

  async delete (projectId: string, table: string, caller: DataCaller, id: string, ifMatch?: number): Promise<void> {
    return await this.deps.writes.write(collectionKey(projectId, table), async () => {
      const { collection, records, access } = await this.scope(projectId, table, 'delete', caller)
      const current = await findVisible(records, id, access)
      if (current === null) throw collectionErrors.recordNotFound()
      const version = versionOf(current)
      if (ifMatch !== undefined && version !== ifMatch) throw collectionErrors.versionMismatch({ expected: ifMatch, actual: version })
      await this.deleteRecord(projectId, collection, records, current, actorOf(caller), ifMatch !== undefined)
    })
  }

  /**
   * An end user deleted by a project admin holding `project.users.manage`,
   * whatever the `_users` delete rule says (the permission decides, as for
   * the token mint), the way a data-API delete goes: the change feed, the
   * user's files and sessions follow. False when there is no such user.
   */
  async deleteUser (projectId: string, userId: string, adminId: string): Promise<boolean> {
    return await this.deps.writes.write(collectionKey(projectId, PROJECT_USERS_TABLE), async () => {
      const collection = await this.deps.findCollection(projectId, PROJECT_USERS_TABLE)
      const records = this.store.collection(projectCollectionName(projectId, PROJECT_USERS_TABLE))
      const current = collection === null ? null : await records.findOne({ _id: userId })
      if (collection === null || current === null) return false
      await this.deleteRecord(projectId, collection, records, current, { type: 'admin', id: adminId }, false)
      return true
    })
  }

  /**
   * An end user disabled or enabled by a project admin, written as a data-API
   * update is (the version moves, so an If-Match made before fails), through
   * the change feed, so webhooks and realtime see it. False when no such user.
   */
  async setUserDisabled (projectId: string, userId: string, disabled: boolean, adminId: string): Promise<boolean> {
    return await this.deps.writes.write(collectionKey(projectId, PROJECT_USERS_TABLE), async () => {
      const collection = await this.deps.findCollection(projectId, PROJECT_USERS_TABLE)
      const records = this.store.collection(projectCollectionName(projectId, PROJECT_USERS_TABLE))
      const current = collection === null ? null : await records.findOne({ _id: userId })
      if (collection === null || current === null) return false
      const at = this.deps.clock.now()
      const after = { ...current, disabled, updatedAt: at, version: versionOf(current) + 1 }
      const change = (): RecordChange[] => [{ collection: collection.name, type: 'record.updated', record: after, before: current, actor: { type: 'admin', id: adminId }, at }]
      return await this.listeners.logged(projectId, change, async (batch) => {
        const result = await records.updateOne({ _id: userId }, { $set: { disabled, updatedAt: at }, $inc: { version: 1 } })
        await batch?.done()
        return result.matchedCount === 1
      })
    })
  }

  private async deleteRecord (projectId: string, collection: DataCollection, records: StoreCollection<Document>, current: WithId<Document>, actor: RecordActor, atVersion: boolean): Promise<void> {
    const change = (): RecordChange[] => [{ collection: collection.name, type: 'record.deleted', record: current, before: null, actor, at: this.deps.clock.now() }]
    await this.listeners.logged(projectId, change, async (batch) => {
      const result = await records.deleteOne({ _id: current._id, ...(atVersion ? { version: current.version ?? null } : {}) })
      if (result.deletedCount === 0) throw collectionErrors.versionMismatch()
      await batch?.done()
    })
    // Only once the record is gone: a refused delete must keep its files.
    await this.listeners.removed(projectId, collection, [current])
  }

  async bulkUpdate (projectId: string, table: string, caller: DataCaller, params: BulkParams & { set: Document }): Promise<{ matched: number, modified: number, dryRun: boolean }> {
    return await this.deps.writes.write(collectionKey(projectId, table), async () => {
      const scope = await this.scope(projectId, table, 'update', caller)
      const { fields, records, access } = scope
      const values = recordValues(fields, params.set, 'update', access.readonly)
      if (Object.keys(values).length === 0) throw collectionErrors.emptyUpdate()
      const fileDelete = this.fileDeleteAccess(scope, caller, values)
      await this.checkRelations(projectId, scope, values)
      const targets = await this.targets(scope, params)
      if (fileDelete !== null) for (const doc of targets) allowFileDelete(fileDelete, doc, { ...doc, ...values })
      if (params.dryRun === true) return { matched: targets.length, modified: 0, dryRun: true }
      const changes = { ...values, updatedAt: this.deps.clock.now() }
      for (const doc of targets) enforceCheck(access, { ...doc, ...changes })
      const ids = targets.map((doc) => doc._id)
      const logged = (): RecordChange[] => targets.map((doc) => ({
        collection: scope.collection.name, type: 'record.updated', record: { ...doc, ...changes, version: versionOf(doc) + 1 }, before: doc, actor: actorOf(caller), at: changes.updatedAt
      }))
      const result = await this.listeners.logged(projectId, logged, async (batch) => {
        try {
          const result = await records.updateMany(restrict({ _id: { $in: ids } }, access), { $set: changes, $inc: { version: 1 } })
          // A record deleted meanwhile was not updated: its entry goes unpublished.
          const happened = batch === null || result.modifiedCount === ids.length
            ? undefined
            : new Set((await records.find({ _id: { $in: ids } }, { projection: { _id: 1 } }).toArray()).map((doc) => doc._id))
          await batch?.done(happened)
          return result
        } catch (error) {
          throw duplicate(error)
        }
      })
      await this.listeners.updated(projectId, scope.collection, ids, values, targets)
      return { matched: targets.length, modified: result.modifiedCount, dryRun: false }
    })
  }

  async bulkDelete (projectId: string, table: string, caller: DataCaller, params: BulkParams): Promise<{ matched: number, deleted: number, dryRun: boolean }> {
    return await this.deps.writes.write(collectionKey(projectId, table), async () => {
      const scope = await this.scope(projectId, table, 'delete', caller)
      const targets = await this.targets(scope, params)
      if (params.dryRun === true) return { matched: targets.length, deleted: 0, dryRun: true }
      const ids = targets.map((doc) => doc._id)
      const logged = (): RecordChange[] => targets.map((doc) => ({ collection: scope.collection.name, type: 'record.deleted', record: doc, before: null, actor: actorOf(caller), at: this.deps.clock.now() }))
      const { result, gone } = await this.listeners.logged(projectId, logged, async (batch) => {
        const result = await scope.records.deleteMany(restrict({ _id: { $in: ids } }, scope.access))
        const survivors = new Set((await scope.records.find({ _id: { $in: ids } }, { projection: { _id: 1 } }).toArray()).map((doc) => doc._id))
        const gone = targets.filter((doc) => !survivors.has(doc._id))
        await batch?.done(new Set(gone.map((doc) => doc._id)))
        return { result, gone }
      })
      await this.listeners.removed(projectId, scope.collection, gone)
      return { matched: targets.length, deleted: result.deletedCount, dryRun: false }
    })
  }

  /** The records a bulk call would touch; refused without a filter or beyond its guard, before anything changes. */
  private async targets (scope: Scope, params: BulkParams): Promise<Array<WithId<Document>>> {
    const filter = parseFilter(params.filter ?? {}, scope.fields, scope.access.deny)
    if (matchesEverything(filter)) throw collectionErrors.filterRequired()
    const guard = Math.min(params.maxAffected ?? BULK_MAX, BULK_MAX)
    const docs = await scope.records.find(restrict(filter, scope.access), { sort: { _id: 1 }, limit: guard + 1 }).toArray()
    if (docs.length > guard) {
      throw collectionErrors.tooManyAffected({ limit: guard })
    }
    return docs
  }

  private async scope (projectId: string, table: string, method: CollectionMethod, caller: DataCaller): Promise<Scope> {
    const collection = await this.deps.findCollection(projectId, table)
    if (collection === null) throw collectionErrors.collectionNotFound()
    const access = resolveAccess(method, collection.methods[method], caller, this.deps.clock, readDeny(collection.methods))
    return { collection, fields: fieldMap(collection.fields), records: this.store.collection(projectCollectionName(projectId, table)), access }
  }

  /**
   * Setting a file field through a record write (null, or [] on a multiple
   * one: nothing else passes recordValues) lets go of its files, so it is a
   * file delete: the fileDelete rule must allow it as well as the update
   * rule. Asked whenever a file field is named, held files or not, so the
   * answer tells nothing about a field the caller cannot read.
   */
  private fileDeleteAccess (scope: Scope, caller: DataCaller, values: Document): Access | null {
    const cleared = Object.keys(values).filter((name) => scope.fields.get(name)?.type === 'file')
    if (cleared.length === 0) return null
    const { methods } = scope.collection
    try {
      return resolveAccess('fileDelete', methods.fileDelete, caller, this.deps.clock, readDeny(methods))
    } catch (error) {
      if (!(error instanceof AppError) || error.status === 401) throw error
      const [field] = cleared
      throw commonErrors.forbidden({ why: `${field}: clearing a file field deletes its files, which needs the fileDelete method: ${error.message}`, details: fieldIssue(field, 'clearing it deletes its files, which the fileDelete method refuses') })
    }
  }

  private selection (raw: string | undefined, fields: FieldMap, hidden: ReadonlySet<string>): ReadonlySet<string> | null {
    if (raw === undefined) return null
    const names = raw.split(',').map((name) => name.trim()).filter((name) => name !== '')
    for (const name of names) {
      if (!fields.has(name) && !SYSTEM_FIELDS.has(name)) throw collectionErrors.invalidFields({ field: name, issue: 'is not a field of this collection' })
      if (hidden.has(name)) throw collectionErrors.invalidFields({ field: name, issue: 'is hidden from this method\'s callers' })
    }
    return new Set(names)
  }

  private async checkRelations (projectId: string, scope: Scope, values: Document): Promise<void> {
    for (const [target, ids] of relationTargets(scope.fields, values, scope.collection.name)) {
      const found = await this.store.collection(projectCollectionName(projectId, target)).countDocuments({ _id: { $in: [...ids] } })
      if (found !== ids.size) throw collectionErrors.invalidRelation({ target })
    }
  }
}
