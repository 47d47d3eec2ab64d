import { badRequest, notFound } from '../errors.js'
import { hashToken } from '../crypto.js'
import { createPat, patHint, futureExpiry, usableToken } from '../identity/pat-format.js'
import type { Clock } from '../clock.js'
import type { IdGenerator } from '../ids.js'
import type { Store, StoreCollection, WithId } from '../store/types.js'
import type { ServiceTokenT } from '../../schemas/projects.ts'
import { isoString, isoStringOrNull } from '../iso-dates.js'

/**
 * A project's server credentials. As with PATs, the Store key (`_id`) is the
 * token's SHA-256, so authenticating is one primary-key read, and `tokenId`
 * is the public handle listings and revocation use.
 */
type ServiceTokenRecord = {
  tokenId: string
  projectId: string
  name: string
  hint: string
  createdBy: string
  createdAt: Date
  lastUsedAt: Date | null
  expiresAt: Date | null
  revokedAt: Date | null
}

export type ServiceToken = ServiceTokenT

/** Which project a service token speaks for, once it passed every check. */
export interface ServiceTokenIdentity { projectId: string, tokenId: string }

export const MAX_SERVICE_TOKENS_PER_PROJECT = 50

function toServiceToken (record: WithId<ServiceTokenRecord>): ServiceToken {
  return {
    id: record.tokenId,
    name: record.name,
    hint: record.hint,
    createdBy: record.createdBy,
    createdAt: isoString(record.createdAt),
    lastUsedAt: isoStringOrNull(record.lastUsedAt),
    expiresAt: isoStringOrNull(record.expiresAt)
  }
}

export class ServiceTokens {
  private readonly tokens: StoreCollection<ServiceTokenRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, prefix: string }) {
    this.tokens = store.collection<ServiceTokenRecord>('project_service_tokens')
  }

  async init (): Promise<void> {
    await this.tokens.createIndex({ tokenId: 1 }, { unique: true })
    await this.tokens.createIndex({ projectId: 1 })
  }

  /** The token is returned here once and never again: only its hash is stored. */
  async create (projectId: string, input: { name: string, expiresAt?: string, createdBy: string }): Promise<ServiceToken & { token: string }> {
    if (input.name.trim() === '') throw badRequest('APP_INVALID_NAME', 'name cannot be blank')
    const now = this.deps.clock.now()
    const expiresAt = futureExpiry(input.expiresAt, now)
    // Expired tokens do not count: they authenticate nothing, and a project should not have to revoke them to make room.
    const active = await this.tokens.countDocuments({ projectId, revokedAt: null, $or: [{ expiresAt: null }, { expiresAt: { $gt: now } }] })
    if (active >= MAX_SERVICE_TOKENS_PER_PROJECT) {
      throw badRequest('APP_TOO_MANY_SERVICE_TOKENS', `At most ${MAX_SERVICE_TOKENS_PER_PROJECT} active service tokens per project`)
    }
    const token = createPat(this.deps.prefix)
    const record = {
      _id: hashToken(token),
      tokenId: this.deps.newId(),
      projectId,
      name: input.name.trim(),
      hint: patHint(token, this.deps.prefix),
      createdBy: input.createdBy,
      createdAt: now,
      lastUsedAt: null,
      expiresAt,
      revokedAt: null
    }
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
    if (result.matchedCount === 0) throw notFound('APP_SERVICE_TOKEN_NOT_FOUND', 'Service token not found')
  }

  /** Null for a malformed, unknown, revoked or expired token; the caller compares `projectId` with the project the request is for. */
  async authenticate (token: string): Promise<ServiceTokenIdentity | null> {
    const record = await usableToken(this.tokens, token, this.deps.prefix, this.deps.clock)
    return record === null ? null : { projectId: record.projectId, tokenId: record.tokenId }
  }

  /** When a project is deleted; returns how many tokens went with it. */
  async deleteAllForProject (projectId: string): Promise<number> {
    const { deletedCount } = await this.tokens.deleteMany({ projectId })
    return deletedCount
  }
}
