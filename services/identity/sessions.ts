import { identityErrors } from './errors.js'
import { generateToken, hashToken } from '../platform/crypto.js'
import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import type { PagedWrites, Store, StoreCollection } from '../store/types.js'
import type { SessionTokensT } from '../../schemas/auth.js'
import { isoString } from '../platform/iso-dates.js'

type RefreshTokenRecord = {
  tokenHash: string
  userId: string
  /** Whose users the session is among: null for platform users, the project id for a project's end users. */
  scope: string | null
  /** Every token rotated from one login shares a family; reuse of a dead one revokes it whole. */
  familyId: string
  status: 'active' | 'rotated' | 'revoked'
  /** The user's session epoch the family was started under; an access token is issued only while it is still current. */
  sessionEpoch?: number
  /** A rotated token's one trade within the grace window has been made. */
  graceUsed?: boolean
  expiresAt: Date
  createdAt: Date
  /** When it was traded for `successorId`, the token issued in its place. */
  rotatedAt?: Date | null
  successorId?: string | null
}

/** What an issuer hands back: the access token, and the session epoch it was signed under. */
export interface IssuedAccess { accessToken: string, expiresIn: number, sessionEpoch: number }

/**
 * Signs the short-lived access token of a session; the HTTP layer supplies
 * it (the JWT keys live there). `sessionEpoch` is the epoch the session was
 * started under (undefined: the user's current one). Null when the user may
 * no longer hold that session — gone, disabled, auth switched off, or the
 * epoch moved since (a password changed or an account taken over while a
 * login or refresh was on its way) — which ends the family.
 */
export type AccessIssuer = (userId: string, familyId: string, scope: string | null, sessionEpoch: number | undefined) => Promise<IssuedAccess | null>

export type SessionTokens = SessionTokensT

export interface RefreshSessionsDeps {
  clock: Clock
  newId: IdGenerator
  issueAccess: AccessIssuer
  refreshTtlSeconds: number
  /** How long the token a refresh just replaced may still be traded, once more each time, for a client's double submit. */
  reuseGraceSeconds: number
}

const invalid = (): Error => identityErrors.invalidRefreshToken()

/**
 * Refresh tokens with rotation and reuse detection, for platform users and
 * for each project's end users alike (one collection per kind). Each refresh
 * retires the presented token and issues its successor; a retired token
 * presented again means it was copied, so its whole family is revoked —
 * except within a short grace window for the token just replaced, where a
 * client that sent one refresh twice (two tabs, a retry) gets a sibling
 * session instead of being logged out. Only hashes are stored.
 */
export class RefreshSessions {
  private readonly tokens: StoreCollection<RefreshTokenRecord>
  /** Revocations touch every token of a user, a family or a scope, however many: a page at a time. */
  private readonly sweep: PagedWrites

  constructor (store: Store, collection: string, private readonly deps: RefreshSessionsDeps) {
    this.tokens = store.collection<RefreshTokenRecord>(collection)
    this.sweep = store.extensions.sweep(collection)
  }

  async init (): Promise<void> {
    await this.tokens.createIndex({ tokenHash: 1 }, { unique: true })
    await this.tokens.createIndex({ familyId: 1 })
    await this.tokens.createIndex({ scope: 1, userId: 1 })
  }

  /** `sessionEpoch`: the one read with the password that was checked, so a change racing the login wins. */
  async start (userId: string, scope: string | null = null, sessionEpoch?: number): Promise<SessionTokens> {
    return await this.issue(userId, scope, this.deps.newId(), sessionEpoch)
  }

  /** A new access token and refresh token for a live refresh token of `scope`; the user it was issued to comes back too. */
  async refresh (refreshToken: string, scope: string | null = null): Promise<SessionTokens & { userId: string }> {
    const record = await this.tokens.findOne({ tokenHash: hashToken(refreshToken) })
    if (record === null || (record.scope ?? null) !== scope || record.expiresAt.getTime() <= this.deps.clock.nowMs()) throw invalid()
    if (record.status === 'revoked') throw invalid()
    if (record.status === 'rotated') return await this.reuse(record)
    // Issued before the old one is retired, so a refresh that loses the race below leaves nothing live behind.
    const successorId = this.deps.newId()
    const next = await this.issue(record.userId, scope, record.familyId, record.sessionEpoch ?? 0, successorId)
    const now = this.deps.clock.now()
    const rotated = await this.tokens.updateOne({ _id: record._id, status: 'active' }, { $set: { status: 'rotated', rotatedAt: now, successorId } })
    if (rotated.modifiedCount === 1) return { ...next, userId: record.userId }
    // Another refresh of the same token won: this one is its double.
    await this.tokens.deleteOne({ _id: successorId })
    const current = await this.tokens.findOne({ _id: record._id })
    if (current === null || current.status !== 'rotated') throw invalid()
    return await this.reuse(current)
  }

  /** Ends the session the refresh token belongs to. Unknown tokens are ignored: logout is idempotent. */
  async logout (refreshToken: string, scope: string | null = null): Promise<void> {
    const record = await this.tokens.findOne({ tokenHash: hashToken(refreshToken) })
    if (record !== null && (record.scope ?? null) === scope) await this.revokeFamily(record.familyId)
  }

  /** Every session of a user: after a password change, a takeover, or the user disabled or deleted. */
  async revokeUser (userId: string, scope: string | null = null): Promise<void> {
    await this.sweep.updateMany({ scope, userId, status: { $ne: 'revoked' } }, { $set: { status: 'revoked' } })
  }

  /** Forgets every session of a scope (a deleted project's end users). */
  async forgetScope (scope: string): Promise<void> {
    await this.sweep.deleteMany({ scope })
  }

  /**
   * A retired token presented again: within the grace window, and only for
   * the token its family's live successor replaced, a sibling session;
   * otherwise theft is assumed and the family is revoked.
   */
  private async reuse (record: RefreshTokenRecord & { _id: string }): Promise<SessionTokens & { userId: string }> {
    const graceMs = this.deps.reuseGraceSeconds * 1000
    const rotatedAt = record.rotatedAt?.getTime() ?? 0
    const successor = record.successorId == null ? null : await this.tokens.findOne({ _id: record.successorId, status: 'active' })
    // One trade per retired token, claimed conditionally: a double submit gets its answer, a copy does not get a stream of them.
    const claimed = successor === null || this.deps.clock.nowMs() - rotatedAt > graceMs
      ? null
      : await this.tokens.updateOne({ _id: record._id, status: 'rotated', graceUsed: { $ne: true } }, { $set: { graceUsed: true } })
    if (claimed === null || claimed.modifiedCount !== 1) {
      await this.revokeFamily(record.familyId)
      throw invalid()
    }
    const sibling = this.deps.newId()
    const issued = await this.issue(record.userId, record.scope ?? null, record.familyId, record.sessionEpoch ?? 0, sibling)
    // A logout or revocation of the family that ran meanwhile reached the successor but maybe not the sibling.
    if ((await this.tokens.findOne({ _id: record.successorId as string }))?.status === 'revoked') {
      await this.revokeFamily(record.familyId)
      throw invalid()
    }
    return { ...issued, userId: record.userId }
  }

  private async revokeFamily (familyId: string): Promise<void> {
    await this.sweep.updateMany({ familyId, status: { $ne: 'revoked' } }, { $set: { status: 'revoked' } })
  }

  private async issue (userId: string, scope: string | null, familyId: string, sessionEpoch: number | undefined, id = this.deps.newId()): Promise<SessionTokens> {
    const access = await this.deps.issueAccess(userId, familyId, scope, sessionEpoch)
    if (access === null) {
      await this.revokeFamily(familyId)
      throw invalid()
    }
    const refreshToken = generateToken()
    const now = this.deps.clock.nowMs()
    const expiresAt = new Date(now + this.deps.refreshTtlSeconds * 1000)
    await this.tokens.insertOne({
      _id: id, tokenHash: hashToken(refreshToken), userId, scope, familyId, status: 'active', sessionEpoch: access.sessionEpoch, expiresAt, createdAt: new Date(now), rotatedAt: null, successorId: null
    })
    return { accessToken: access.accessToken, tokenType: 'Bearer', expiresIn: access.expiresIn, refreshToken, refreshExpiresAt: isoString(expiresAt) }
  }
}
