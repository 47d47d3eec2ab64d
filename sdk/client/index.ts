/**
 * @plinth/sdk/client: a project's end-user side (`/api/p/:projectId/…`):
 * sign-up, login and a session kept and refreshed for you, collections with
 * typed filters and cursors, files. Runs in browsers and in Node (no Node
 * module is imported on this path; the file storage is in @plinth/sdk/node).
 */
import { createHttp, expectOk, unwrap, type Http, type HttpOptions } from '../core/http.js'
import { signInFlow } from '../core/pkce.js'
import { Collection } from './collection.js'
import { SessionKeeper, type ProjectUser, type Session } from './session.js'
import { memoryStorage, type SessionStorage } from './storage.js'
import { subscribe, type RealtimeChange, type RealtimeGap, type RealtimeSubscription, type SubscribeOptions, type WebSocketConstructor } from './realtime.js'
import type { CollectionMap, FieldsOf } from './types.js'

export { PlinthError } from '../core/errors.js'
export type { ErrorDetails, ErrorEnvelope } from '../core/errors.js'
export { Collection, ifMatch, type BulkDelete, type BulkUpdate, type IfMatch } from './collection.js'
export type { Download, DownloadOptions, FileDescriptor, UploadOptions, UploadProgress, UploadResult, UploadSession } from './files.js'
export type { ProjectUser, Session } from './session.js'
export type { RealtimeChange, RealtimeGap, RealtimeSubscription, SubscribeOptions, WebSocketConstructor, WebSocketLike } from './realtime.js'
export { localStorageAdapter, memoryStorage, type SessionStorage } from './storage.js'
export type { CollectionMap, FieldOperators, FieldsOf, Filter, ListQuery, Page, RecordMeta, RecordOf, SortKey, Values } from './types.js'

export interface ClientOptions extends HttpOptions {
  projectId: string
  /** Where the session is kept: memoryStorage() by default, localStorageAdapter() in a browser, fileStorage() from @plinth/sdk/node. */
  storage?: SessionStorage
  /** The storage key; one per project by default. */
  storageKey?: string
  /** Refresh this many seconds before the access token expires. Default 60. */
  refreshMarginSeconds?: number
  /** The WebSocket class for `subscribe(…, { transport: 'websocket' })`: the platform's by default; the `ws` package in Node before 22. */
  WebSocket?: WebSocketConstructor
}

export interface Credentials { email: string, password: string }

/** The end-user client of one project. `Collections` maps collection names to their fields (see `plinth gen types`). */
export class PlinthClient<Collections extends CollectionMap = Record<string, Record<string, unknown>>> {
  readonly projectId: string
  private readonly http: Http
  private readonly session: SessionKeeper
  private readonly WebSocket: WebSocketConstructor | undefined
  private readonly storage: SessionStorage
  private readonly storageKey: string

  constructor (options: ClientOptions) {
    this.projectId = options.projectId
    this.WebSocket = options.WebSocket
    const anonymous = createHttp(options)
    const trade = async (refreshToken: string) => await anonymous.api.POST('/api/p/{projectId}/auth/refresh', { params: { path: { projectId: this.projectId } }, body: { refreshToken } })
    this.storage = options.storage ?? memoryStorage()
    this.storageKey = options.storageKey ?? `plinth.session.${options.projectId}`
    this.session = new SessionKeeper(trade, this.storage, this.storageKey, options.refreshMarginSeconds ?? 60)
    this.http = createHttp({ ...options, token: async () => await this.session.token(), renew: async (sent) => await this.session.renew(sent) })
  }

  readonly auth = {
    /** Creates the account and keeps its session. `extraFields` go to the user's `_users` record. */
    signUp: async (credentials: Credentials & { extraFields?: Record<string, unknown> }): Promise<Session> => {
      const issued = await unwrap(this.http.api.POST('/api/p/{projectId}/auth/register', { params: { path: { projectId: this.projectId } }, body: credentials }))
      return await this.session.keep(issued)
    },
    login: async (credentials: Credentials): Promise<Session> => {
      const issued = await unwrap(this.http.api.POST('/api/p/{projectId}/auth/login', { params: { path: { projectId: this.projectId } }, body: credentials }))
      return await this.session.keep(issued)
    },
    /** Trades the refresh token for a new session now (calls do this by themselves before expiry). */
    refresh: async (): Promise<Session | null> => await this.session.refresh(),
    /** Ends the session on the server and forgets it here. */
    logout: async (): Promise<void> => {
      const session = await this.session.current()
      if (session === null) return
      try {
        await expectOk(this.http.api.POST('/api/p/{projectId}/auth/logout', { params: { path: { projectId: this.projectId } }, body: { refreshToken: session.refreshToken } }))
      } finally {
        await this.session.clear()
      }
    },
    /** The signed-in user, as the server knows them now. */
    me: async (): Promise<ProjectUser> => await unwrap(this.http.api.GET('/api/p/{projectId}/auth/me', { params: { path: { projectId: this.projectId } } })),
    changePassword: async (currentPassword: string, newPassword: string): Promise<Session> => {
      const issued = await unwrap(this.http.api.POST('/api/p/{projectId}/auth/password', { params: { path: { projectId: this.projectId } }, body: { currentPassword, newPassword } }))
      return await this.session.keep(issued)
    },
    /**
     * The end-user email flows (docs/projects.md#end-user-email-flows): each
     * `request…` mails a link to the address and answers the same whether or
     * not it has an account; the link's `token` query parameter goes to the
     * matching `confirm…`.
     */
    requestVerification: async (email: string): Promise<void> => {
      await unwrap(this.http.api.POST('/api/p/{projectId}/auth/verification/request', { params: { path: { projectId: this.projectId } }, body: { email } }))
    },
    confirmVerification: async (token: string): Promise<void> => {
      await unwrap(this.http.api.POST('/api/p/{projectId}/auth/verification/confirm', { params: { path: { projectId: this.projectId } }, body: { token } }))
    },
    requestPasswordReset: async (email: string): Promise<void> => {
      await unwrap(this.http.api.POST('/api/p/{projectId}/auth/password-reset/request', { params: { path: { projectId: this.projectId } }, body: { email } }))
    },
    /** Sets the new password; every session the user held ends, so sign in with it afterwards. */
    confirmPasswordReset: async (token: string, newPassword: string): Promise<void> => {
      await unwrap(this.http.api.POST('/api/p/{projectId}/auth/password-reset/confirm', { params: { path: { projectId: this.projectId } }, body: { token, newPassword } }))
    },
    /** Signed in: mails a confirmation link to the new address. */
    requestEmailChange: async (newEmail: string): Promise<void> => {
      await unwrap(this.http.api.POST('/api/p/{projectId}/auth/email-change/request', { params: { path: { projectId: this.projectId } }, body: { newEmail } }))
    },
    /** Answers the new address; every session the user held ends, so sign in again with it. */
    confirmEmailChange: async (token: string): Promise<string> => {
      const { email } = await unwrap(this.http.api.POST('/api/p/{projectId}/auth/email-change/confirm', { params: { path: { projectId: this.projectId } }, body: { token } }))
      return email
    },
    requestMagicLink: async (email: string): Promise<void> => {
      await unwrap(this.http.api.POST('/api/p/{projectId}/auth/magic-link/request', { params: { path: { projectId: this.projectId } }, body: { email } }))
    },
    /** Signs in with a magic link's token and keeps the session. */
    signInWithMagicLink: async (token: string): Promise<Session> => {
      const issued = await unwrap(this.http.api.POST('/api/p/{projectId}/auth/magic-link/confirm', { params: { path: { projectId: this.projectId } }, body: { token } }))
      return await this.session.keep(issued)
    },
    /** The project's enabled OAuth/OIDC sign-in providers (docs/projects.md). */
    oauthProviders: async (): Promise<Array<{ id: string, label: string, startUrl: string }>> =>
      await unwrap(this.http.api.GET('/api/p/{projectId}/auth/oauth/providers', { params: { path: { projectId: this.projectId } } })),
    /**
     * Where to send the browser to sign in with `provider`; it comes back to
     * `redirectTo` with `?ticket=` or `?error=`. A PKCE verifier is made and
     * kept in the client's storage (one per sign-in, named by a `plinthFlow`
     * parameter added to `redirectTo`), and its S256 challenge sent.
     */
    oauthStartUrl: async (provider: string, redirectTo: string): Promise<string> => {
      const { landing, codeChallenge } = await signInFlow.start(this.storage, `${this.storageKey}.oauth`, redirectTo)
      const query = new URLSearchParams({ redirectTo: landing, codeChallenge })
      return `${this.http.baseUrl}/api/p/${encodeURIComponent(this.projectId)}/auth/oauth/${encodeURIComponent(provider)}/start?${query.toString()}`
    },
    /**
     * Trades the ticket of the URL the browser landed on (`location.href`) for
     * a session, with the verifier `oauthStartUrl` kept for it, and keeps the
     * session. A landing with `?error=` throws that code.
     */
    exchangeOauthTicket: async (landedAt: string): Promise<Session> => {
      const body = await signInFlow.land(this.storage, `${this.storageKey}.oauth`, landedAt, 'SDK_NO_OAUTH_SIGN_IN')
      const issued = await unwrap(this.http.api.POST('/api/p/{projectId}/auth/oauth/exchange', { params: { path: { projectId: this.projectId } }, body }))
      return await this.session.keep(issued)
    },
    /** The signed-in user's linked provider identities, oldest link first. */
    oauthIdentities: async (): Promise<Array<{ provider: string, linkedAt: string, email: string | null }>> =>
      await unwrap(this.http.api.GET('/api/p/{projectId}/auth/me/identities', { params: { path: { projectId: this.projectId } } })),
    /** Unlinks the signed-in user's identity at `provider`; refused (409 `APP_OAUTH_LAST_SIGN_IN_METHOD`) when it is their only way in. */
    unlinkOauthIdentity: async (provider: string): Promise<void> => {
      await unwrap(this.http.api.DELETE('/api/p/{projectId}/auth/me/identities/{provider}', { params: { path: { projectId: this.projectId, provider } } }))
    },
    /** The kept session, or null. */
    session: async (): Promise<Session | null> => await this.session.current(),
    onChange: (listener: (session: Session | null) => void): (() => void) => this.session.onChange(listener)
  }

  /**
   * Follows record changes as the signed-in user's rules show them (or as
   * anyone's, signed out): `for await (const change of client.subscribe([{ collection: 'posts' }]))`.
   * Reconnects by itself with the last event id; see docs/realtime.md.
   * `transport: 'websocket'` uses one WebSocket instead of Server-Sent Events.
   */
  subscribe<T = Record<string, unknown>> (subscriptions: RealtimeSubscription[], options?: SubscribeOptions): AsyncGenerator<RealtimeChange<T> | RealtimeGap> {
    return subscribe<T>(this.http, this.projectId, subscriptions, options, { token: async () => await this.session.token(), WebSocket: this.WebSocket })
  }

  collection<Name extends Extract<keyof Collections, string>> (name: Name): Collection<FieldsOf<Collections, Name>> {
    return new Collection<FieldsOf<Collections, Name>>(this.http, this.projectId, name)
  }
}

export function createClient<Collections extends CollectionMap = Record<string, Record<string, unknown>>> (options: ClientOptions): PlinthClient<Collections> {
  return new PlinthClient<Collections>(options)
}
