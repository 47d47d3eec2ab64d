import type { components } from '../generated/plinth.js'
import { PlinthError } from '../core/errors.js'
import type { SessionStorage } from './storage.js'

export type ProjectUser = components['schemas']['ProjectUser']

/** What sign-up, login and refresh answer, as the client stores it (`User`: a project's end user, or a platform user for the admin). */
export interface Session<User = ProjectUser> {
  user: User
  accessToken: string
  refreshToken: string
  /** ISO date-time the access token stops working. */
  expiresAt: string
  refreshExpiresAt: string
}

export interface Issued<User = ProjectUser> { accessToken: string, refreshToken: string, expiresAt: string, refreshExpiresAt: string, user?: User }

/** How a session's refresh token is traded: the server's answer to its refresh route, as openapi-fetch gives it. */
export type RefreshTrade<User> = (refreshToken: string) => Promise<{ data?: { data: Issued<User> }, error?: unknown, response: Response }>

/**
 * The end user's session: kept in the storage given, handed out as a bearer
 * token, and refreshed `refreshMarginSeconds` before it expires. Refreshing is
 * single-flight: however many calls find the token due at once, one refresh
 * request is made and they all wait for it (a second would present a rotated
 * refresh token and, past the server's grace, end the session).
 */
export class SessionKeeper<User = ProjectUser> {
  private refreshing: Promise<Session<User> | null> | null = null
  private listeners = new Set<(session: Session<User> | null) => void>()

  constructor (
    /** Sends the refresh request, with no bearer token: refresh authenticates by its body alone. */
    private readonly trade: RefreshTrade<User>,
    private readonly storage: SessionStorage,
    private readonly key: string,
    private readonly refreshMarginSeconds: number
  ) {}

  async current (): Promise<Session<User> | null> {
    const raw = await this.storage.get(this.key)
    if (raw === null) return null
    try {
      return JSON.parse(raw) as Session<User>
    } catch {
      await this.storage.remove(this.key)
      return null
    }
  }

  /** Keeps what an auth call answered; the user stays the last one known when a refresh does not name it. */
  async keep (issued: Issued<User>, user?: User): Promise<Session<User>> {
    const known = issued.user ?? user
    if (known === undefined) throw new PlinthError(0, 'SDK_NO_USER', 'an auth answer without its user')
    const session: Session<User> = { user: known, accessToken: issued.accessToken, refreshToken: issued.refreshToken, expiresAt: issued.expiresAt, refreshExpiresAt: issued.refreshExpiresAt }
    await this.storage.set(this.key, JSON.stringify(session))
    this.emit(session)
    return session
  }

  async clear (): Promise<void> {
    await this.storage.remove(this.key)
    this.emit(null)
  }

  onChange (listener: (session: Session<User> | null) => void): () => void {
    this.listeners.add(listener)
    return () => { this.listeners.delete(listener) }
  }

  /** The access token to send, refreshed first when it is due; null without a session. */
  async token (): Promise<string | null> {
    const session = await this.current()
    if (session === null) return null
    if (Date.parse(session.expiresAt) - this.refreshMarginSeconds * 1000 > Date.now()) return session.accessToken
    return (await this.refresh())?.accessToken ?? null
  }

  /**
   * After the server refused `sent` as no longer valid (401
   * APP_INVALID_TOKEN; a token of the wrong kind has its own code and never
   * comes here): the token to try again with, or null. The access token may have ended before the time kept for it (a
   * computer's clock that is off, a laptop woken from sleep): unless another
   * call has refreshed since, this one refreshes. A refused refresh ends the
   * session and gives null.
   */
  async renew (sent: string): Promise<string | null> {
    const session = await this.current()
    if (session === null) return null
    if (session.accessToken !== sent) return session.accessToken
    try {
      return (await this.refresh())?.accessToken ?? null
    } catch {
      return null
    }
  }

  /** Trades the refresh token for a new session, once for every caller waiting on it. */
  async refresh (): Promise<Session<User> | null> {
    this.refreshing ??= this.refreshOnce().finally(() => { this.refreshing = null })
    return await this.refreshing
  }

  private async refreshOnce (): Promise<Session<User> | null> {
    const session = await this.current()
    if (session === null) return null
    const { data, error, response } = await this.trade(session.refreshToken)
    if (data === undefined) {
      // A refused refresh token (expired, revoked, reused) ends the session; anything else may pass.
      if (response.status === 401 || response.status === 403) await this.clear()
      throw PlinthError.fromAnswer(response, error)
    }
    return await this.keep(data.data, session.user)
  }

  private emit (session: Session<User> | null): void {
    for (const listener of this.listeners) listener(session)
  }
}
