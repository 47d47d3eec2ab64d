import { createHash } from 'node:crypto'
import { createRemoteJWKSet, customFetch, errors as joseErrors, importPKCS8, jwtVerify, SignJWT, type JWTPayload, type JWTVerifyGetKey } from 'jose'
import { identityErrors } from './errors.js'
import type { Clock } from '../platform/clock.js'

export type Fetch = typeof globalThis.fetch

/** The endpoints a provider publishes in its discovery document, or that its admin typed in. */
export interface OidcEndpoints {
  authorization: string
  token: string
  jwks: string
  userinfo?: string
}

/**
 * One OpenID provider as a relying party sees it: the platform's SSO
 * providers (services/identity/sso.ts) and a project's end-user providers
 * (services/projects/oauth-sign-in.ts) both describe theirs this way.
 */
export interface OidcClientConfig {
  label: string
  clientId: string
  clientSecret: string
  /** The ID token's `iss`; discovery is fetched from `<issuer>/.well-known/openid-configuration` unless `endpoints` are given. */
  issuer: string
  endpoints?: OidcEndpoints
  scope: string
  responseMode: 'query' | 'form_post'
  tokenEndpointAuth: 'client_secret_basic' | 'client_secret_post'
  /**
   * Apple's: `clientSecret` is then the PKCS#8 PEM of an ES256 key, and the
   * secret sent is a short-lived JWT it signs (iss the team, sub the client).
   */
  signedClientSecret?: { teamId: string, keyId: string }
}

/** What the token endpoint answered: the ID token, and the access token userinfo takes. */
export interface RedeemedCode { idToken: string, accessToken: string | null }

// Asymmetric only: an HS256 token would be checked against the client secret, which the client itself holds.
const ID_TOKEN_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA']
const TENANT_PLACEHOLDER = '{tenantid}'
const DISCOVERY_TTL_MS = 60 * 60 * 1000
const HTTP_TIMEOUT_MS = 10_000
const CLOCK_TOLERANCE_SECONDS = 60
/** Apple accepts up to six months; one sign-in needs minutes. */
const SIGNED_SECRET_TTL_SECONDS = 300

interface Discovery {
  issuer: string
  authorizationEndpoint: string
  tokenEndpoint: string
  userinfoEndpoint: string | null
  jwks: JWTVerifyGetKey
}

const unavailable = (why: string) => identityErrors.ssoProviderUnavailable({ why })
const invalidIdToken = (why: string) => identityErrors.ssoInvalidIdToken({ why })

const EMAIL_SHAPE = /^[^\s@]{1,64}@[^\s@]{1,253}$/

/** The address the provider shared and whether it vouches for it; Apple sends the flag as a string. */
export function claimedEmail (claims: Record<string, unknown>): { email: string, verified: boolean } {
  const { email, email_verified: verified } = claims
  if (typeof email !== 'string' || !EMAIL_SHAPE.test(email.trim())) throw identityErrors.ssoEmailNotVerified({ why: 'The provider did not share an email address' })
  return { email, verified: verified === true || verified === 'true' }
}

/** RFC 7636 S256. */
function codeChallenge (verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url')
}

// RFC 6749 §2.3.1: id and secret are form-encoded before they are joined and base64-encoded.
const formEncode = (value: string) => encodeURIComponent(value).replace(/%20/g, '+')

function endpoint (document: Record<string, unknown>, field: string): string {
  const value = document[field]
  if (typeof value !== 'string') throw unavailable(`discovery document has no ${field}`)
  return httpEndpoint(value, `discovery ${field}`)
}

function httpEndpoint (value: string, what: string): string {
  let url: URL
  try { url = new URL(value) } catch { throw unavailable(`${what} is not a URL`) }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw unavailable(`${what} is not an http(s) URL`)
  return url.href
}

/** Whether a discovery document's issuer belongs to the configured one; Microsoft's carries a tenant placeholder. */
function issuerMatches (configured: string, discovered: string): boolean {
  if (!discovered.includes(TENANT_PLACEHOLDER)) return discovered.replace(/\/$/, '') === configured
  const [before, after] = discovered.split(TENANT_PLACEHOLDER)
  return configured.startsWith(before) && configured.endsWith(after.replace(/\/$/, '')) &&
    /^[\w.-]+$/.test(configured.slice(before.length, configured.length - after.replace(/\/$/, '').length))
}

/** One configured OpenID provider: discovery, the authorization URL, the code exchange and ID token checks. */
export class OidcClient {
  private discovery: { value: Promise<Discovery>, expiresAt: number } | null = null

  constructor (readonly config: OidcClientConfig, private readonly deps: { clock: Clock, fetch: Fetch, redirectUri: string }) {}

  async authorizationUrl (request: { state: string, nonce: string, codeVerifier: string }): Promise<string> {
    const { authorizationEndpoint } = await this.discover()
    const url = new URL(authorizationEndpoint)
    const params = {
      response_type: 'code',
      client_id: this.config.clientId,
      redirect_uri: this.deps.redirectUri,
      scope: this.config.scope,
      state: request.state,
      nonce: request.nonce,
      code_challenge: codeChallenge(request.codeVerifier),
      code_challenge_method: 'S256',
      ...(this.config.responseMode === 'form_post' ? { response_mode: 'form_post' } : {})
    }
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value)
    return url.href
  }

  /**
   * The signed-in account's claims from the provider's answer: the code
   * redeemed, the ID token verified, and userinfo's claims beneath it for a
   * provider that keeps the email out of the token.
   */
  async identify (answer: { code: string, iss?: string }, flow: { codeVerifier: string, nonce: string }): Promise<Record<string, unknown>> {
    await this.checkResponseIssuer(answer.iss)
    const { idToken, accessToken } = await this.redeemCode(answer.code, flow.codeVerifier)
    const claims: Record<string, unknown> = await this.verifyIdToken(idToken, flow.nonce)
    if (claims.email !== undefined || accessToken === null) return claims
    return { ...await this.userinfo(accessToken, String(claims.sub)), ...claims }
  }

  /** RFC 9207: an `iss` in the authorization response must name this provider, against mix-up attacks. */
  async checkResponseIssuer (iss: string | undefined): Promise<void> {
    if (iss === undefined) return
    const { issuer } = await this.discover()
    if (!issuer.includes(TENANT_PLACEHOLDER) && iss !== issuer) throw identityErrors.ssoInvalidResponse({ why: 'The authorization response names another issuer' })
  }

  /** Trades the authorization code for the provider's tokens. */
  async redeemCode (code: string, codeVerifier: string): Promise<RedeemedCode> {
    const { tokenEndpoint } = await this.discover()
    const body = new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: this.deps.redirectUri, code_verifier: codeVerifier })
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }
    const secret = await this.clientSecret()
    if (this.config.tokenEndpointAuth === 'client_secret_basic') {
      headers.authorization = `Basic ${Buffer.from(`${formEncode(this.config.clientId)}:${formEncode(secret)}`).toString('base64')}`
    } else {
      body.set('client_id', this.config.clientId)
      body.set('client_secret', secret)
    }
    let response: Response
    try {
      response = await this.deps.fetch(tokenEndpoint, { method: 'POST', headers, body, redirect: 'error', signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) })
    } catch {
      throw unavailable('The token endpoint did not answer')
    }
    const answer = await response.json().catch(() => null) as Record<string, unknown> | null
    if (!response.ok) {
      const reason = typeof answer?.error === 'string' ? answer.error.slice(0, 64) : `HTTP ${response.status}`
      throw identityErrors.ssoCodeRejected({ why: `The token endpoint refused the code (${reason})` })
    }
    if (typeof answer?.id_token !== 'string') throw identityErrors.ssoCodeRejected({ why: 'The token endpoint returned no ID token' })
    return { idToken: answer.id_token, accessToken: typeof answer.access_token === 'string' ? answer.access_token : null }
  }

  /**
   * The userinfo claims, for a provider that keeps the email out of the ID
   * token; null when it publishes no userinfo endpoint. OpenID Connect Core
   * §5.3.2: they count only for the same `sub` as the verified ID token.
   */
  async userinfo (accessToken: string, sub: string): Promise<Record<string, unknown> | null> {
    const { userinfoEndpoint } = await this.discover()
    if (userinfoEndpoint === null) return null
    let response: Response
    try {
      response = await this.deps.fetch(userinfoEndpoint, {
        headers: { authorization: `Bearer ${accessToken}`, accept: 'application/json' }, redirect: 'error', signal: AbortSignal.timeout(HTTP_TIMEOUT_MS)
      })
    } catch {
      throw unavailable('The userinfo endpoint did not answer')
    }
    const claims = await response.json().catch(() => null) as Record<string, unknown> | null
    if (!response.ok || claims === null || typeof claims !== 'object') throw unavailable(`The userinfo endpoint answered HTTP ${response.status}`)
    if (claims.sub !== sub) throw invalidIdToken('The userinfo answer is about another subject')
    return claims
  }

  /**
   * Signature against the provider's published keys, then issuer, audience,
   * expiry and our nonce. Microsoft's common endpoint signs for every tenant,
   * so its issuer is the template filled with the token's own `tid`.
   */
  async verifyIdToken (idToken: string, nonce: string): Promise<JWTPayload> {
    const { issuer, jwks } = await this.discover()
    let payload: JWTPayload
    try {
      ({ payload } = await jwtVerify(idToken, jwks, {
        audience: this.config.clientId,
        algorithms: ID_TOKEN_ALGORITHMS,
        requiredClaims: ['iss', 'sub', 'exp', 'iat'],
        currentDate: this.deps.clock.now(),
        clockTolerance: CLOCK_TOLERANCE_SECONDS
      }))
    } catch (error) {
      if (error instanceof joseErrors.JWKSTimeout || !(error instanceof joseErrors.JOSEError)) throw unavailable('The provider\'s signing keys could not be fetched')
      throw invalidIdToken(`The ID token was refused (${error.code})`)
    }
    const tenant = payload.tid
    const expectedIssuer = issuer.includes(TENANT_PLACEHOLDER)
      ? (typeof tenant === 'string' && /^[\w.-]{1,64}$/.test(tenant) ? issuer.replace(TENANT_PLACEHOLDER, tenant) : null)
      : issuer
    if (expectedIssuer === null || payload.iss !== expectedIssuer) throw invalidIdToken('The ID token comes from another issuer')
    // OpenID Connect Core §3.1.3.7: with several audiences, the token must have been issued to us.
    if (Array.isArray(payload.aud) && payload.aud.length > 1 && payload.azp !== this.config.clientId) throw invalidIdToken('The ID token was issued to another client')
    if (payload.nonce !== nonce) throw invalidIdToken('The ID token does not carry this sign-in\'s nonce')
    return payload
  }

  private async clientSecret (): Promise<string> {
    const signed = this.config.signedClientSecret
    if (signed === undefined) return this.config.clientSecret
    const now = Math.floor(this.deps.clock.nowMs() / 1000)
    return await new SignJWT({})
      .setProtectedHeader({ alg: 'ES256', kid: signed.keyId })
      .setIssuer(signed.teamId)
      .setSubject(this.config.clientId)
      .setAudience(this.config.issuer)
      .setIssuedAt(now)
      .setExpirationTime(now + SIGNED_SECRET_TTL_SECONDS)
      .sign(await importPKCS8(this.config.clientSecret, 'ES256'))
  }

  private async discover (): Promise<Discovery> {
    const now = this.deps.clock.nowMs()
    if (this.discovery === null || this.discovery.expiresAt <= now) {
      const entry = { value: this.fetchDiscovery(), expiresAt: now + DISCOVERY_TTL_MS }
      this.discovery = entry
      // A failure is not cached: the next sign-in tries again.
      entry.value.catch(() => { if (this.discovery === entry) this.discovery = null })
    }
    return await this.discovery.value
  }

  private async fetchDiscovery (): Promise<Discovery> {
    const { endpoints } = this.config
    if (endpoints !== undefined) {
      return {
        issuer: this.config.issuer,
        authorizationEndpoint: httpEndpoint(endpoints.authorization, 'the authorization endpoint'),
        tokenEndpoint: httpEndpoint(endpoints.token, 'the token endpoint'),
        userinfoEndpoint: endpoints.userinfo === undefined ? null : httpEndpoint(endpoints.userinfo, 'the userinfo endpoint'),
        jwks: this.remoteKeys(new URL(httpEndpoint(endpoints.jwks, 'the JWKS endpoint')))
      }
    }
    let document: Record<string, unknown>
    try {
      const response = await this.deps.fetch(`${this.config.issuer}/.well-known/openid-configuration`, {
        headers: { accept: 'application/json' }, redirect: 'error', signal: AbortSignal.timeout(HTTP_TIMEOUT_MS)
      })
      if (!response.ok) throw new Error(`HTTP ${response.status}`)
      document = await response.json() as Record<string, unknown>
    } catch {
      throw unavailable(`The ${this.config.label} discovery document could not be fetched`)
    }
    if (typeof document !== 'object' || document === null || typeof document.issuer !== 'string' || !issuerMatches(this.config.issuer, document.issuer)) {
      throw unavailable(`The ${this.config.label} discovery document names another issuer`)
    }
    return {
      issuer: document.issuer,
      authorizationEndpoint: endpoint(document, 'authorization_endpoint'),
      tokenEndpoint: endpoint(document, 'token_endpoint'),
      userinfoEndpoint: typeof document.userinfo_endpoint === 'string' ? endpoint(document, 'userinfo_endpoint') : null,
      jwks: this.remoteKeys(new URL(endpoint(document, 'jwks_uri')))
    }
  }

  private remoteKeys (url: URL): JWTVerifyGetKey {
    return createRemoteJWKSet(url, { timeoutDuration: HTTP_TIMEOUT_MS, [customFetch]: this.deps.fetch })
  }
}
