import { MAX_NESTING, nestedDeeperThan } from '../platform/nesting.js'
import { commonErrors } from '../platform/errors.js'
import { identityErrors } from '../identity/errors.js'
import { projectErrors } from './errors.js'
import { hashPassword, passwordNeedsRehash, verifyPassword } from '../platform/crypto.js'
import { checkEmail, checkPasswordPolicy, normalizeEmail } from '../identity/users.js'
import type { Document, Store, StoreCollection, WithId } from '../store/types.js'
import { PROJECT_USERS_TABLE, projectCollectionName } from './naming.js'
import { isoString } from '../platform/iso-dates.js'
import { FrozenMemo } from '../cache/frozen-memo.js'
import { DuplicateKeyError } from '../store/errors.js'
import type { ProjectUserT } from '../../schemas/project-auth.js'
import type { ProjectUserAccountT } from '../../schemas/project-users.js'
import type { Cursors } from '../collections/query.js'
import { literalPattern } from '../store/semantics/regex.js'
import { keysetPage, NEWEST_FIRST, type PageRequest } from '../webhooks/paging.js'

/** An end user as stored: the fixed fields, and the extra fields given at registration beside them. */
type ProjectUserRecord = {
  email: string
  /** Absent for a user who signs in only through an OpenID provider. */
  passwordHash?: string
  emailVerified: boolean
  /** Set by the project's admins through the data API (a `disabled` boolean field): a disabled user holds no session. */
  disabled?: unknown
  /** Moves when every session of the user must end; tokens carry the value they were issued under. Absent means 0. */
  sessionEpoch?: number
  createdAt: Date
  updatedAt: Date
  [field: string]: unknown
}

/** The schema's fields, and the profile fields each project adds beside them. */
export type ProjectUser = ProjectUserT & Record<string, unknown>

const wrongPassword = (): Error => projectErrors.wrongPassword()

/** An end user as authentication sees them: the user, and whether their sessions count. */
export interface ProjectAccount { user: ProjectUser, sessionEpoch: number, disabled: boolean }

export const MAX_EXTRA_FIELDS = 50
export const MAX_EXTRA_FIELDS_BYTES = 16 * 1024

// `disabled` and `sessionEpoch` decide whether a user's sessions are honoured: never the user's own choice.
const RESERVED_FIELDS = new Set(['_id', 'id', 'email', 'password', 'passwordHash', 'createdAt', 'updatedAt', 'emailVerified', 'version', 'disabled', 'sessionEpoch'])
// Nested too: the Store refuses these names in any stored document, and would answer with a less helpful code.
const UNSTORABLE_NAME = /^$|^\$|\.|\0/

function isReservedField (name: string): boolean {
  return RESERVED_FIELDS.has(name) || name.startsWith('_') || UNSTORABLE_NAME.test(name)
}

function firstUnstorableName (value: unknown, path: string): string | null {
  if (value === null || typeof value !== 'object') return null
  const entries = Array.isArray(value) ? value.map((item, i) => [`[${i}]`, item] as const) : Object.entries(value)
  for (const [name, child] of entries) {
    if (!Array.isArray(value) && UNSTORABLE_NAME.test(name)) return `${path}.${name}`
    const found = firstUnstorableName(child, Array.isArray(value) ? `${path}${name}` : `${path}.${name}`)
    if (found !== null) return found
  }
  return null
}

function checkExtraFields (extraFields: Record<string, unknown>): void {
  const names = Object.keys(extraFields)
  if (names.length > MAX_EXTRA_FIELDS) throw projectErrors.extraFieldsTooLarge({ why: `At most ${MAX_EXTRA_FIELDS} extra fields`, limit: MAX_EXTRA_FIELDS })
  const reserved = names.find(isReservedField)
  if (reserved !== undefined) {
    throw projectErrors.reservedField({ message: `extraFields cannot use the reserved name '${reserved}'`, path: `extraFields.${reserved}`, issue: 'is a reserved name' })
  }
  if (nestedDeeperThan(extraFields, MAX_NESTING + 1)) throw projectErrors.extraFieldsTooLarge({ why: `extraFields may nest at most ${MAX_NESTING} levels`, limit: MAX_NESTING })
  if (Buffer.byteLength(JSON.stringify(extraFields), 'utf8') > MAX_EXTRA_FIELDS_BYTES) {
    throw projectErrors.extraFieldsTooLarge({ why: `extraFields must be at most ${MAX_EXTRA_FIELDS_BYTES} bytes of JSON`, limit: MAX_EXTRA_FIELDS_BYTES })
  }
  for (const name of names) {
    const path = firstUnstorableName(extraFields[name], name)
    if (path !== null) {
      throw projectErrors.reservedField({
        message: `extraFields cannot hold the field '${path}': names must not be empty, start with '$' or contain '.'`,
        path: `extraFields.${path}`,
        issue: 'is not a name a field can have'
      })
    }
  }
}

/** Reserved names are skipped even if another writer put them in the record, so no hash or internal field leaks. */
function toProjectUser (record: WithId<ProjectUserRecord>): ProjectUser {
  const user: ProjectUser = {
    id: record._id,
    email: record.email,
    emailVerified: record.emailVerified,
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt)
  }
  for (const name in record) {
    if (!isReservedField(name)) user[name] = (record as Record<string, unknown>)[name]
  }
  return user
}

const accountOf = new FrozenMemo((record: WithId<ProjectUserRecord>): ProjectAccount =>
  ({ user: toProjectUser(record), sessionEpoch: record.sessionEpoch ?? 0, disabled: record.disabled === true }))

/** An account as its admins list it, before the providers it is linked at are joined to it. */
export type ProjectUserState = Omit<ProjectUserAccountT, 'providers'>

function stateOf (record: WithId<ProjectUserRecord>): ProjectUserState {
  return {
    id: record._id,
    email: record.email,
    emailVerified: record.emailVerified === true,
    disabled: record.disabled === true,
    hasPassword: typeof record.passwordHash === 'string',
    createdAt: isoString(record.createdAt),
    updatedAt: isoString(record.updatedAt)
  }
}

function collectionName (projectId: string): string {
  return projectCollectionName(projectId, PROJECT_USERS_TABLE)
}

/**
 * Stores a new end user's record: `account` (email, password hash, flags) as
 * given, `profile` (the extra fields sent at sign-up) checked against the
 * project's `_users` definition first. The records service provides it.
 */
export type UserRecordWriter = (projectId: string, account: Document, profile: Document) => Promise<WithId<Document>>

/**
 * The end users of each project, in that project's own `_users` collection.
 * Same email and password rules as platform users, one refusal for every
 * failed login, and profile fields as the project's `_users` definition has them.
 */
export class ProjectUsers {
  // Verified against when the email is unknown, so both failures cost one argon2 run.
  private decoyHash: Promise<string> | null = null

  constructor (private readonly store: Store, private readonly writeRecord: UserRecordWriter, private readonly cursors: Cursors) {}

  /** Creates the unique email index; safe to call again. */
  async enable (projectId: string): Promise<void> {
    await this.collection(projectId).createIndex({ email: 1 }, { unique: true })
  }

  async register (projectId: string, input: { email: string, password: string, extraFields?: Record<string, unknown> }): Promise<ProjectUser> {
    const email = normalizeEmail(input.email)
    checkEmail(email)
    checkPasswordPolicy(input.password, email)
    const extraFields = input.extraFields ?? {}
    checkExtraFields(extraFields)
    const account = { email, passwordHash: await hashPassword(input.password), emailVerified: false }
    return toProjectUser(await this.writeRecord(projectId, account, extraFields) as WithId<ProjectUserRecord>)
  }

  /**
   * One answer for an unknown email and a wrong password, in about the same
   * time. The account comes back as read with the password it was checked
   * against, session epoch included, so a change racing the login wins.
   */
  async authenticate (projectId: string, emailInput: string, password: string): Promise<ProjectAccount> {
    const users = this.collection(projectId)
    const record = await users.findOne({ email: normalizeEmail(emailInput) })
    const stored = typeof record?.passwordHash === 'string' ? record.passwordHash : null
    const valid = await verifyPassword(stored ?? await this.decoy(), password)
    if (record === null || stored === null || !valid) {
      throw identityErrors.invalidCredentials()
    }
    // updatedAt stays: the project sees it as the profile's, and a rehash changes nothing the project can see.
    if (passwordNeedsRehash(stored)) {
      await users.updateOne({ _id: record._id }, { $set: { passwordHash: await hashPassword(password) } })
    }
    return { user: toProjectUser(record), sessionEpoch: record.sessionEpoch ?? 0, disabled: record.disabled === true }
  }

  async get (projectId: string, userId: string): Promise<ProjectUser> {
    const user = await this.findById(projectId, userId)
    if (user === null) throw commonErrors.userNotFound({ endUser: true })
    return user
  }

  async findById (projectId: string, userId: string): Promise<ProjectUser | null> {
    return (await this.account(projectId, userId))?.user ?? null
  }

  /**
   * Asked by every request with a project JWT, to see that its user still
   * exists, is not disabled and still holds the session the token was issued
   * in; shared and frozen.
   */
  async account (projectId: string, userId: string): Promise<ProjectAccount | null> {
    const record = await this.store.extensions.shared<ProjectUserRecord>(collectionName(projectId)).findOne({ _id: userId })
    return record === null ? null : accountOf.get(record)
  }

  /**
   * A page of the project's users, newest first; `emailContains` is matched
   * as literal text, lower-cased as addresses are stored, so no input is
   * ever read as a pattern. Cursors are bound to the project and the filter.
   */
  async page (projectId: string, query: PageRequest & { emailContains?: string }): Promise<{ items: ProjectUserState[], nextCursor: string | null }> {
    const filter = query.emailContains === undefined ? {} : { email: { $regex: literalPattern(normalizeEmail(query.emailContains)) } }
    const { docs, nextCursor } = await keysetPage(this.collection(projectId), filter, NEWEST_FIRST, query, this.cursors, `project-users:${projectId}`)
    return { items: docs.map(stateOf), nextCursor }
  }

  async state (projectId: string, userId: string): Promise<ProjectUserState | null> {
    const record = await this.collection(projectId).findOne({ _id: userId })
    return record === null ? null : stateOf(record)
  }

  /** False when there is no such user. The caller ends the sessions of a user it disabled. */
  async setDisabled (projectId: string, userId: string, disabled: boolean): Promise<boolean> {
    // The version moves as a data-API write's does, so an If-Match made before this change fails.
    const changed = await this.collection(projectId).updateOne({ _id: userId }, { $set: { disabled, updatedAt: new Date() }, $inc: { version: 1 } })
    return changed.matchedCount === 1
  }

  /** A new password, once the current one is proven; every session the user holds ends (the epoch moves). */
  async changePassword (projectId: string, userId: string, current: string, next: string): Promise<void> {
    const users = this.collection(projectId)
    const record = await users.findOne({ _id: userId })
    const stored = typeof record?.passwordHash === 'string' ? record.passwordHash : null
    // 403, not 401: the caller's token is fine, and a 401 would send clients off to refresh it.
    if (record === null || stored === null || !await verifyPassword(stored, current)) throw wrongPassword()
    checkPasswordPolicy(next, record.email, 'body.newPassword')
    // Conditional on the hash just verified: of two changes at once, the second proves a password that is gone.
    const changed = await users.updateOne({ _id: userId, passwordHash: stored }, { $set: { passwordHash: await hashPassword(next) }, $inc: { sessionEpoch: 1 } })
    if (changed.matchedCount === 0) throw wrongPassword()
  }

  /** Whether the user can sign in with a password (one who came through a provider has none until a reset sets one). */
  async hasPassword (projectId: string, userId: string): Promise<boolean> {
    const record = await this.collection(projectId).findOne({ _id: userId }, { projection: { passwordHash: 1 } })
    return typeof record?.passwordHash === 'string'
  }

  /** Ends every session of these users at once (disabled, or for any reason the project decides). */
  async endSessions (projectId: string, userIds: string[]): Promise<void> {
    if (userIds.length > 0) await this.collection(projectId).updateMany({ _id: { $in: userIds } }, { $inc: { sessionEpoch: 1 } })
  }

  /** The account holding this address, for the email flows. */
  async accountByEmail (projectId: string, email: string): Promise<ProjectAccount | null> {
    const record = await this.collection(projectId).findOne({ email: normalizeEmail(email) })
    return record === null ? null : accountOf.get(record)
  }

  /**
   * Marks the address verified, if the user still has it (a link mailed to
   * an address they have since changed proves nothing). False when not.
   */
  async markVerified (projectId: string, userId: string, email: string): Promise<boolean> {
    const changed = await this.collection(projectId).updateOne({ _id: userId, email }, { $set: { emailVerified: true, updatedAt: new Date() } })
    return changed.matchedCount === 1
  }

  /** A new password from a reset link mailed to `email`: the address is proven, and every session ends. */
  async resetPassword (projectId: string, userId: string, email: string, next: string): Promise<boolean> {
    checkPasswordPolicy(next, email, 'body.newPassword')
    const changed = await this.collection(projectId).updateOne(
      { _id: userId, email },
      { $set: { passwordHash: await hashPassword(next), emailVerified: true, updatedAt: new Date() }, $inc: { sessionEpoch: 1 } }
    )
    return changed.matchedCount === 1
  }

  /** Moves the account from `from` to the proven address `to`; every session ends. False when the account no longer has `from`. */
  async changeEmail (projectId: string, userId: string, from: string, to: string): Promise<boolean> {
    try {
      const changed = await this.collection(projectId).updateOne(
        { _id: userId, email: from },
        { $set: { email: to, emailVerified: true, updatedAt: new Date() }, $inc: { sessionEpoch: 1 } }
      )
      return changed.matchedCount === 1
    } catch (error) {
      if (error instanceof DuplicateKeyError) throw identityErrors.emailTaken()
      throw error
    }
  }

  /** A user signed up through an OpenID provider: no password, the address as verified as the provider vouched for it. */
  async createFromProvider (projectId: string, emailInput: string, emailVerified: boolean): Promise<ProjectAccount> {
    const email = normalizeEmail(emailInput)
    checkEmail(email)
    const record = await this.writeRecord(projectId, { email, emailVerified }, {}) as WithId<ProjectUserRecord>
    return accountOf.get(record)
  }

  /**
   * The provider proved the address of an existing account. One whose
   * address was never verified is taken over by its proven owner: its
   * password (which whoever registered the address chose) is dropped and its
   * sessions end; `tookOver` says so.
   */
  async linkProvenEmail (projectId: string, userId: string): Promise<{ account: ProjectAccount, tookOver: boolean } | null> {
    const users = this.collection(projectId)
    // Conditional on still being unverified, so a password set after a concurrent verification survives.
    const taken = await users.updateOne({ _id: userId, emailVerified: false }, { $set: { emailVerified: true, updatedAt: new Date() }, $unset: { passwordHash: '' }, $inc: { sessionEpoch: 1 } })
    const account = await this.account(projectId, userId)
    return account === null ? null : { account, tookOver: taken.matchedCount === 1 }
  }

  private collection (projectId: string): StoreCollection<ProjectUserRecord> {
    return this.store.collection<ProjectUserRecord>(collectionName(projectId))
  }

  private async decoy (): Promise<string> {
    this.decoyHash ??= hashPassword('decoy-password-never-matches')
    return await this.decoyHash
  }
}
