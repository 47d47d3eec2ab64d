import { forbidden, notFound } from '../errors.js'
import type { Clock } from '../clock.js'
import { StateMemo } from '../state-memo.js'
import { tokenKey } from '../verified-token-cache.js'
import type { ProjectTokens } from './project-tokens.js'
import type { ProjectUsers, ProjectUser } from './project-users.js'

export interface ProjectSession {
  user: ProjectUser
  token: string
  tokenType: 'Bearer'
  expiresIn: number
  expiresAt: string
}

interface ProjectState { id: string, authEnabled: boolean }

export interface VerifyAnswer { valid: boolean, user?: ProjectUser }

/**
 * End-user auth of one project: public register and login while the project
 * has auth on, the caller's profile, verification for the project's servers,
 * and the admin mint. Users and tokens are separate services; this one holds
 * the rules that join them to the project's auth switch.
 */
export class ProjectAuth {
  private readonly answers: StateMemo<{ token: string, projectId: string, answer: VerifyAnswer, until: number }>

  constructor (private readonly deps: {
    users: ProjectUsers
    tokens: ProjectTokens
    clock: Clock
    /** The Store's state stamp of a collection (Store.stateStamp). */
    stateStamp: (collection: string) => number | null
    /** The Store collection holding projects, which a verify answer is read from with the project's users. */
    projectsCollection: string
    findProject: (projectId: string) => Promise<ProjectState | null>
    /** Removes what a deleted project left behind (idempotent). */
    sweepDeleted: (projectId: string) => Promise<void>
  }) {
    this.answers = new StateMemo(deps.stateStamp)
  }

  async register (projectId: string, input: { email: string, password: string, extraFields?: Record<string, unknown> }): Promise<ProjectSession> {
    await this.requireAuthOn(projectId)
    const user = await this.deps.users.register(projectId, input)
    // Hashing takes a while; if the project was deleted meanwhile, this insert recreated its users collection.
    if (await this.deps.findProject(projectId) === null) {
      await this.deps.sweepDeleted(projectId)
      throw notFound('APP_PROJECT_NOT_FOUND', 'Project not found')
    }
    return this.session(projectId, user)
  }

  async login (projectId: string, email: string, password: string): Promise<ProjectSession> {
    await this.requireAuthOn(projectId)
    return this.session(projectId, await this.deps.users.authenticate(projectId, email, password))
  }

  /** Null when the token is not a live project JWT of this project or its user is gone. */
  async userOf (projectId: string, token: string): Promise<ProjectUser | null> {
    const claims = this.deps.tokens.verify(projectId, token)
    if (claims === null) return null
    return await this.deps.users.findById(projectId, claims.userId)
  }

  /**
   * The answer verify gives, when it can be given from memory without a
   * promise: a valid answer remembered in the current state of the project
   * and its users, for a token still alive. Undefined otherwise.
   */
  verifyKnown (projectId: string, token: string): VerifyAnswer | undefined {
    const known = this.answers.get(tokenKey(token), this.answerStamp(projectId))
    return known !== undefined && known.token === token && known.projectId === projectId && known.until > this.deps.clock.nowMs() ? known.answer : undefined
  }

  /**
   * A project's servers ask this for every request they serve, so a valid
   * answer is reused while the state of the project and its users holds and
   * the token lives; refusals are always worked out afresh.
   */
  async verify (projectId: string, token: string): Promise<VerifyAnswer> {
    const known = this.verifyKnown(projectId, token)
    if (known !== undefined) return known
    const stamp = this.answerStamp(projectId)
    const project = await this.deps.findProject(projectId)
    const claims = project === null || !project.authEnabled ? null : this.deps.tokens.verify(projectId, token)
    const user = claims === null ? null : await this.deps.users.findById(projectId, claims.userId)
    if (claims === null || user === null) return { valid: false }
    const answer = { valid: true, user }
    // Found by the token's tail and confirmed against the whole token (see tokenKey); a valid token belongs to one project.
    this.answers.set(tokenKey(token), stamp, { token, projectId, answer, until: claims.expiresAtMs })
    return answer
  }

  /** The state a verify answer is read from: the project record and the project's users. */
  private answerStamp (projectId: string): number | null {
    return this.answers.stamp(this.deps.projectsCollection, this.deps.users.collectionName(projectId))
  }

  /** For the API tester: works whether or not auth is on, but only for an existing end user. */
  async mint (projectId: string, userId: string): Promise<ProjectSession> {
    return this.session(projectId, await this.deps.users.get(projectId, userId))
  }

  async requireAuthOn (projectId: string): Promise<void> {
    const project = await this.deps.findProject(projectId)
    if (project === null) throw notFound('APP_PROJECT_NOT_FOUND', 'Project not found')
    if (!project.authEnabled) throw forbidden('APP_PROJECT_AUTH_DISABLED', 'End-user auth is switched off for this project')
  }

  private session (projectId: string, user: ProjectUser): ProjectSession {
    const { token, expiresIn, expiresAt } = this.deps.tokens.sign(projectId, user.id)
    return { user, token, tokenType: 'Bearer', expiresIn, expiresAt }
  }
}
