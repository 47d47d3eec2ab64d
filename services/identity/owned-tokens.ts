import { issueToken, usableToken, type StoredToken } from './pat-format.js'
import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Store, StoreCollection, WithId } from '../store/types.js'

/** What sets one kind of owned token apart: where it is kept, whose it is, and how many one owner may hold. */
export interface OwnedTokenKind {
  collection: string
  /** The field naming the owner: `userId`, `projectId`. */
  owner: string
  /** The field of the public handle listings and revocation use (`_id` is the token's hash): `keyId`, `tokenId`. */
  handle: string
  limit: number
  /** Whether an expired token still counts against the limit. */
  expiredCount: boolean
  tooMany: (limit: number) => Error
  notFound: () => Error
}

/**
 * Bearer tokens that belong to one owner: a user's personal access tokens,
 * a project's service tokens. The Store key (`_id`) is the token's SHA-256,
 * so authenticating is one primary-key read; the token itself is returned
 * once, when issued, and never stored.
 */
export class OwnedTokens<Record extends StoredToken> {
  private readonly tokens: StoreCollection<Record>

  constructor (private readonly store: Store, private readonly kind: OwnedTokenKind, private readonly deps: { clock: Clock, newId: IdGenerator, prefix: string }) {
    this.tokens = store.collection<Record>(kind.collection)
  }

  async init (): Promise<void> {
    await this.tokens.createIndex({ [this.kind.handle]: 1 }, { unique: true })
    await this.tokens.createIndex({ [this.kind.owner]: 1 })
  }

  /** A new token for `ownerId`; `fields` gives the kind's own fields once the name and expiry passed (it may refuse too). */
  async issue (ownerId: string, input: { name: string, expiresAt?: string }, fields: () => Partial<Record>): Promise<{ record: WithId<Record>, token: string }> {
    const now = this.deps.clock.now()
    const { token, stored } = issueToken(this.deps.prefix, input, now)
    const own = fields()
    // Expired tokens authenticate nothing; a kind that does not count them spares its owner revoking them to make room.
    const live = this.kind.expiredCount ? {} : { $or: [{ expiresAt: null }, { expiresAt: { $gt: now } }] }
    if (await this.tokens.countDocuments({ [this.kind.owner]: ownerId, revokedAt: null, ...live }) >= this.kind.limit) throw this.kind.tooMany(this.kind.limit)
    const record = { ...stored, [this.kind.handle]: this.deps.newId(), [this.kind.owner]: ownerId, ...own } as unknown as WithId<Record>
    await this.tokens.insertOne(record)
    return { record, token }
  }

  /** Every token of the owner not revoked, expired ones included so they can be seen and cleaned up. */
  async list (ownerId: string): Promise<Array<WithId<Record>>> {
    return await this.tokens.find({ [this.kind.owner]: ownerId, revokedAt: null }, { sort: { [this.kind.handle]: 1 } }).toArray()
  }

  async revoke (ownerId: string, handle: string): Promise<void> {
    const result = await this.tokens.updateOne({ [this.kind.handle]: handle, [this.kind.owner]: ownerId, revokedAt: null }, { $set: { revokedAt: this.deps.clock.now() } })
    if (result.matchedCount === 0) throw this.kind.notFound()
  }

  async revokeAll (ownerId: string): Promise<void> {
    await this.tokens.updateMany({ [this.kind.owner]: ownerId, revokedAt: null }, { $set: { revokedAt: this.deps.clock.now() } })
  }

  /** Returns how many tokens went. */
  async deleteAll (ownerId: string): Promise<number> {
    const { deletedCount } = await this.tokens.deleteMany({ [this.kind.owner]: ownerId })
    return deletedCount
  }

  /** Whether the owner's token `handle` is neither revoked nor expired: what a credential made from it (a file link) re-checks. */
  async live (ownerId: string, handle: string): Promise<boolean> {
    const now = this.deps.clock.now()
    return await this.tokens.countDocuments({ [this.kind.handle]: handle, [this.kind.owner]: ownerId, revokedAt: null, $or: [{ expiresAt: null }, { expiresAt: { $gt: now } }] }) > 0
  }

  /** Null for a malformed, unknown, revoked or expired token. */
  async authenticate (token: string): Promise<WithId<Record> | null> {
    return await usableToken<Record>(this.store, this.kind.collection, token, this.deps.prefix, this.deps.clock)
  }
}
