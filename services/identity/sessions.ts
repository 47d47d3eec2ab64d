import { unauthorized } from '../errors.js'
import { generateToken, hashToken } from '../crypto.js'
import type { Clock } from '../clock.js'
import type { IdGenerator } from '../ids.js'
import type { Store, StoreCollection } from '../store/types.js'

type RefreshTokenRecord = {
  tokenHash: string
  userId: string
  /** Every token rotated from one login shares a family; reuse of a dead one revokes it whole. */
  familyId: string
  status: 'active' | 'rotated' | 'revoked'
  expiresAt: Date
  createdAt: Date
}

/** Signs short-lived platform access tokens; the HTTP layer supplies it (the JWT key lives there). */
export interface AccessTokenSigner {
  sign (claims: { sub: string, sid: string }): string
  readonly ttlSeconds: number
}

export interface SessionTokens {
  accessToken: string
  tokenType: 'Bearer'
  expiresIn: number
  refreshToken: string
  refreshExpiresAt: string
}

const INVALID_REFRESH = 'Refresh token is invalid, expired or already used'

export class PlatformSessions {
  private readonly tokens: StoreCollection<RefreshTokenRecord>

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, signer: AccessTokenSigner, refreshTtlSeconds: number }) {
    this.tokens = store.collection<RefreshTokenRecord>('platform_refresh_tokens')
  }

  async init (): Promise<void> {
    await this.tokens.createIndex({ tokenHash: 1 }, { unique: true })
    await this.tokens.createIndex({ familyId: 1 })
  }

  async start (userId: string): Promise<SessionTokens> {
    return await this.issue(userId, this.deps.newId())
  }

  /**
   * Rotation: the presented token dies and a new one is issued in its family.
   * Presenting a token that already died means it was copied; the whole family
   * is revoked so neither the thief nor the owner can continue on it.
   */
  async refresh (refreshToken: string): Promise<SessionTokens> {
    const record = await this.tokens.findOne({ tokenHash: hashToken(refreshToken) })
    if (record === null) throw unauthorized('APP_INVALID_REFRESH_TOKEN', INVALID_REFRESH)
    if (record.status !== 'active') {
      if (record.status === 'rotated') await this.revokeFamily(record.familyId)
      throw unauthorized('APP_INVALID_REFRESH_TOKEN', INVALID_REFRESH)
    }
    if (record.expiresAt.getTime() <= this.deps.clock.nowMs()) throw unauthorized('APP_INVALID_REFRESH_TOKEN', INVALID_REFRESH)
    // Conditional on still being active, so two concurrent refreshes cannot both win.
    const rotated = await this.tokens.updateOne({ _id: record._id, status: 'active' }, { $set: { status: 'rotated' } })
    if (rotated.modifiedCount !== 1) {
      await this.revokeFamily(record.familyId)
      throw unauthorized('APP_INVALID_REFRESH_TOKEN', INVALID_REFRESH)
    }
    return await this.issue(record.userId, record.familyId)
  }

  /** Ends the session the refresh token belongs to. Unknown tokens are ignored: logout is idempotent. */
  async logout (refreshToken: string): Promise<void> {
    const record = await this.tokens.findOne({ tokenHash: hashToken(refreshToken) })
    if (record !== null) await this.revokeFamily(record.familyId)
  }

  private async revokeFamily (familyId: string): Promise<void> {
    await this.tokens.updateMany({ familyId }, { $set: { status: 'revoked' } })
  }

  private async issue (userId: string, familyId: string): Promise<SessionTokens> {
    const refreshToken = generateToken()
    const now = this.deps.clock.nowMs()
    const expiresAt = new Date(now + this.deps.refreshTtlSeconds * 1000)
    await this.tokens.insertOne({ tokenHash: hashToken(refreshToken), userId, familyId, status: 'active', expiresAt, createdAt: new Date(now) })
    return {
      accessToken: this.deps.signer.sign({ sub: userId, sid: familyId }),
      tokenType: 'Bearer',
      expiresIn: this.deps.signer.ttlSeconds,
      refreshToken,
      refreshExpiresAt: expiresAt.toISOString()
    }
  }
}
