import { commonErrors } from '../platform/errors.js'
import { identityErrors } from './errors.js'
import { hashPassword, verifyPassword, passwordNeedsRehash } from '../platform/crypto.js'
import { DuplicateKeyError } from '../store/errors.js'
import { retryUpsertRace } from '../platform/upsert-race.js'
import type { Clock } from '../platform/clock.js'
import type { SharedReads, Store, StoreCollection, WithId } from '../store/types.js'
import { FrozenMemo } from '../cache/frozen-memo.js'
import type { PlatformUserT } from '../../schemas/auth.ts'
import { isoString } from '../platform/iso-dates.js'

export type PlatformUserRecord = {
  email: string
  name: string
  passwordHash: string | null
  emailVerified: boolean
  /** Moves when every session must end at once; access tokens carry the value they were issued under. Absent means 0. */
  sessionEpoch?: number
  createdAt: Date
  updatedAt: Date
}

/** A user as authentication sees them: who, and which sessions still count. */
export interface PlatformAccount { user: PlatformUser, sessionEpoch: number }

export type PlatformUser = PlatformUserT

const USERS_COLLECTION = 'platform_users'
const PASSWORD_MIN_LENGTH = 8
const PASSWORD_MAX_LENGTH = 256

export function normalizeEmail (email: string): string {
  return email.trim().toLowerCase()
}

// Deliberately plain: one @, no spaces, a dot in the domain. Deliverability is proven by mail, not by regex.
const EMAIL_SHAPE = /^[^\s@]{1,64}@[^\s@.]+(\.[^\s@.]+)+$/

export function checkEmail (email: string): void {
  if (!EMAIL_SHAPE.test(email)) throw identityErrors.invalidEmail()
}

function toPlatformUser (record: WithId<PlatformUserRecord>): PlatformUser {
  return { id: record._id, email: record.email, name: record.name, emailVerified: record.emailVerified, createdAt: isoString(record.createdAt) }
}

/** The policy docs/identity.md states: 8 to 256 characters, and not the email address itself. `path` names the field in the request. */
export function checkPasswordPolicy (password: string, email: string, path = 'body.password'): void {
  if (password.length < PASSWORD_MIN_LENGTH) throw identityErrors.weakPassword({ rule: `be at least ${PASSWORD_MIN_LENGTH} characters`, path })
  if (password.length > PASSWORD_MAX_LENGTH) throw identityErrors.weakPassword({ rule: `be at most ${PASSWORD_MAX_LENGTH} characters`, path })
  if (password.trim().toLowerCase() === normalizeEmail(email)) throw identityErrors.weakPassword({ rule: 'not be the email address', path })
}

// Every authenticated platform request asks for its user's account: made once per stored user record.
const accountOf = new FrozenMemo((record: WithId<PlatformUserRecord>): PlatformAccount => ({ user: toPlatformUser(record), sessionEpoch: record.sessionEpoch ?? 0 }))

export class PlatformUsers {
  readonly records: StoreCollection<PlatformUserRecord>
  private readonly shared: SharedReads<PlatformUserRecord>
  // Verified against when the email is unknown, so both failures cost one argon2 run.
  private decoyHash: Promise<string> | null = null

  constructor (store: Store, private readonly clock: Clock) {
    this.records = store.collection<PlatformUserRecord>(USERS_COLLECTION)
    this.shared = store.extensions.shared<PlatformUserRecord>(USERS_COLLECTION)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ email: 1 }, { unique: true })
  }

  async register (input: { email: string, password: string, name: string }): Promise<PlatformUser> {
    const email = normalizeEmail(input.email)
    checkEmail(email)
    checkPasswordPolicy(input.password, email)
    const now = this.clock.now()
    const record = { email, name: input.name.trim(), passwordHash: await hashPassword(input.password), emailVerified: false, createdAt: now, updatedAt: now }
    try {
      const { insertedId } = await this.records.insertOne(record)
      return toPlatformUser({ ...record, _id: insertedId })
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw identityErrors.emailTaken()
      throw error
    }
  }

  /** One answer for an unknown email and a wrong password, in about the same time; the account as read with the password checked. */
  async authenticate (emailInput: string, password: string): Promise<PlatformAccount> {
    const record = await this.records.findOne({ email: normalizeEmail(emailInput) })
    const hash = record?.passwordHash ?? await this.decoy()
    const valid = await verifyPassword(hash, password)
    if (record === null || record.passwordHash === null || !valid) {
      throw identityErrors.invalidCredentials()
    }
    if (passwordNeedsRehash(record.passwordHash)) {
      await this.records.updateOne({ _id: record._id }, { $set: { passwordHash: await hashPassword(password), updatedAt: this.clock.now() } })
    }
    return { user: toPlatformUser(record), sessionEpoch: record.sessionEpoch ?? 0 }
  }

  async get (id: string): Promise<PlatformUser> {
    const account = await this.account(id)
    if (account === null) throw commonErrors.userNotFound()
    return account.user
  }

  async findById (id: string): Promise<PlatformUser | null> {
    return (await this.account(id))?.user ?? null
  }

  /** Whether the user still exists and which sessions still count; shared and frozen. */
  async account (id: string): Promise<PlatformAccount | null> {
    const record = await this.shared.findOne({ _id: id })
    return record === null ? null : accountOf.get(record)
  }

  async findByEmail (email: string): Promise<PlatformUser | null> {
    const record = await this.records.findOne({ email: normalizeEmail(email) })
    return record === null ? null : toPlatformUser(record)
  }

  async findMany (ids: string[]): Promise<Map<string, PlatformUser>> {
    if (ids.length === 0) return new Map()
    const records = await this.records.find({ _id: { $in: [...new Set(ids)] } }).toArray()
    return new Map(records.map((record) => [record._id, toPlatformUser(record)]))
  }

  /**
   * SSO: the user with this verified email, created without a password if new.
   * An existing account whose address was never verified may have been
   * registered by someone else in advance; as the provider-proven owner takes
   * it over, its password is dropped and its session epoch moves, so that
   * someone can neither log in nor keep a session (`tookOver` tells the
   * caller to revoke the rest of what they were issued).
   */
  async findOrCreateByVerifiedEmail (emailInput: string, name: string): Promise<{ user: PlatformUser, tookOver: boolean }> {
    const email = normalizeEmail(emailInput)
    const now = this.clock.now()
    const record = await retryUpsertRace(async () => await this.records.findOneAndUpdate(
      { email },
      { $setOnInsert: { name: name.trim() || email, passwordHash: null, emailVerified: true, createdAt: now, updatedAt: now } },
      { upsert: true, returnDocument: 'after' }
    ))
    if (record === null) throw new Error('upsert returned no document')
    if (record.emailVerified) return { user: toPlatformUser(record), tookOver: false }
    // Conditional on still being unverified, so a password set after a concurrent link survives.
    const linked = await this.records.findOneAndUpdate(
      { _id: record._id, emailVerified: false },
      { $set: { emailVerified: true, passwordHash: null, updatedAt: now }, $inc: { sessionEpoch: 1 } },
      { returnDocument: 'after' }
    )
    return { user: toPlatformUser(linked ?? { ...record, emailVerified: true }), tookOver: linked !== null }
  }

  private async decoy (): Promise<string> {
    this.decoyHash ??= hashPassword('decoy-password-never-matches')
    return await this.decoyHash
  }
}
