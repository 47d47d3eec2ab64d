import { projectErrors } from './errors.js'
import { issueToken, tokenView, usableToken, type StoredToken } from '../identity/pat-format.js'
import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Store, StoreCollection, WithId } from '../store/types.js'
import type { ServiceTokenT } from '../../schemas/projects.ts'

/**
 * A project's server credentials. As with PATs, the Store key (`_id`) is the
 * token's SHA-256, so authenticating is one primary-key read, and `tokenId`
 * is the public handle listings and revocation use.
 */
type ServiceTokenRecord = StoredToken & {
  tokenId: string
  projectId: string
  createdBy: string
}

export type ServiceToken = ServiceTokenT

/** Which project a service token speaks for, once it passed every check. */
export interface ServiceTokenIdentity { projectId: string, tokenId: string }

export const MAX_SERVICE_TOKENS_PER_PROJECT = 50

function toServiceToken (record: WithId<ServiceTokenRecord>): ServiceToken {
  return { id: record.tokenId, ...tokenView(record), createdBy: record.createdBy }
}

const TOKENS_COLLECTION = 'project_service_tokens'

export class ServiceTokens {
  private readonly tokens: StoreCollection<ServiceTokenRecord>

  constructor (private readonly store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, prefix: string }) {
    this.tokens = store.collection<ServiceTokenRecord>(TOKENS_COLLECTION)
  }

  async init (): Promise<void> {
    await this.tokens.createIndex({ tokenId: 1 }, { unique: true })
    await this.tokens.createIndex({ projectId: 1 })
  }

  /** The token is returned here once and never again: only its hash is stored. */
  async create (projectId: string, input: { name: string, expiresAt?: string, createdBy: string }): Promise<ServiceToken & { token: string }> {
    const now = this.deps.clock.now()
    const { token, stored } = issueToken(this.deps.prefix, input, now)
    // Expired tokens do not count: they authenticate nothing, and a project should not have to revoke them to make room.
    const active = await this.tokens.countDocuments({ projectId, revokedAt: null, $or: [{ expiresAt: null }, { expiresAt: { $gt: now } }] })
    if (active >= MAX_SERVICE_TOKENS_PER_PROJECT) {
      throw projectErrors.tooManyServiceTokens({ limit: MAX_SERVICE_TOKENS_PER_PROJECT })
    }
    const record = { ...stored, tokenId: this.deps.newId(), projectId, createdBy: input.createdBy }
    await this.tokens.insertOne(record)
    return { ...toServiceToken(record), token }
  }

  /** Every token not revoked, expired ones included so they can be seen and cleaned up. */
  async list (projectId: string): Promise<ServiceToken[]> {
    const records = await this.tokens.find({ projectId, revokedAt: null }, { sort: { tokenId: 1 } }).toArray()
    return records.map(toServiceToken)
  }

  async revoke (projectId: string, tokenId: string): Promise<void> {
    const result = await this.tokens.updateOne({ tokenId, projectId, revokedAt: null }, { $set: { revokedAt: this.deps.clock.now() } })
    if (result.matchedCount === 0) throw projectErrors.serviceTokenNotFound()
  }

  /** Null for a malformed, unknown, revoked or expired token; the caller compares `projectId` with the project the request is for. */
  async authenticate (token: string): Promise<ServiceTokenIdentity | null> {
    const record = await usableToken<ServiceTokenRecord>(this.store, TOKENS_COLLECTION, token, this.deps.prefix, this.deps.clock)
    return record === null ? null : { projectId: record.projectId, tokenId: record.tokenId }
  }

  /** When a project is deleted; returns how many tokens went with it. */
  async deleteAllForProject (projectId: string): Promise<number> {
    const { deletedCount } = await this.tokens.deleteMany({ projectId })
    return deletedCount
  }
}
