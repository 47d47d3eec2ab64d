import { identityErrors, SSO_FAILURES } from './errors.js'
import { generateToken, hashToken } from '../platform/crypto.js'
import type { Clock } from '../platform/clock.js'
import type { SsoProviderConfig, SsoProviderName } from './config.js'
import type { Store, StoreCollection } from '../store/types.js'
import type { PlatformUser, PlatformUsers } from './users.js'
import type { RefreshSessions, SessionTokens } from './sessions.js'
import { claimedEmail, OidcClient, type Fetch, type OidcClientConfig } from './oidc-client.js'

type ProviderProfile = Pick<OidcClientConfig, 'label' | 'scope' | 'responseMode' | 'tokenEndpointAuth'>

/**
 * Apple returns the email (and, once, the name) only with response_mode=form_post
 * and authenticates clients only with client_secret_post; Google and Microsoft
 * take either, so each uses its documented default.
 */
const PROFILES: Record<SsoProviderName, ProviderProfile> = {
  google: { label: 'Google', scope: 'openid email profile', responseMode: 'query', tokenEndpointAuth: 'client_secret_basic' },
  microsoft: { label: 'Microsoft', scope: 'openid email profile', responseMode: 'query', tokenEndpointAuth: 'client_secret_post' },
  apple: { label: 'Apple', scope: 'openid email name', responseMode: 'form_post', tokenEndpointAuth: 'client_secret_post' }
}

type StateRecord = {
  provider: SsoProviderName
  nonce: string
  codeVerifier: string
  /** A validated `redirectTo`; null means the configured landing URL. */
  redirectTo: string | null
  expiresAt: Date
  createdAt: Date
}

type TicketRecord = { userId: string, expiresAt: Date, createdAt: Date }

/** What a provider sends back, by query (GET) or form post (Apple). */
export interface SsoCallbackParams {
  code?: string
  state?: string
  error?: string
  iss?: string
  /** Apple, on the first sign-in only: `{"name":{"firstName":…,"lastName":…},"email":…}` as a JSON string. */
  user?: string
}

/** Where to send the browser; `failure` says why when it carries `?error=`. */
export interface SsoRedirect {
  location: string
  failure: { code: string, cause: unknown } | null
}

export interface SingleSignOnDeps {
  clock: Clock
  providers: SsoProviderConfig[]
  /** The redirect URI registered at the provider. */
  callbackUrl: (provider: SsoProviderName) => string
  /** Where the browser lands with `?ticket=` or `?error=` unless start was given a `redirectTo`. */
  landingUrl: string
  allowedRedirectOrigins: string[]
  users: PlatformUsers
  sessions: RefreshSessions
  /** Ends every credential issued for an account before its verified owner took it over: sessions, PATs, SSH keys. */
  revokeCredentials: (userId: string) => Promise<void>
  /** Through the address guard (services/outbound/guarded-fetch.ts). */
  fetch: Fetch
  stateTtlSeconds?: number
  ticketTtlSeconds?: number
}

const STATE_TTL_SECONDS = 600
const TICKET_TTL_SECONDS = 60
const NAME_MAX_LENGTH = 200

const invalidTicket = () => identityErrors.invalidSsoTicket()
const invalidState = () => identityErrors.ssoInvalidState()

function withParam (base: string, name: string, value: string): string {
  const url = new URL(base)
  url.searchParams.set(name, value)
  return url.href
}

/** Only a provider-verified address may log into (or take over) the account holding it. */
function verifiedEmail (claims: Record<string, unknown>): string {
  const { email, verified } = claimedEmail(claims)
  if (!verified) throw identityErrors.ssoEmailNotVerified({ why: 'The provider has not verified this email address' })
  return email
}

function displayName (claims: Record<string, unknown>, appleUser: string | undefined): string {
  const text = (value: unknown) => typeof value === 'string' ? value.trim() : ''
  let name = text(claims.name) || [text(claims.given_name), text(claims.family_name)].filter(Boolean).join(' ')
  if (name === '' && appleUser !== undefined) {
    try {
      const parsed = JSON.parse(appleUser) as { name?: { firstName?: unknown, lastName?: unknown } } | null
      name = [text(parsed?.name?.firstName), text(parsed?.name?.lastName)].filter(Boolean).join(' ')
    } catch {}
  }
  return name.slice(0, NAME_MAX_LENGTH)
}

/**
 * Sign-in with OpenID providers (authorization code + PKCE + nonce). The
 * browser carries only an opaque state; everything else stays in the Store and
 * is consumed once. The result is a one-time ticket rather than tokens in the
 * URL, so the JWT and refresh token never appear in history or logs.
 */
export class SingleSignOn {
  private readonly clients = new Map<string, { name: SsoProviderName, client: OidcClient }>()
  private readonly states: StoreCollection<StateRecord>
  private readonly tickets: StoreCollection<TicketRecord>
  private readonly stateTtlMs: number
  private readonly ticketTtlMs: number
  private lastSweep = 0

  constructor (private readonly store: Store, private readonly deps: SingleSignOnDeps) {
    this.states = store.collection<StateRecord>('sso_states')
    this.tickets = store.collection<TicketRecord>('sso_tickets')
    this.stateTtlMs = (deps.stateTtlSeconds ?? STATE_TTL_SECONDS) * 1000
    this.ticketTtlMs = (deps.ticketTtlSeconds ?? TICKET_TTL_SECONDS) * 1000
    for (const provider of deps.providers) {
      const { name, clientId, clientSecret, issuer } = provider
      this.clients.set(name, {
        name,
        client: new OidcClient({ ...PROFILES[name], clientId, clientSecret, issuer }, {
          clock: deps.clock,
          fetch: deps.fetch,
          redirectUri: deps.callbackUrl(name)
        })
      })
    }
  }

  async init (): Promise<void> {
    await this.states.createIndex({ expiresAt: 1 })
    await this.tickets.createIndex({ expiresAt: 1 })
  }

  providers (): Array<{ id: SsoProviderName, name: string }> {
    return [...this.clients.values()].map(({ name, client }) => ({ id: name, name: client.config.label }))
  }

  async start (providerName: string, redirectTo?: string): Promise<SsoRedirect> {
    const { name, client } = this.client(providerName)
    const landing = redirectTo === undefined ? null : this.checkRedirect(redirectTo)
    try {
      const state = generateToken()
      const nonce = generateToken()
      const codeVerifier = generateToken()
      const location = await client.authorizationUrl({ state, nonce, codeVerifier })
      await this.sweep()
      const now = this.deps.clock.nowMs()
      await this.states.insertOne({
        _id: hashToken(state),
        provider: name,
        nonce,
        codeVerifier,
        redirectTo: landing,
        expiresAt: new Date(now + this.stateTtlMs),
        createdAt: new Date(now)
      })
      return { location, failure: null }
    } catch (error) {
      return this.fail(landing, error)
    }
  }

  /** Never throws past an unknown provider: every failure becomes a redirect carrying `?error=<code>`. */
  async callback (providerName: string, params: SsoCallbackParams): Promise<SsoRedirect> {
    const { name, client } = this.client(providerName)
    let landing: string | null = null
    try {
      const state = await this.consumeState(name, params.state)
      landing = state.redirectTo
      if (params.error !== undefined) throw identityErrors.ssoProviderError({ error: params.error })
      if (params.code === undefined) throw identityErrors.ssoInvalidResponse({ why: 'The provider sent no authorization code' })
      await client.checkResponseIssuer(params.iss)
      const { idToken } = await client.redeemCode(params.code, state.codeVerifier)
      const claims = await client.verifyIdToken(idToken, state.nonce)
      const { user, tookOver } = await this.deps.users.findOrCreateByVerifiedEmail(verifiedEmail(claims), displayName(claims, params.user))
      if (tookOver) await this.deps.revokeCredentials(user.id)
      const ticket = await this.issueTicket(user.id)
      return { location: withParam(landing ?? this.deps.landingUrl, 'ticket', ticket), failure: null }
    } catch (error) {
      return this.fail(landing, error)
    }
  }

  /** Trades a ticket for a session, once. */
  async exchange (ticket: string): Promise<{ user: PlatformUser } & SessionTokens> {
    const record = await this.tickets.findOneAndDelete({ _id: hashToken(ticket) })
    if (record === null || record.expiresAt.getTime() <= this.deps.clock.nowMs()) throw invalidTicket()
    const user = await this.deps.users.findById(record.userId)
    if (user === null) throw invalidTicket()
    return { user, ...await this.deps.sessions.start(user.id) }
  }

  private client (name: string): { name: SsoProviderName, client: OidcClient } {
    const client = this.clients.get(name)
    if (client === undefined) throw identityErrors.ssoProviderNotFound({ provider: name })
    return client
  }

  private checkRedirect (redirectTo: string): string {
    let url: URL | null = null
    try { url = new URL(redirectTo) } catch {}
    if (url === null || (url.protocol !== 'https:' && url.protocol !== 'http:') || !this.deps.allowedRedirectOrigins.includes(url.origin)) {
      throw identityErrors.ssoRedirectNotAllowed()
    }
    return url.href
  }

  /** Deleting on read makes the state single-use even when two callbacks race. */
  private async consumeState (provider: SsoProviderName, state: string | undefined): Promise<StateRecord> {
    if (state === undefined || state === '') throw invalidState()
    const record = await this.states.findOneAndDelete({ _id: hashToken(state), provider })
    if (record === null || record.expiresAt.getTime() <= this.deps.clock.nowMs()) throw invalidState()
    return record
  }

  private async issueTicket (userId: string): Promise<string> {
    const ticket = generateToken()
    const now = this.deps.clock.nowMs()
    await this.tickets.insertOne({ _id: hashToken(ticket), userId, expiresAt: new Date(now + this.ticketTtlMs), createdAt: new Date(now) })
    return ticket
  }

  private fail (landing: string | null, error: unknown): SsoRedirect {
    const code = (SSO_FAILURES.find((failure) => failure.is(error)) ?? identityErrors.ssoFailed).code
    return { location: withParam(landing ?? this.deps.landingUrl, 'error', code), failure: { code, cause: error } }
  }

  private async sweep (): Promise<void> {
    const now = this.deps.clock.nowMs()
    if (now - this.lastSweep < this.stateTtlMs) return
    this.lastSweep = now
    // However many a flood of started sign-ins left: a page per write.
    await this.store.extensions.sweep('sso_states').deleteMany({ expiresAt: { $lt: new Date(now) } })
    await this.store.extensions.sweep('sso_tickets').deleteMany({ expiresAt: { $lt: new Date(now) } })
  }
}
