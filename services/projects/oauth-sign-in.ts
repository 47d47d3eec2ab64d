import { createHash } from 'node:crypto'
import { identityErrors, SSO_FAILURES } from '../identity/errors.js'
import { projectErrors } from './errors.js'
import { claimedEmail, OidcClient, type Fetch } from '../identity/oidc-client.js'
import { SignInFlows, type SignInCallbackParams, type SignInClient, type StartedSignIn } from '../identity/sign-in-flows.js'
import { GithubClient } from '../identity/github-client.js'
import type { Clock } from '../platform/clock.js'
import { isoString } from '../platform/iso-dates.js'
import type { Store, StoreCollection } from '../store/types.js'
import type { ProjectAuth, ProjectSession } from './project-auth.js'
import type { ProjectAccount, ProjectUsers } from './project-users.js'
import type { OauthProviders, OpenedProvider } from './oauth-providers.js'

/** `email`: the address the provider proved when the link was made (absent on links made before it was kept). */
type IdentityRecord = { projectId: string, provider: string, subject: string, userId: string, email?: string, createdAt: Date }

/** A provider identity as its end user sees it. */
export interface LinkedIdentity { provider: string, linkedAt: string, email: string | null }

/** Where to send the browser, and why a sign-in did not complete. */
export interface OauthLanding { location: string, failure: { code: string, cause: unknown } | null }

/** More than a user can link: one identity per enabled provider, but for a second account at the same one. */
export const MAX_LISTED_IDENTITIES = 100

/** What a sign-in that did not complete lands with (`?error=`); anything else lands as `identityErrors.ssoFailed`. */
export const OAUTH_FAILURES = [
  ...SSO_FAILURES, projectErrors.oauthProviderDisabled, projectErrors.oauthProviderNotFound, projectErrors.authDisabled, projectErrors.oauthHostRefused
]

const identityKey = (projectId: string, provider: string, issuer: string, subject: string): string =>
  createHash('sha256').update(JSON.stringify([projectId, provider, issuer, subject])).digest('base64url')

const IDENTITIES = 'project_oauth_identities'

function withParam (base: string, name: string, value: string): string {
  const url = new URL(base)
  url.searchParams.set(name, value)
  return url.href
}

/**
 * End users' sign-in through a project's own providers, on the platform
 * SSO's mechanism (services/identity/sign-in-flows.ts: PKCE, state and nonce,
 * the state bound to the browser, a one-time ticket bound to the app), every
 * call through the address guard. The ticket is traded for the project's
 * normal session.
 */
export class OauthSignIn {
  private readonly flows: SignInFlows
  private readonly identities: StoreCollection<IdentityRecord>
  /** By `<projectId>/<provider>`: the client built from the settings whose fingerprint it holds. */
  private readonly clients = new Map<string, { fingerprint: string, client: SignInClient }>()

  constructor (private readonly store: Store, private readonly deps: {
    clock: Clock
    providers: OauthProviders
    users: ProjectUsers
    auth: ProjectAuth
    /** Through the address guard (services/outbound/guarded-fetch.ts). */
    fetch: Fetch
    callbackUrl: (projectId: string, provider: string) => string
    /** The project's browser origins, which `redirectTo` must be on. */
    allowedOrigins: (projectId: string) => Promise<string[]>
  }) {
    this.flows = new SignInFlows(store, { clock: deps.clock, collections: { states: 'project_oauth_states', tickets: 'project_oauth_tickets' } })
    this.identities = store.collection<IdentityRecord>(IDENTITIES)
  }

  async init (): Promise<void> {
    await this.flows.init()
    await this.identities.createIndex({ projectId: 1, userId: 1 })
  }

  async signInProviders (projectId: string): Promise<Array<{ id: string, label: string }>> {
    await this.deps.auth.requireAuthOn(projectId)
    return await this.deps.providers.enabled(projectId)
  }

  async start (projectId: string, providerId: string, redirectTo: string, codeChallenge: string): Promise<StartedSignIn> {
    await this.deps.auth.requireAuthOn(projectId)
    const provider = await this.enabledProvider(projectId, providerId)
    const landing = await this.checkRedirect(projectId, redirectTo)
    return await this.flows.begin(this.client(projectId, provider), { scope: projectId, provider: providerId, redirectTo: landing, codeChallenge })
  }

  /**
   * A state that is unknown, used, expired, of another provider or not this
   * browser's is refused outright (there is no trusted place to send the
   * browser); every later failure lands on the sign-in's `redirectTo` with `?error=`.
   */
  async callback (projectId: string, providerId: string, params: SignInCallbackParams, binding: string | undefined): Promise<OauthLanding> {
    const flow = await this.flows.resume(projectId, providerId, params.state, binding)
    // Set by start, which requires one.
    const landing = flow.redirectTo ?? ''
    try {
      // Auth switched off since the start: no user is made or linked (the exchange would refuse anyway).
      await this.deps.auth.requireAuthOn(projectId)
      const provider = await this.enabledProvider(projectId, providerId)
      const claims = await this.flows.identify(this.client(projectId, provider), flow, params)
      const account = await this.linkOrCreate(projectId, provider, claims)
      return { location: withParam(landing, 'ticket', await this.flows.issueTicket(flow, account.user.id)), failure: null }
    } catch (error) {
      const code = (OAUTH_FAILURES.find((failure) => failure.is(error)) ?? identityErrors.ssoFailed).code
      return { location: withParam(landing, 'error', code), failure: { code, cause: error } }
    }
  }

  /** Trades a ticket for the project's session, once, given the verifier of the challenge its sign-in started with. */
  async exchange (projectId: string, ticket: string, codeVerifier: string): Promise<ProjectSession> {
    const userId = await this.flows.redeemTicket(projectId, ticket, codeVerifier)
    const account = await this.deps.users.account(projectId, userId)
    if (account === null) throw identityErrors.invalidSsoTicket()
    return await this.deps.auth.signInWithProvider(projectId, account)
  }

  /** The identities the user signs in with, oldest link first. */
  async identitiesOf (projectId: string, userId: string): Promise<LinkedIdentity[]> {
    const found = await this.identities.find({ projectId, userId }, { sort: { createdAt: 1, _id: 1 }, limit: MAX_LISTED_IDENTITIES }).toArray()
    return found.map((identity) => ({ provider: identity.provider, linkedAt: isoString(identity.createdAt), email: identity.email ?? null }))
  }

  /** The providers each of these users has an identity at, for the admins' list of users. */
  async providersOf (projectId: string, userIds: string[]): Promise<Map<string, string[]>> {
    const found = await this.identities.find({ projectId, userId: { $in: userIds } }, { sort: { createdAt: 1, _id: 1 }, limit: userIds.length * MAX_LISTED_IDENTITIES }).toArray()
    const providers = new Map<string, string[]>()
    for (const { userId, provider } of found) {
      const mine = providers.get(userId) ?? []
      if (!mine.includes(provider)) mine.push(provider)
      providers.set(userId, mine)
    }
    return providers
  }

  /** Deleted users' identities go with them, so none is left to sign a later account in. */
  async forgetUsers (projectId: string, userIds: string[]): Promise<void> {
    if (userIds.length > 0) await this.store.extensions.sweep(IDENTITIES).deleteMany({ projectId, userId: { $in: userIds } })
  }

  /**
   * Unlinks the user's identities at this provider, unless that leaves no
   * way to sign in: no password and no identity at another enabled
   * provider. Removed first and checked after, then put back if it left
   * none: of two unlinks at once, each sees what the other left, so they
   * cannot both take the last two ways in.
   */
  async unlink (projectId: string, userId: string, providerId: string): Promise<void> {
    const mine = await this.identities.find({ projectId, userId, provider: providerId }, { limit: MAX_LISTED_IDENTITIES }).toArray()
    if (mine.length === 0) throw projectErrors.oauthIdentityNotFound({ provider: providerId })
    await this.identities.deleteMany({ _id: { $in: mine.map((identity) => identity._id) } })
    if (await this.deps.users.hasPassword(projectId, userId)) return
    const enabled = (await this.deps.providers.enabled(projectId)).map((provider) => provider.id)
    if (await this.identities.countDocuments({ projectId, userId, provider: { $in: enabled } }) > 0) return
    for (const { _id, ...identity } of mine) await this.identities.updateOne({ _id }, { $setOnInsert: identity }, { upsert: true })
    throw projectErrors.oauthLastSignInMethod({ provider: providerId })
  }

  async forgetProject (projectId: string): Promise<void> {
    // However many a project holds: a page per write (a plain deleteMany refuses past its bound).
    await this.store.extensions.sweep(IDENTITIES).deleteMany({ projectId })
    await this.flows.forgetScope(projectId)
    for (const key of this.clients.keys()) if (key.startsWith(`${projectId}/`)) this.clients.delete(key)
  }

  /** The provider was changed or removed (OauthProviders.onChange): its client and the discovery it cached go. */
  forgetProvider (projectId: string, providerId: string): void {
    this.clients.delete(`${projectId}/${providerId}`)
  }

  /**
   * The user this provider account signed in as before; else the account
   * holding the address, only when the provider verified it; else a new
   * user, only when the provider verified it too. So every link is made to
   * a proven address: a link made from an unproven one would outlive the
   * owner's later proof (a reset, a verified provider) and let whoever made
   * it back into the account the owner now uses.
   */
  private async linkOrCreate (projectId: string, provider: OpenedProvider, claims: Record<string, unknown>): Promise<ProjectAccount> {
    // OpenID Connect Core §5.7: a `sub` is unique only within its issuer, the validated token's `iss` (one issuer
    // setting, Microsoft's `common`, stands for every tenant's).
    const key = identityKey(projectId, provider.id, String(claims.iss), String(claims.sub))
    const linked = await this.identities.findOne({ _id: key })
    if (linked !== null) {
      const account = await this.deps.users.account(projectId, linked.userId)
      if (account !== null) return account
      await this.identities.deleteOne({ _id: key })
    }
    const { email, verified } = claimedEmail(claims)
    let account: ProjectAccount
    const existing = await this.deps.users.accountByEmail(projectId, email)
    if (existing !== null) {
      if (!verified) throw identityErrors.ssoEmailNotVerified({ why: 'The provider has not verified this address, and an account here already holds it' })
      const link = await this.deps.users.linkProvenEmail(projectId, existing.user.id)
      if (link === null) throw identityErrors.ssoFailed()
      if (link.tookOver) await this.deps.auth.endSessions(projectId, [existing.user.id])
      account = (link.tookOver ? await this.deps.users.account(projectId, existing.user.id) : null) ?? link.account
    } else {
      if (!verified) throw identityErrors.ssoEmailNotVerified({ why: 'The provider has not verified this address; sign up with it, or through a provider that verifies it' })
      account = await this.deps.users.createFromProvider(projectId, email, true)
    }
    await this.identities.updateOne({ _id: key }, { $setOnInsert: { projectId, provider: provider.id, subject: String(claims.sub), userId: account.user.id, email: account.user.email, createdAt: this.deps.clock.now() } }, { upsert: true })
    return account
  }

  private async enabledProvider (projectId: string, providerId: string): Promise<OpenedProvider> {
    let provider: OpenedProvider
    try {
      provider = await this.deps.providers.opened(projectId, providerId)
    } catch (error) {
      // Removed through another process: nothing tells this one but the read.
      if (projectErrors.oauthProviderNotFound.is(error)) this.forgetProvider(projectId, providerId)
      throw error
    }
    if (!provider.enabled) throw projectErrors.oauthProviderDisabled({ provider: providerId })
    return provider
  }

  /**
   * One client per provider (its discovery is cached with it), rebuilt when
   * the settings it was built from differ in any way: compared whole rather
   * than by `updatedAt`, which two changes within a millisecond, or another
   * process's clock, can leave equal.
   */
  private client (projectId: string, provider: OpenedProvider): SignInClient {
    const key = `${projectId}/${provider.id}`
    const fingerprint = createHash('sha256').update(JSON.stringify(provider)).digest('base64url')
    const cached = this.clients.get(key)
    if (cached !== undefined && cached.fingerprint === fingerprint) return cached.client
    const { fetch, clock } = this.deps
    const redirectUri = this.deps.callbackUrl(projectId, provider.id)
    const { clientId, clientSecret, issuer, scope } = provider.client
    const client = provider.preset === 'github'
      ? new GithubClient({ clientId, clientSecret, baseUrl: issuer, apiUrl: provider.apiUrl ?? '', scope }, { fetch, redirectUri })
      : new OidcClient(provider.client, { clock, fetch, redirectUri })
    this.clients.set(key, { fingerprint, client })
    return client
  }

  private async checkRedirect (projectId: string, redirectTo: string): Promise<string> {
    let url: URL | null = null
    try { url = new URL(redirectTo) } catch {}
    if (url === null || (url.protocol !== 'https:' && url.protocol !== 'http:') || !(await this.deps.allowedOrigins(projectId)).includes(url.origin)) {
      throw projectErrors.oauthRedirectNotAllowed()
    }
    return url.href
  }
}
