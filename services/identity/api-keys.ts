import { identityErrors } from './errors.js'
import { orgErrors } from '../orgs/errors.js'
import { issueToken, tokenView, usableToken, type StoredToken } from './pat-format.js'
import type { Clock } from '../platform/clock.js'
import { isPermission } from '../orgs/catalogue.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Store, StoreCollection, WithId } from '../store/types.js'
import type { ApiKeyT } from '../../schemas/auth.ts'

/**
 * The Store key (`_id`) is the token's SHA-256, so authenticating a request is
 * one primary-key read; `keyId` is the public handle listings and revocation use.
 */
type ApiKeyRecord = StoredToken & {
  keyId: string
  userId: string
  scopes: string[]
}

export type ApiKey = ApiKeyT

/** Who a PAT authenticates, once it passed every check. */
export interface PatIdentity { userId: string, keyId: string, scopes: string[] }

const MAX_KEYS_PER_USER = 100

function toApiKey (record: WithId<ApiKeyRecord>): ApiKey {
  return { id: record.keyId, ...tokenView(record), scopes: record.scopes }
}

const KEYS_COLLECTION = 'platform_api_keys'

export class ApiKeys {
  private readonly keys: StoreCollection<ApiKeyRecord>

  constructor (private readonly store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, prefix: string }) {
    this.keys = store.collection<ApiKeyRecord>(KEYS_COLLECTION)
  }

  async init (): Promise<void> {
    await this.keys.createIndex({ keyId: 1 }, { unique: true })
    await this.keys.createIndex({ userId: 1 })
  }

  /** The token is returned here once and never again: only its hash is stored. */
  async create (userId: string, input: { name: string, expiresAt?: string, scopes?: string[] }): Promise<ApiKey & { token: string }> {
    const { token, stored } = issueToken(this.deps.prefix, input, this.deps.clock.now())
    const unknown = (input.scopes ?? []).filter((scope) => !isPermission(scope))
    if (unknown.length > 0) throw orgErrors.unknownPermission({ names: unknown, path: 'body.scopes' })
    const active = await this.keys.countDocuments({ userId, revokedAt: null })
    if (active >= MAX_KEYS_PER_USER) throw identityErrors.tooManyApiKeys({ limit: MAX_KEYS_PER_USER })
    const record = { ...stored, keyId: this.deps.newId(), userId, scopes: [...new Set(input.scopes ?? [])].sort() }
    await this.keys.insertOne(record)
    return { ...toApiKey(record), token }
  }

  async list (userId: string): Promise<ApiKey[]> {
    const records = await this.keys.find({ userId, revokedAt: null }, { sort: { keyId: 1 } }).toArray()
    return records.map(toApiKey)
  }

  async revoke (userId: string, keyId: string): Promise<void> {
    const result = await this.keys.updateOne({ keyId, userId, revokedAt: null }, { $set: { revokedAt: this.deps.clock.now() } })
    if (result.matchedCount === 0) throw identityErrors.apiKeyNotFound()
  }

  /** Every key of a user, at once (an account taken over by its verified owner keeps none of the squatter's). */
  async revokeAll (userId: string): Promise<void> {
    await this.keys.updateMany({ userId, revokedAt: null }, { $set: { revokedAt: this.deps.clock.now() } })
  }

  /** Null for a malformed, unknown, revoked or expired token. */
  async authenticate (token: string): Promise<PatIdentity | null> {
    const record = await usableToken<ApiKeyRecord>(this.store, KEYS_COLLECTION, token, this.deps.prefix, this.deps.clock)
    return record === null ? null : { userId: record.userId, keyId: record.keyId, scopes: record.scopes }
  }
}
