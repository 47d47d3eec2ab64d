import type { Clock } from '../platform/clock.js'
import type { SecretBox } from '../platform/crypto.js'
import type { IdGenerator } from '../platform/ids.js'
import type { SealedValues } from '../platform/reseal.js'
import type { AddressGuard } from '../outbound/internal-addresses.js'
import { isoString } from '../platform/iso-dates.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { Store, StoreCollection } from '../store/types.js'
import {
  LLM_MAX_CREDENTIALS, type CreateLlmCredentialT, type LlmCheckT, type LlmCredentialT, type LlmLevel, type LlmModelT, type LlmProviderName,
  type UpdateLlmCredentialT
} from '../../schemas/llm.js'
import { llmErrors } from './errors.js'
import { DEFAULT_BASE_URLS, listModels, type ProviderModel, type ProviderTarget } from './providers.js'
import { scopeKey, type LlmScope } from './scope.js'

export const LLM_CREDENTIALS = 'llm_credentials'

type StoredCheck = { ok: boolean, message: string, modelCount: number | null, checkedAt: Date }

// A type, not an interface: the Store takes documents with an index signature.
export type CredentialRecord = {
  _id: string
  scopeKey: string
  level: LlmLevel
  orgId: string
  projectId: string | null
  name: string
  label: string
  provider: LlmProviderName
  /** Null: the provider's own API. */
  baseUrl: string | null
  /** The key sealed under the master key `keyId`, bound to this credential's id; null without a key. */
  sealedKey: string | null
  keyId: string | null
  keyHint: string | null
  lastCheck: StoredCheck | null
  /** The provider's model list as of `modelsFetchedAt` (the last successful check). */
  models: ProviderModel[]
  modelsFetchedAt: Date | null
  createdAt: Date
  updatedAt: Date
}

/** A key as it may be shown: a short prefix such as `sk-` and the last four characters, only for keys long enough to keep most hidden. */
export function keyHint (key: string): string {
  const prefix = /^[A-Za-z]{2,4}-/.exec(key)?.[0] ?? ''
  return key.length >= 16 ? `${prefix}…${key.slice(-4)}` : `${prefix}…`
}

const sealedFor = (credentialId: string): string => `llm-credential:${credentialId}`

/** The keys sealed under the master key, for the re-seal job. */
export const sealedLlmKeys: SealedValues = {
  collection: LLM_CREDENTIALS,
  filter: { sealedKey: { $ne: null } },
  values: (doc) => [{ path: 'sealedKey', sealed: doc.sealedKey as string, associatedData: sealedFor(doc._id as string) }],
  keyIdPath: 'keyId'
}

export function baseUrlOf (record: Pick<CredentialRecord, 'provider' | 'baseUrl'>): string {
  return record.baseUrl ?? DEFAULT_BASE_URLS[record.provider as Exclude<LlmProviderName, 'openai-compatible'>]
}

function checkView (check: StoredCheck): LlmCheckT {
  return { ok: check.ok, message: check.message, modelCount: check.modelCount, checkedAt: isoString(check.checkedAt) }
}

export function credentialView (record: CredentialRecord): LlmCredentialT {
  return {
    id: record._id,
    level: record.level,
    name: record.name,
    label: record.label,
    provider: record.provider,
    baseUrl: baseUrlOf(record),
    keyHint: record.keyHint,
    lastCheck: record.lastCheck === null ? null : checkView(record.lastCheck),
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt)
  }
}

/** The models of a credential as the contract shows them; `allowed` says whether the level's allowed models let each be used. */
export function modelViews (record: CredentialRecord, allowed: (ref: string) => boolean): LlmModelT[] {
  const fetchedAt = isoString(record.modelsFetchedAt ?? record.updatedAt)
  return record.models.map((model) => {
    const id = `${record.name}:${model.model}`
    return { id, credentialId: record._id, credentialName: record.name, level: record.level, provider: record.provider, ...model, allowed: allowed(id), fetchedAt }
  })
}

/**
 * LLM credentials of organizations and projects: provider, base URL and key,
 * the key sealed at rest under the master key (with that key's id, so a
 * rotation re-seals them, `sealedLlmKeys`) and shown only masked. A check asks the
 * provider for its models through the one outbound path and keeps the list.
 */
export class LlmCredentials {
  private readonly records: StoreCollection<CredentialRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, secrets: SecretBox, guard: AddressGuard, timeoutMs: number }) {
    this.records = store.collection<CredentialRecord>(LLM_CREDENTIALS)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ scopeKey: 1, name: 1 }, { unique: true })
    await this.records.createIndex({ orgId: 1 })
    await this.records.createIndex({ keyId: 1 })
  }

  async list (scope: LlmScope): Promise<LlmCredentialT[]> {
    return (await this.recordsIn(scope)).map(credentialView)
  }

  /** The stored credentials of one level, by name: for resolution and the model lists. */
  async recordsIn (scope: LlmScope): Promise<CredentialRecord[]> {
    return await this.records.find({ scopeKey: scopeKey(scope) }, { sort: { name: 1 } }).toArray() as CredentialRecord[]
  }

  async get (scope: LlmScope, credentialId: string): Promise<LlmCredentialT> {
    return credentialView(await this.record(scope, credentialId))
  }

  async record (scope: LlmScope, credentialId: string): Promise<CredentialRecord> {
    const record = await this.records.findOne({ _id: credentialId, scopeKey: scopeKey(scope) }) as CredentialRecord | null
    if (record === null) throw llmErrors.credentialNotFound()
    return record
  }

  /** A credential wherever it is held, or null: for the ledger's prices. */
  async byId (credentialId: string): Promise<CredentialRecord | null> {
    return await this.records.findOne({ _id: credentialId }) as CredentialRecord | null
  }

  async create (scope: LlmScope, input: CreateLlmCredentialT): Promise<LlmCredentialT> {
    const baseUrl = await this.checkedBaseUrl(input.provider, input.baseUrl ?? null)
    const apiKey = input.apiKey ?? null
    if (apiKey === null && input.provider !== 'openai-compatible') {
      throw llmErrors.credentialInvalid({ problem: `A ${input.provider} credential needs an apiKey`, path: 'body.apiKey', issue: 'is required for this provider' })
    }
    if (await this.records.countDocuments({ scopeKey: scopeKey(scope) }) >= LLM_MAX_CREDENTIALS) throw llmErrors.credentialLimit({ limit: LLM_MAX_CREDENTIALS })
    const id = this.deps.newId()
    const now = this.deps.clock.now()
    const record: CredentialRecord = {
      _id: id,
      scopeKey: scopeKey(scope),
      level: scope.level,
      orgId: scope.orgId,
      projectId: scope.projectId,
      name: input.name,
      label: input.label ?? input.name,
      provider: input.provider,
      baseUrl,
      ...this.sealed(id, apiKey),
      lastCheck: null,
      models: [],
      modelsFetchedAt: null,
      createdAt: now,
      updatedAt: now
    }
    try {
      await this.records.insertOne(record)
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw llmErrors.credentialExists({ name: input.name })
      throw error
    }
    return credentialView(record)
  }

  /** A new label keeps the check; a new key or base URL forgets it and the model list, which were of the old ones. */
  async update (scope: LlmScope, credentialId: string, input: UpdateLlmCredentialT): Promise<LlmCredentialT> {
    const record = await this.record(scope, credentialId)
    const changes: Partial<CredentialRecord> = {}
    if (input.label !== undefined) changes.label = input.label
    if (input.baseUrl !== undefined) changes.baseUrl = await this.checkedBaseUrl(record.provider, input.baseUrl)
    if (input.apiKey !== undefined) {
      if (input.apiKey === null && record.provider !== 'openai-compatible') {
        throw llmErrors.credentialInvalid({ problem: `A ${record.provider} credential needs an apiKey`, path: 'body.apiKey', issue: 'is required for this provider' })
      }
      Object.assign(changes, this.sealed(record._id, input.apiKey))
    }
    if (input.apiKey !== undefined || (input.baseUrl !== undefined && changes.baseUrl !== record.baseUrl)) {
      Object.assign(changes, { lastCheck: null, models: [], modelsFetchedAt: null })
    }
    changes.updatedAt = this.deps.clock.now()
    await this.records.updateOne({ _id: record._id }, { $set: changes })
    return credentialView({ ...record, ...changes })
  }

  async delete (scope: LlmScope, credentialId: string): Promise<void> {
    const record = await this.record(scope, credentialId)
    await this.records.deleteOne({ _id: record._id })
  }

  /** Asks the provider for its models with this credential; keeps the answer as the last check, and the list when it came. */
  async check (scope: LlmScope, credentialId: string): Promise<LlmCheckT> {
    return await this.checkRecord(await this.record(scope, credentialId))
  }

  /** Checks every credential of a level (or the one named), refreshing their model lists. */
  async refresh (scope: LlmScope, credentialId?: string): Promise<void> {
    const records = credentialId === undefined ? await this.recordsIn(scope) : [await this.record(scope, credentialId)]
    for (const record of records) await this.checkRecord(record)
  }

  /** Where and how to call the provider of a stored credential, its key opened: for the provider calls, never for an answer. */
  target (record: CredentialRecord): ProviderTarget {
    return { provider: record.provider, baseUrl: baseUrlOf(record), apiKey: record.sealedKey === null ? null : this.deps.secrets.open(record.sealedKey, sealedFor(record._id)) }
  }

  async deleteAllForProject (projectId: string): Promise<void> {
    await this.records.deleteMany({ scopeKey: `project:${projectId}` })
  }

  async deleteAllForOrganization (orgId: string): Promise<void> {
    await this.records.deleteMany({ orgId })
  }

  private sealed (credentialId: string, apiKey: string | null): Pick<CredentialRecord, 'sealedKey' | 'keyId' | 'keyHint'> {
    if (apiKey === null) return { sealedKey: null, keyId: null, keyHint: null }
    return { sealedKey: this.deps.secrets.seal(apiKey, sealedFor(credentialId)), keyId: this.deps.secrets.keyId, keyHint: keyHint(apiKey) }
  }

  private async checkRecord (record: CredentialRecord): Promise<LlmCheckT> {
    const listing = await listModels(this.deps.guard, this.target(record), this.deps.timeoutMs)
    const checkedAt = this.deps.clock.now()
    const check: StoredCheck = listing.ok
      ? { ok: true, message: `${listing.models.length} model${listing.models.length === 1 ? '' : 's'} listed`, modelCount: listing.models.length, checkedAt }
      : { ok: false, message: listing.message, modelCount: null, checkedAt }
    const set = listing.ok ? { lastCheck: check, models: listing.models, modelsFetchedAt: checkedAt } : { lastCheck: check }
    // Conditional on the version checked: a key or base URL changed meanwhile keeps its own (absent) check.
    await this.records.updateOne({ _id: record._id, updatedAt: record.updatedAt }, { $set: set })
    return checkView(check)
  }

  /** A base URL as stored: null for the provider's own API, else an http(s) URL without credentials whose host the guard lets through. */
  private async checkedBaseUrl (provider: LlmProviderName, raw: string | null): Promise<string | null> {
    if (raw === null) {
      if (provider === 'openai-compatible') throw llmErrors.credentialInvalid({ problem: 'An openai-compatible credential needs a baseUrl', path: 'body.baseUrl', issue: 'is required for this provider' })
      return null
    }
    let url: URL
    try {
      url = new URL(raw.trim())
    } catch {
      throw llmErrors.credentialInvalid({ problem: 'The baseUrl is not a URL', path: 'body.baseUrl', issue: 'is not a URL' })
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw llmErrors.credentialInvalid({ problem: 'The baseUrl must be an http or https URL', path: 'body.baseUrl', issue: 'is not http(s)' })
    if (url.username !== '' || url.password !== '') throw llmErrors.credentialInvalid({ problem: 'The baseUrl must not hold credentials: give the key as apiKey', path: 'body.baseUrl', issue: 'holds credentials' })
    if (url.search !== '' || url.hash !== '') throw llmErrors.credentialInvalid({ problem: 'The baseUrl must not have a query or fragment', path: 'body.baseUrl', issue: 'has a query or fragment' })
    const verdict = await this.deps.guard.check(url)
    // A host that does not resolve yet is stored: the check says so when it is called.
    if (!verdict.ok && !verdict.unresolved) throw llmErrors.baseUrlForbidden({ kind: verdict.kind })
    return url.href.replace(/\/+$/, '')
  }
}
