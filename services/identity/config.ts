import { Type, type Static } from '@sinclair/typebox'
import { allowedHostList, ConfigError, httpUrl, integer, list, origins, parseHttpUrl, text, type Env } from '../platform/config-env.js'

export const SSO_PROVIDER_NAMES = ['google', 'microsoft', 'apple'] as const
export type SsoProviderName = typeof SSO_PROVIDER_NAMES[number]

const SsoProviderConfig = Type.Object({
  name: Type.Union(SSO_PROVIDER_NAMES.map((name) => Type.Literal(name))),
  clientId: Type.String({ minLength: 1 }),
  /** For Apple this is the pre-generated client-secret JWT (ES256 under the Sign in with Apple key), not a static secret. */
  clientSecret: Type.String({ minLength: 1 }),
  /** Discovery is fetched from `<issuer>/.well-known/openid-configuration`. */
  issuer: Type.String({ minLength: 1 })
})
export type SsoProviderConfig = Static<typeof SsoProviderConfig>

/** A platform user's id as the one id generator makes it: what PLATFORM_ADMINS lists. */
const PLATFORM_USER_ID = '^[0-9a-hjkmnp-tv-z]{20}$'

/**
 * Ids, not emails: registration is open and platform emails are not proven,
 * so a listed email could be registered first by someone else, or again after
 * its account was deleted; an id is the server's own and never reused.
 */
function platformAdmins (env: Env): string[] {
  const ids = list(env, 'PLATFORM_ADMINS')
  const bad = ids.find((id) => !new RegExp(PLATFORM_USER_ID).test(id))
  if (bad !== undefined) throw new ConfigError('PLATFORM_ADMINS', `must list platform user ids (the \`id\` of GET /api/auth/me), comma-separated; "${bad}" is not one`)
  return [...new Set(ids)]
}

const seconds = (variable: string, minimum: number, maximum: number, description: string) =>
  Type.Integer({ minimum, maximum, variable, description })

/**
 * The identity family's settings — credentials, their lifetimes, sign-in
 * rate limits and single sign-on — each with the variable it is read from
 * (the README's configuration table lists them), as `loadConfig().identity`.
 */
export const IdentityConfig = Type.Object({
  patPrefix: Type.String({ pattern: '^[a-z][a-z0-9]{2,15}$', variable: 'PAT_PREFIX', description: 'Personal access tokens begin `<patPrefix>_`' }),
  serviceTokenPrefix: Type.String({
    pattern: '^[a-z][a-z0-9]{2,15}$',
    variable: 'SERVICE_TOKEN_PREFIX',
    description: 'Project service tokens begin `<serviceTokenPrefix>_`; distinct from the PAT prefix so neither passes for the other'
  }),
  accessTokenTtlSeconds: seconds('ACCESS_TOKEN_TTL_SECONDS', 60, 86_400, 'Lifetime of a platform JWT'),
  projectTokenTtlSeconds: seconds('PROJECT_TOKEN_TTL_SECONDS', 60, 86_400, 'Lifetime of a project (end-user) JWT'),
  refreshTokenTtlSeconds: seconds('REFRESH_TOKEN_TTL_SECONDS', 300, 365 * 86_400, 'Lifetime of a refresh token, platform and end users alike'),
  refreshReuseGraceSeconds: seconds('REFRESH_REUSE_GRACE_SECONDS', 0, 300,
    'How long a just-replaced refresh token may still be traded (a client\'s double submit) before reuse revokes its family'),
  authRateLimit: Type.Object({
    max: Type.Integer({ minimum: 1, variable: 'AUTH_RATE_LIMIT_MAX', description: 'Attempts allowed per window' }),
    windowSeconds: Type.Integer({ minimum: 1, variable: 'AUTH_RATE_LIMIT_WINDOW_SECONDS', description: 'The window' })
  }, { description: 'Attempts per window on register, login, refresh and SSO exchange, per client address (and per account on login)' }),
  platformAdmins: Type.Array(Type.String({ pattern: PLATFORM_USER_ID }), {
    variable: 'PLATFORM_ADMINS',
    description: 'Ids of the platform users who are platform administrators (backups), comma-separated; checked on every request'
  }),
  sso: Type.Object({
    providers: Type.Array(SsoProviderConfig, {
      variables: SSO_PROVIDER_NAMES.flatMap((name) => ['CLIENT_ID', 'CLIENT_SECRET', 'ISSUER'].map((part) => `${name.toUpperCase()}_${part}`)),
      description: 'The providers with both a client id and a client secret, in a fixed order'
    }),
    redirectUrl: Type.String({ variable: 'SSO_REDIRECT_URL', description: 'Where the browser lands after SSO, with `?ticket=` or `?error=`' }),
    allowedRedirects: Type.Array(Type.String(), { variable: 'SSO_ALLOWED_REDIRECTS', description: 'Origins a `redirectTo` on SSO start may point to, besides PUBLIC_URL\'s own (always allowed)' }),
    allowedHosts: Type.Array(Type.String(), {
      variable: 'SSO_ALLOWED_HOSTS',
      description: 'Host names, *.suffix wildcards, addresses and CIDR ranges an SSO provider may be at although they are internal; every other internal address is refused'
    })
  })
})
export type IdentityConfig = Static<typeof IdentityConfig>

// Microsoft's multi-tenant discovery answers with the issuer template `.../{tenantid}/v2.0`.
const SSO_DEFAULT_ISSUERS: Record<SsoProviderName, string> = {
  google: 'https://accounts.google.com',
  microsoft: 'https://login.microsoftonline.com/common/v2.0',
  apple: 'https://appleid.apple.com'
}

function tokenPrefix (env: Env, name: string, fallback: string): string {
  const prefix = text(env, name) ?? fallback
  if (!/^[a-z][a-z0-9]{2,15}$/.test(prefix)) throw new ConfigError(name, `must be 3 to 16 lower-case letters or digits starting with a letter, got "${prefix}"`)
  return prefix
}

/** `<P>_CLIENT_ID` and `<P>_CLIENT_SECRET` come as a pair: one without the other is a mistake, not "disabled". */
function ssoProviders (env: Env): SsoProviderConfig[] {
  const providers: SsoProviderConfig[] = []
  for (const name of SSO_PROVIDER_NAMES) {
    const prefix = name.toUpperCase()
    const clientId = text(env, `${prefix}_CLIENT_ID`)
    const clientSecret = text(env, `${prefix}_CLIENT_SECRET`)
    if (clientId === undefined && clientSecret === undefined) continue
    if (clientId === undefined) throw new ConfigError(`${prefix}_CLIENT_ID`, `must be set when ${prefix}_CLIENT_SECRET is`)
    if (clientSecret === undefined) throw new ConfigError(`${prefix}_CLIENT_SECRET`, `must be set when ${prefix}_CLIENT_ID is`)
    const issuer = text(env, `${prefix}_ISSUER`)
    providers.push({ name, clientId, clientSecret, issuer: issuer === undefined ? SSO_DEFAULT_ISSUERS[name] : httpUrl(`${prefix}_ISSUER`, issuer) })
  }
  return providers
}

/** `publicUrl`: the deployment's own URL, where SSO lands by default. */
export function parseIdentityConfig (env: Env, { publicUrl }: { publicUrl: string }): IdentityConfig {
  const patPrefix = tokenPrefix(env, 'PAT_PREFIX', 'plinthpat')
  const serviceTokenPrefix = tokenPrefix(env, 'SERVICE_TOKEN_PREFIX', 'plinthsvc')
  if (serviceTokenPrefix === patPrefix) throw new ConfigError('SERVICE_TOKEN_PREFIX', `must differ from PAT_PREFIX ("${patPrefix}")`)
  return {
    patPrefix,
    serviceTokenPrefix,
    accessTokenTtlSeconds: integer(env, 'ACCESS_TOKEN_TTL_SECONDS', 900, 60, 86_400),
    projectTokenTtlSeconds: integer(env, 'PROJECT_TOKEN_TTL_SECONDS', 900, 60, 86_400),
    refreshTokenTtlSeconds: integer(env, 'REFRESH_TOKEN_TTL_SECONDS', 30 * 86_400, 300, 365 * 86_400),
    refreshReuseGraceSeconds: integer(env, 'REFRESH_REUSE_GRACE_SECONDS', 10, 0, 300),
    authRateLimit: {
      max: integer(env, 'AUTH_RATE_LIMIT_MAX', 10, 1, 1_000_000),
      windowSeconds: integer(env, 'AUTH_RATE_LIMIT_WINDOW_SECONDS', 60, 1, 86_400)
    },
    platformAdmins: platformAdmins(env),
    sso: {
      providers: ssoProviders(env),
      redirectUrl: parseHttpUrl('SSO_REDIRECT_URL', text(env, 'SSO_REDIRECT_URL') ?? `${publicUrl}/`).href,
      allowedRedirects: origins(env, 'SSO_ALLOWED_REDIRECTS'),
      allowedHosts: allowedHostList(env, 'SSO_ALLOWED_HOSTS')
    }
  }
}
