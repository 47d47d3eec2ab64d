import { commonErrors } from '../platform/errors.js'
import { identityErrors } from '../identity/errors.js'
import { projectErrors } from './errors.js'
import type { Clock } from '../platform/clock.js'
import { FrozenMemo } from '../cache/frozen-memo.js'
import type { ProjectTokens } from './project-tokens.js'
import type { ProjectUsers, ProjectUser, ProjectAccount } from './project-users.js'
import type { IssuedAccess, RefreshSessions } from '../identity/sessions.js'
import { isoString } from '../platform/iso-dates.js'

/** A project JWT for a user, without a session behind it (the admin mint). */
export interface ProjectAccess {
  user: ProjectUser
  accessToken: string
  tokenType: 'Bearer'
  expiresIn: number
  expiresAt: string
}

/** What sign-up, login and refresh answer: a short-lived project JWT and the refresh token that renews it. */
export interface ProjectSession extends ProjectAccess {
  refreshToken: string
  refreshExpiresAt: string
}

interface ProjectState { id: string, authEnabled: boolean }

export interface VerifyAnswer { valid: boolean, user?: ProjectUser }

const INVALID: VerifyAnswer = Object.freeze({ valid: false })
// One answer object per account, so a project's servers asking about the same user get the same frozen answer.
const validAnswer = new FrozenMemo((account: ProjectAccount): VerifyAnswer => ({ valid: true, user: account.user }))

/** Whether an account's token may act: not once it is disabled, nor once its session epoch moved past the token's. */
function holds (account: ProjectAccount | null, tokenEpoch: number): account is ProjectAccount {
  return account !== null && !account.disabled && account.sessionEpoch === tokenEpoch
}

/** Told when users' sessions end (deleted, disabled, password changed or reset), after the change is stored. */
export type SessionsEnded = (projectId: string, userIds: readonly string[]) => Promise<void>

/**
 * End-user auth of one project: public register and login while the project
 * has auth on, the caller's profile, verification for the project's servers,
 * and the admin mint. Users and tokens are separate services; this one holds
 * the rules that join them to the project's auth switch.
 */
export class ProjectAuth {
  private readonly sessionsEndedListeners: SessionsEnded[] = []

  constructor (private readonly deps: {
    users: ProjectUsers
    tokens: ProjectTokens
    /** End users' refresh tokens, scoped by project. */
    sessions: RefreshSessions
    clock: Clock
    findProject: (projectId: string) => Promise<ProjectState | null>
    /** Fields the project's `_users` reads (list, get) deny: end users' answers about themselves leave them out too. */
    hiddenFromUsers: (projectId: string) => Promise<ReadonlySet<string>>
    /** Removes what a deleted project left behind (idempotent). */
    sweepDeleted: (projectId: string) => Promise<void>
    /** Whether the project's email settings refuse sign-in until the address is verified. */
    requiresVerifiedEmail: (projectId: string) => Promise<boolean>
  }) {}

  async register (projectId: string, input: { email: string, password: string, extraFields?: Record<string, unknown> }): Promise<ProjectSession> {
    await this.requireAuthOn(projectId)
    const user = await this.deps.users.register(projectId, input)
    // Hashing takes a while; if the project was deleted meanwhile, this insert recreated its users collection.
    if (await this.deps.findProject(projectId) === null) {
      await this.deps.sweepDeleted(projectId)
      throw commonErrors.projectNotFound()
    }
    // The account stays: the verification link it asks for next signs it in through login.
    await this.requireVerified(projectId, user)
    return await this.startSession(projectId, user, 0)
  }

  async login (projectId: string, email: string, password: string): Promise<ProjectSession> {
    await this.requireAuthOn(projectId)
    const account = await this.deps.users.authenticate(projectId, email, password)
    if (account.disabled) throw projectErrors.userDisabled()
    await this.requireVerified(projectId, account.user)
    return await this.startSession(projectId, account.user, account.sessionEpoch)
  }

  /** Sign-in by a magic link mailed to the user: the link proved the address, as a password would the account. */
  async signInByLink (projectId: string, account: ProjectAccount): Promise<ProjectSession> {
    await this.requireAuthOn(projectId)
    if (account.disabled) throw projectErrors.userDisabled()
    return await this.startSession(projectId, account.user, account.sessionEpoch)
  }

  /** Sign-in through the project's OpenID provider, which proved who the user is; the project may still want a verified address. */
  async signInWithProvider (projectId: string, account: ProjectAccount): Promise<ProjectSession> {
    await this.requireAuthOn(projectId)
    if (account.disabled) throw projectErrors.userDisabled()
    await this.requireVerified(projectId, account.user)
    return await this.startSession(projectId, account.user, account.sessionEpoch)
  }

  private async requireVerified (projectId: string, user: ProjectUser): Promise<void> {
    if (user.emailVerified !== true && await this.deps.requiresVerifiedEmail(projectId)) throw projectErrors.emailNotVerified()
  }

  /** Rotates the refresh token; the user must still exist, be enabled, and the project have auth on. */
  async refresh (projectId: string, refreshToken: string): Promise<ProjectSession> {
    await this.requireAuthOn(projectId)
    const { userId, accessToken, expiresIn, refreshToken: next, refreshExpiresAt } = await this.deps.sessions.refresh(refreshToken, projectId)
    const account = await this.deps.users.account(projectId, userId)
    if (account === null) throw identityErrors.invalidRefreshToken()
    await this.requireVerified(projectId, account.user)
    return { user: await this.profile(projectId, account.user), accessToken, tokenType: 'Bearer', expiresIn, expiresAt: this.expiresAt(expiresIn), refreshToken: next, refreshExpiresAt }
  }

  async logout (projectId: string, refreshToken: string): Promise<void> {
    await this.deps.sessions.logout(refreshToken, projectId)
  }

  /** Every other session of the user ends; the caller gets a fresh one. */
  async changePassword (projectId: string, userId: string, current: string, next: string): Promise<ProjectSession> {
    await this.deps.users.changePassword(projectId, userId, current, next)
    await this.deps.sessions.revokeUser(userId, projectId)
    await this.tellSessionsEnded(projectId, [userId])
    return await this.startSession(projectId, await this.deps.users.get(projectId, userId))
  }

  /** For a user deleted or disabled: their refresh tokens die, and the access tokens they hold stop at once. */
  async endSessions (projectId: string, userIds: string[]): Promise<void> {
    await this.deps.users.endSessions(projectId, userIds)
    for (const userId of userIds) await this.deps.sessions.revokeUser(userId, projectId)
    await this.tellSessionsEnded(projectId, userIds)
  }

  /** Whoever holds something open on a user's credential (realtime streams) ends it at once rather than at its next check. */
  onSessionsEnded (listener: SessionsEnded): void {
    this.sessionsEndedListeners.push(listener)
  }

  private async tellSessionsEnded (projectId: string, userIds: readonly string[]): Promise<void> {
    if (userIds.length === 0) return
    for (const listener of this.sessionsEndedListeners) await listener(projectId, userIds)
  }

  /** A `_users` record changed through the data API: one set `disabled` loses every session. */
  async usersUpdated (projectId: string, userIds: string[], changes: Record<string, unknown>): Promise<void> {
    if (changes.disabled === true) await this.endSessions(projectId, userIds)
  }

  /**
   * The end user a project JWT acts for on this project's routes: what
   * verify says, so the two never disagree. 404 or 403 when the project is
   * why, 401 else.
   */
  async endUser (projectId: string, token: string): Promise<ProjectUser> {
    const answer = await this.verify(projectId, token)
    if (answer.user !== undefined) return answer.user
    await this.requireAuthOn(projectId)
    throw commonErrors.invalidToken({ why: 'The token is not a live project token of this project, or its user is gone, disabled or signed out everywhere' })
  }

  /** A live token of this project while it has auth on, of a user present, enabled and still in the session it was issued in. */
  async verify (projectId: string, token: string): Promise<VerifyAnswer> {
    const project = await this.deps.findProject(projectId)
    const claims = project === null || !project.authEnabled ? null : this.deps.tokens.verify(projectId, token)
    const account = claims === null ? null : await this.deps.users.account(projectId, claims.userId)
    return claims !== null && holds(account, claims.sessionEpoch) ? validAnswer.get(account) : INVALID
  }

  /** For the API tester: works whether or not auth is on, but only for an existing, enabled end user; no refresh token. */
  async mint (projectId: string, userId: string): Promise<ProjectAccess> {
    const account = await this.deps.users.account(projectId, userId)
    if (account === null) throw commonErrors.userNotFound({ endUser: true })
    if (account.disabled) throw projectErrors.mintForDisabledUser()
    const { token, expiresIn, expiresAt } = this.deps.tokens.sign(projectId, userId, account.sessionEpoch)
    return { user: account.user, accessToken: token, tokenType: 'Bearer', expiresIn, expiresAt }
  }

  async requireAuthOn (projectId: string): Promise<void> {
    const project = await this.deps.findProject(projectId)
    if (project === null) throw commonErrors.projectNotFound()
    if (!project.authEnabled) throw projectErrors.authDisabled()
  }

  /** A user as they may see themselves: without what the project's `_users` rules keep from its end users. */
  async profile (projectId: string, user: ProjectUser): Promise<ProjectUser> {
    const hidden = await this.deps.hiddenFromUsers(projectId)
    if (hidden.size === 0) return user
    return Object.fromEntries(Object.entries(user).filter(([field]) => !hidden.has(field))) as ProjectUser
  }

  /** `sessionEpoch`: the one the password was checked under, when a password was; a new user's is 0. */
  private async startSession (projectId: string, user: ProjectUser, sessionEpoch?: number): Promise<ProjectSession> {
    const { accessToken, expiresIn, refreshToken, refreshExpiresAt } = await this.deps.sessions.start(user.id, projectId, sessionEpoch)
    return { user: await this.profile(projectId, user), accessToken, tokenType: 'Bearer', expiresIn, expiresAt: this.expiresAt(expiresIn), refreshToken, refreshExpiresAt }
  }

  /**
   * A project JWT for a session, which RefreshSessions asks for on start and
   * each refresh: null once the project has auth off or the user may no
   * longer hold a session, which ends the session.
   */
  async issueAccess (userId: string, projectId: string, sessionEpoch: number | undefined): Promise<IssuedAccess | null> {
    const project = await this.deps.findProject(projectId)
    const account = project?.authEnabled === true ? await this.deps.users.account(projectId, userId) : null
    if (account === null || account.disabled || (sessionEpoch !== undefined && sessionEpoch !== account.sessionEpoch)) return null
    const { token, expiresIn } = this.deps.tokens.sign(projectId, userId, account.sessionEpoch)
    return { accessToken: token, expiresIn, sessionEpoch: account.sessionEpoch }
  }

  private expiresAt (expiresIn: number): string {
    return isoString(new Date(this.deps.clock.nowMs() + expiresIn * 1000))
  }
}
