import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import { RateLimiter } from '../platform/rate-limit.js'
import type { Store } from '../store/types.js'
import { guardedFetch } from '../outbound/guarded-fetch.js'
import { AddressGuard } from '../outbound/internal-addresses.js'
import { ApiKeys } from './api-keys.js'
import type { IdentityConfig } from './config.js'
import { RefreshSessions, type AccessIssuer } from './sessions.js'
import { SshKeys } from './ssh-keys.js'
import { SingleSignOn } from './sso.js'
import { PlatformUsers } from './users.js'

/** Where the SSO routes are mounted: each provider's redirect URI is `PUBLIC_URL` + this + `/<provider>/callback`. */
export const SSO_PATH = '/api/auth/oauth'

const SSO_FETCH_LIMITS = { headersTimeoutMs: 10_000, idleTimeoutMs: 10_000, maxResponseBytes: 1024 * 1024 }

/** The claims of a platform access token; `sv` is the user's session epoch when it is not 0. */
export interface PlatformAccessClaims { sub: string, sid: string, type: 'platform', sv?: number }

/** What the identity family is built from. */
export interface IdentityPorts {
  store: Store
  clock: Clock
  /** The Store's time (services/store/store-clock.ts): rate-limit windows every node must judge alike. */
  storeClock: Clock
  newId: IdGenerator
  config: IdentityConfig
  /** The deployment's URL, which SSO providers send the browser back to. */
  publicUrl: string
  /** Signs a platform access token (the HTTP layer holds the key). */
  signAccessToken: (claims: PlatformAccessClaims) => string
}

export interface Identity {
  users: PlatformUsers
  sessions: RefreshSessions
  apiKeys: ApiKeys
  sshKeys: SshKeys
  sso: SingleSignOn
  rateLimiter: RateLimiter
  /** Every credential of a user at once: sessions (and the access tokens they issued), PATs, SSH keys. */
  revokeCredentials: (userId: string) => Promise<void>
}

/** The identity family's services, their indexes made. */
export async function buildIdentityServices (ports: IdentityPorts): Promise<Identity> {
  const { store, clock, newId, config } = ports
  const users = new PlatformUsers(store, clock)
  // An access token carries the session epoch of its user; moving the epoch ends every access token issued before.
  const issueAccess: AccessIssuer = async (userId, familyId, _scope, sessionEpoch) => {
    const account = await users.account(userId)
    if (account === null || (sessionEpoch !== undefined && sessionEpoch !== account.sessionEpoch)) return null
    const epoch = account.sessionEpoch === 0 ? {} : { sv: account.sessionEpoch }
    const accessToken = ports.signAccessToken({ sub: userId, sid: familyId, type: 'platform', ...epoch })
    return { accessToken, expiresIn: config.accessTokenTtlSeconds, sessionEpoch: account.sessionEpoch }
  }
  const sessions = new RefreshSessions(store, 'platform_refresh_tokens', {
    clock, newId, issueAccess, refreshTtlSeconds: config.refreshTokenTtlSeconds, reuseGraceSeconds: config.refreshReuseGraceSeconds
  })
  const apiKeys = new ApiKeys(store, { clock, newId, prefix: config.patPrefix })
  const sshKeys = new SshKeys(store, clock)
  const revokeCredentials = async (userId: string): Promise<void> => {
    await sessions.revokeUser(userId)
    await apiKeys.revokeAll(userId)
    await sshKeys.removeAll(userId)
  }
  const sso = new SingleSignOn(store, {
    clock,
    providers: config.sso.providers,
    callbackUrl: (provider) => `${ports.publicUrl}${SSO_PATH}/${provider}/callback`,
    landingUrl: config.sso.redirectUrl,
    // The server's own origin is always a landing: the console signs in there.
    allowedRedirectOrigins: [...config.sso.allowedRedirects, new URL(ports.publicUrl).origin],
    users,
    sessions,
    revokeCredentials,
    // Discovery, token and key fetches through the one guard, pinned, no redirects, as a project's providers' are.
    fetch: guardedFetch(new AddressGuard({ allowedHosts: config.sso.allowedHosts }), SSO_FETCH_LIMITS)
  })
  await users.init()
  await sessions.init()
  await apiKeys.init()
  await sshKeys.init()
  await sso.init()
  return { users, sessions, apiKeys, sshKeys, sso, rateLimiter: new RateLimiter(store, ports.storeClock), revokeCredentials }
}
