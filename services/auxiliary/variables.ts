import type { Clock } from '../platform/clock.js'
import type { Cursors, SortPlan } from '../collections/query.js'
import type { SecretBox } from '../platform/crypto.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Store, StoreCollection } from '../store/types.js'
import { keysetPage, type Page, type PageRequest } from '../webhooks/paging.js'
import { VARIABLE_LIMITS, type CreateVariableT, type UpdateVariableT, type VariableT } from '../../schemas/auxiliary-variables.js'
import { auxiliaryErrors } from './errors.js'
import { sealedAt, type SealedValues } from '../platform/reseal.js'

export const AUXILIARY_VARIABLES = 'auxiliary_variables'

// A type, not an interface: the Store takes documents with an index signature.
type VariableRecord = {
  _id: string
  projectId: string
  key: string
  secret: boolean
  /** A plain variable's value; null for a secret one. */
  value: string | null
  /** A secret variable's value sealed under the master key `keyId`, bound to the project and the variable's id. */
  sealed: string | null
  keyId: string | null
  version: number
  createdAt: Date
  updatedAt: Date
}

/** One variable handed to hosting, opened. */
export interface OpenedVariable { key: string, value: string, secret: boolean }

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/
/** Set by the platform on every hosted instance: a variable may not shadow them. */
const RESERVED = new Set(['PORT', 'HOST'])
const RESERVED_PREFIX = 'PLINTH_'
const BY_KEY: SortPlan = { keys: [['key', 1], ['_id', 1]], sort: { key: 1, _id: 1 }, spec: 'key,_id' }

const sealedFor = (projectId: string, variableId: string): string => `auxiliary-variable:${projectId}:${variableId}`

/** Secret values sealed under the master key, for the re-seal job. */
export const sealedVariables: SealedValues = {
  collection: AUXILIARY_VARIABLES,
  filter: { secret: true },
  values: (doc) => sealedAt(doc, 'sealed', sealedFor(doc.projectId as string, doc._id as string)),
  keyIdPath: 'keyId'
}

function checkKey (key: string, path: string): string {
  if (!NAME.test(key)) {
    throw auxiliaryErrors.variableKeyInvalid({ message: `"${key.slice(0, 40)}" is not an environment variable name`, path, why: 'must be letters, digits and _, not starting with a digit' })
  }
  if (RESERVED.has(key) || key.startsWith(RESERVED_PREFIX)) throw auxiliaryErrors.variableKeyReserved({ message: `${key} is set by the platform on every hosted instance`, path, why: 'is reserved' })
  return key
}

function checkValue (value: string): string {
  // The schema counts characters; the limit is in bytes, as for an app's secret.
  if (Buffer.byteLength(value) > VARIABLE_LIMITS.valueBytes) {
    throw auxiliaryErrors.variableValueTooLong({ limit: VARIABLE_LIMITS.valueBytes })
  }
  return value
}

function view (record: VariableRecord): VariableT {
  return {
    id: record._id,
    key: record.key,
    secret: record.secret,
    value: record.secret ? null : record.value,
    version: record.version,
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt)
  }
}

/**
 * A project's variables: key/values its hosted apps get as environment
 * variables when they next deploy. A secret one is sealed at rest with the
 * one SecretBox and never shown: answers carry `value: null`, and hosting
 * masks its value in every log line. Each change is told to `changed` (the
 * apps' timelines say a running deployment keeps what it took).
 */
export class Variables {
  private readonly records: StoreCollection<VariableRecord>

  constructor (store: Store, private readonly deps: {
    clock: Clock
    newId: IdGenerator
    box: SecretBox
    cursors: Cursors
    changed: (projectId: string, change: string) => Promise<void>
  }) {
    this.records = store.collection<VariableRecord>(AUXILIARY_VARIABLES)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ projectId: 1, key: 1 }, { unique: true })
  }

  async list (projectId: string, page: PageRequest): Promise<Page<VariableT>> {
    const { docs, nextCursor } = await keysetPage(this.records, { projectId }, BY_KEY, page, this.deps.cursors, 'auxiliary-variables')
    return { items: docs.map(view), nextCursor }
  }

  async get (projectId: string, variableId: string): Promise<VariableT> {
    return view(await this.record(projectId, variableId))
  }

  async create (projectId: string, input: CreateVariableT): Promise<VariableT> {
    const key = checkKey(input.key, 'body.key')
    if (await this.records.countDocuments({ projectId }) >= VARIABLE_LIMITS.perProject) throw auxiliaryErrors.variablesLimit({ limit: VARIABLE_LIMITS.perProject })
    const id = this.deps.newId()
    const now = this.deps.clock.now()
    const record: VariableRecord = { _id: id, projectId, key, ...this.held(projectId, id, checkValue(input.value), input.secret === true), version: 1, createdAt: now, updatedAt: now }
    try {
      await this.records.insertOne(record)
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw auxiliaryErrors.variableExists({ key })
      throw error
    }
    await this.deps.changed(projectId, `Project variable ${key} created`)
    return view(record)
  }

  /**
   * Changes the key, value or secrecy, conditional on the version read (and
   * on `expected`, If-Match's, when given). Made secret, the current value is
   * sealed; made plain, it needs a new value, since the secret one is never
   * shown.
   */
  async update (projectId: string, variableId: string, input: UpdateVariableT, expected?: number): Promise<VariableT> {
    const record = await this.record(projectId, variableId)
    if (expected !== undefined && record.version !== expected) throw auxiliaryErrors.versionMismatch({ expected, actual: record.version })
    const key = input.key === undefined ? record.key : checkKey(input.key, 'body.key')
    const secret = input.secret ?? record.secret
    if (record.secret && !secret && input.value === undefined) throw auxiliaryErrors.variableValueRequired()
    const value = input.value === undefined ? this.opened(record) : checkValue(input.value)
    const changes = { key, ...this.held(projectId, record._id, value, secret), updatedAt: this.deps.clock.now() }
    let updated: VariableRecord | null
    try {
      updated = await this.records.findOneAndUpdate({ _id: record._id, version: record.version }, { $set: changes, $inc: { version: 1 } }, { returnDocument: 'after' })
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw auxiliaryErrors.variableExists({ key })
      throw error
    }
    if (updated === null) {
      const now = await this.record(projectId, variableId)
      throw auxiliaryErrors.versionMismatch({ expected: expected ?? record.version, actual: now.version })
    }
    await this.deps.changed(projectId, key === record.key ? `Project variable ${key} changed` : `Project variable ${record.key} changed and renamed ${key}`)
    return view(updated)
  }

  async delete (projectId: string, variableId: string, expected?: number): Promise<void> {
    const record = await this.record(projectId, variableId)
    if (expected !== undefined && record.version !== expected) throw auxiliaryErrors.versionMismatch({ expected, actual: record.version })
    const { deletedCount } = await this.records.deleteOne({ _id: record._id, version: record.version })
    if (deletedCount === 0) {
      const now = await this.record(projectId, variableId)
      throw auxiliaryErrors.versionMismatch({ expected: expected ?? record.version, actual: now.version })
    }
    await this.deps.changed(projectId, `Project variable ${record.key} deleted`)
  }

  /** Every variable of the project, secret values opened: for hosted apps' environments, never for an answer. */
  async environment (projectId: string): Promise<OpenedVariable[]> {
    const records = await this.records.find({ projectId }, { sort: { key: 1 } }).toArray()
    return records.map((record) => ({ key: record.key, value: this.opened(record), secret: record.secret }))
  }

  async deleteAllForProject (projectId: string): Promise<void> {
    await this.records.deleteMany({ projectId })
  }

  private async record (projectId: string, variableId: string): Promise<VariableRecord> {
    const record = await this.records.findOne({ _id: variableId, projectId })
    if (record === null) throw auxiliaryErrors.variableNotFound()
    return record
  }

  private opened (record: VariableRecord): string {
    return record.secret ? this.deps.box.open(record.sealed as string, sealedFor(record.projectId, record._id)) : record.value as string
  }

  private held (projectId: string, variableId: string, value: string, secret: boolean): Pick<VariableRecord, 'secret' | 'value' | 'sealed' | 'keyId'> {
    if (!secret) return { secret, value, sealed: null, keyId: null }
    return { secret, value: null, sealed: this.deps.box.seal(value, sealedFor(projectId, variableId)), keyId: this.deps.box.keyId }
  }
}
