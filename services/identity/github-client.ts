import { identityErrors } from './errors.js'
import { s256, type SignInClient } from './sign-in-flows.js'
import type { Fetch } from './oidc-client.js'

/** GitHub (or a GitHub Enterprise Server) as an OAuth 2 app sees it: no OpenID, no ID token. */
export interface GithubClientConfig {
  clientId: string
  clientSecret: string
  /** The web origin: `https://github.com`, or an Enterprise server's. */
  baseUrl: string
  /** The REST API: `https://api.github.com`, or an Enterprise server's `<origin>/api/v3`. */
  apiUrl: string
  scope: string
}

const HTTP_TIMEOUT_MS = 10_000
const unavailable = (why: string) => identityErrors.ssoProviderUnavailable({ why })

interface GithubEmail { email?: unknown, primary?: unknown, verified?: unknown }

/**
 * The OAuth 2 authorization code flow with PKCE, then the account from the
 * API: GitHub issues no ID token, so who signed in is `GET /user`, and the
 * address is the primary one of `GET /user/emails` with GitHub's own
 * `verified` flag, never the profile's public email, which the user types
 * and GitHub does not check.
 */
export class GithubClient implements SignInClient {
  constructor (readonly config: GithubClientConfig, private readonly deps: { fetch: Fetch, redirectUri: string }) {}

  async authorizationUrl (request: { state: string, codeVerifier: string }): Promise<string> {
    const url = new URL(`${this.config.baseUrl}/login/oauth/authorize`)
    const params = {
      client_id: this.config.clientId,
      redirect_uri: this.deps.redirectUri,
      scope: this.config.scope,
      state: request.state,
      code_challenge: s256(request.codeVerifier),
      code_challenge_method: 'S256',
      allow_signup: 'false'
    }
    for (const [name, value] of Object.entries(params)) url.searchParams.set(name, value)
    return url.href
  }

  async identify (answer: { code: string }, flow: { codeVerifier: string }): Promise<Record<string, unknown>> {
    const accessToken = await this.redeemCode(answer.code, flow.codeVerifier)
    const user = await this.api(accessToken, '/user') as { id?: unknown, name?: unknown, login?: unknown } | null
    if (typeof user?.id !== 'number' && typeof user?.id !== 'string') throw identityErrors.ssoInvalidResponse({ why: 'GitHub\'s /user answer has no id' })
    const emails = await this.api(accessToken, '/user/emails')
    if (!Array.isArray(emails)) throw identityErrors.ssoInvalidResponse({ why: 'GitHub\'s /user/emails answer is not a list' })
    const primary = (emails as GithubEmail[]).find((entry) => entry?.primary === true && typeof entry.email === 'string')
    return {
      iss: this.config.baseUrl,
      sub: String(user.id),
      ...(primary === undefined ? {} : { email: primary.email, email_verified: primary.verified === true }),
      name: typeof user.name === 'string' && user.name !== '' ? user.name : user.login
    }
  }

  private async redeemCode (code: string, codeVerifier: string): Promise<string> {
    const body = new URLSearchParams({
      client_id: this.config.clientId, client_secret: this.config.clientSecret, code, redirect_uri: this.deps.redirectUri, code_verifier: codeVerifier
    })
    const answer = await this.call(`${this.config.baseUrl}/login/oauth/access_token`, {
      method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'application/json' }, body
    }, 'The token endpoint') as { access_token?: unknown, error?: unknown } | null
    // GitHub answers a refused code with 200 and an `error` field.
    if (typeof answer?.access_token !== 'string') {
      const reason = typeof answer?.error === 'string' ? answer.error.slice(0, 64) : 'no access token'
      throw identityErrors.ssoCodeRejected({ why: `GitHub refused the code (${reason})` })
    }
    return answer.access_token
  }

  private async api (accessToken: string, path: string): Promise<unknown> {
    return await this.call(`${this.config.apiUrl}${path}`, {
      headers: { authorization: `Bearer ${accessToken}`, accept: 'application/vnd.github+json', 'user-agent': 'plinth', 'x-github-api-version': '2022-11-28' }
    }, `GitHub's ${path}`)
  }

  private async call (url: string, init: RequestInit, what: string): Promise<unknown> {
    let response: Response
    try {
      response = await this.deps.fetch(url, { ...init, redirect: 'error', signal: AbortSignal.timeout(HTTP_TIMEOUT_MS) })
    } catch {
      throw unavailable(`${what} did not answer`)
    }
    const answer = await response.json().catch(() => null) as unknown
    if (!response.ok) throw unavailable(`${what} answered HTTP ${response.status}`)
    return answer
  }
}
