import { identityErrors, SSO_FAILURES } from './errors.js'
import type { Clock } from '../platform/clock.js'
import type { SsoProviderConfig, SsoProviderName } from './config.js'
import type { Store } from '../store/types.js'
import { SignInFlows, type SignInCallbackParams, type StartedSignIn } from './sign-in-flows.js'
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

/** What a provider sends back, by query (GET) or form post (Apple). */
export interface SsoCallbackParams extends SignInCallbackParams {
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
}

const NAME_MAX_LENGTH = 200
/** The platform's scope in the sign-in flows, which projects' sign-ins name by their ids. */
const PLATFORM = ''

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
 * Platform sign-in with the OpenID providers the server is configured for,
 * through the one sign-in mechanism (sign-in-flows.ts): PKCE, state and nonce,
 * the state bound to the browser, and a one-time ticket bound to the app that
 * started the sign-in.
 */
export class SingleSignOn {
  private readonly clients = new Map<string, { name: SsoProviderName, client: OidcClient }>()
  private readonly flows: SignInFlows

  constructor (store: Store, private readonly deps: SingleSignOnDeps) {
    this.flows = new SignInFlows(store, { clock: deps.clock, collections: { states: 'sso_states', tickets: 'sso_tickets' } })
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
    await this.flows.init()
  }

  providers (): Array<{ id: SsoProviderName, name: string }> {
    return [...this.clients.values()].map(({ name, client }) => ({ id: name, name: client.config.label }))
  }

  /** `started` is null when the provider could not be reached: the browser goes to `location` with `?error=`. */
  async start (providerName: string, codeChallenge: string, redirectTo?: string): Promise<SsoRedirect & { started: StartedSignIn | null }> {
    const { name, client } = this.client(providerName)
    const landing = redirectTo === undefined ? null : this.checkRedirect(redirectTo)
    try {
      const started = await this.flows.begin(client, { scope: PLATFORM, provider: name, redirectTo: landing, codeChallenge })
      return { location: started.location, failure: null, started }
    } catch (error) {
      return { ...this.fail(landing, error), started: null }
    }
  }

  /** Never throws past an unknown provider: every failure becomes a redirect carrying `?error=<code>`. */
  async callback (providerName: string, params: SsoCallbackParams, binding: string | undefined): Promise<SsoRedirect> {
    const { name, client } = this.client(providerName)
    let landing: string | null = null
    try {
      const flow = await this.flows.resume(PLATFORM, name, params.state, binding)
      landing = flow.redirectTo
      const claims = await this.flows.identify(client, flow, params)
      const { user, tookOver } = await this.deps.users.findOrCreateByVerifiedEmail(verifiedEmail(claims), displayName(claims, params.user))
      if (tookOver) await this.deps.revokeCredentials(user.id)
      const ticket = await this.flows.issueTicket(flow, user.id)
      return { location: withParam(landing ?? this.deps.landingUrl, 'ticket', ticket), failure: null }
    } catch (error) {
      return this.fail(landing, error)
    }
  }

  /** Trades a ticket for a session, once, given the verifier of the challenge its sign-in started with. */
  async exchange (ticket: string, codeVerifier: string): Promise<{ user: PlatformUser } & SessionTokens> {
    const userId = await this.flows.redeemTicket(PLATFORM, ticket, codeVerifier)
    const user = await this.deps.users.findById(userId)
    if (user === null) throw identityErrors.invalidSsoTicket()
    return { user, ...await this.deps.sessions.start(user.id) }
  }

  /** 404 for a provider this server is not configured for. */
  requireProvider (name: string): void {
    this.client(name)
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

  private fail (landing: string | null, error: unknown): SsoRedirect {
    const code = (SSO_FAILURES.find((failure) => failure.is(error)) ?? identityErrors.ssoFailed).code
    return { location: withParam(landing ?? this.deps.landingUrl, 'error', code), failure: { code, cause: error } }
  }
}
