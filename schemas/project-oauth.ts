import { Type, type Static } from '@sinclair/typebox'
import { Envelope } from './envelope.js'
import { DateTime, Deleted } from './common.js'
import { ProjectSession } from './project-auth.js'
import { CodeChallenge, CodeVerifier, SsoCallbackParams, type LandingCode } from './sso.js'

const HttpUrl = (description: string) => Type.String({ minLength: 1, maxLength: 2048, description })

export const OauthProviderParams = Type.Object({
  projectId: Type.String({ minLength: 1, maxLength: 64 }),
  provider: Type.String({ minLength: 1, maxLength: 32, pattern: '^[a-z][a-z0-9-]*$', description: 'The provider\'s id within the project, chosen by its admin', examples: ['google', 'corp-sso'] })
})

const TokenEndpointAuth = Type.Union([Type.Literal('client_secret_basic'), Type.Literal('client_secret_post')], {
  description: 'How the client authenticates at the token endpoint. Default `client_secret_basic`'
})

export const OauthEndpoints = Type.Object({
  authorization: HttpUrl('The authorization endpoint'),
  token: HttpUrl('The token endpoint'),
  jwks: HttpUrl('The provider\'s signing keys (JWKS)'),
  userinfo: Type.Optional(HttpUrl('The userinfo endpoint, asked when the ID token carries no email'))
}, { additionalProperties: false, description: 'Given instead of discovery; without them the provider\'s `<issuer>/.well-known/openid-configuration` is read' })

export const OauthPreset = Type.Union([Type.Literal('oidc'), Type.Literal('github'), Type.Literal('apple')], {
  description: '`oidc` (default): any OpenID provider. `github`: GitHub\'s OAuth 2 (no OpenID; the account from its API, the address ' +
    'its verified primary one). `apple`: Sign in with Apple (`form_post` callback, the client secret a JWT signed with your key)'
})

export const AppleKey = Type.Object({
  teamId: Type.String({ pattern: '^[A-Z0-9]{10}$', description: 'Your Apple developer team id' }),
  keyId: Type.String({ pattern: '^[A-Z0-9]{10}$', description: 'The id of the Sign in with Apple key whose private key is `clientSecret`' })
}, { additionalProperties: false })

export const OauthProviderBody = Type.Object({
  label: Type.Optional(Type.String({ minLength: 1, maxLength: 64, description: 'What the sign-in button says. Default: the id' })),
  preset: Type.Optional(OauthPreset),
  issuer: Type.Optional(HttpUrl('The OpenID issuer, as the ID token\'s `iss` names it (required for `oidc`); for `github` the web origin ' +
    '(default `https://github.com`, or a GitHub Enterprise server); for `apple` default `https://appleid.apple.com`')),
  endpoints: Type.Optional(OauthEndpoints),
  apiUrl: Type.Optional(HttpUrl('`github` only: the REST API (default `https://api.github.com`, or `<issuer>/api/v3` for an Enterprise server)')),
  apple: Type.Optional(AppleKey),
  clientId: Type.String({ minLength: 1, maxLength: 512 }),
  clientSecret: Type.Optional(Type.String({
    minLength: 1,
    maxLength: 4096,
    description: 'Sealed at rest and never returned; required the first time, and when the issuer or client id changes. ' +
      'For `apple`, the PEM (PKCS#8) of the key\'s ES256 private key'
  })),
  scopes: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 128, pattern: '^[\\x21\\x23-\\x5b\\x5d-\\x7e]+$' }), { maxItems: 20, description: 'Default `openid email profile`; `openid` is always asked for' })),
  tokenEndpointAuth: Type.Optional(TokenEndpointAuth),
  enabled: Type.Optional(Type.Boolean({ description: 'Default true; a disabled provider starts no sign-in and completes none' }))
}, { additionalProperties: false })
export type OauthProviderBodyT = Static<typeof OauthProviderBody>

export const OauthProvider = Type.Object({
  id: Type.String(),
  label: Type.String(),
  preset: OauthPreset,
  issuer: Type.String(),
  endpoints: Type.Optional(OauthEndpoints),
  apiUrl: Type.Optional(Type.String()),
  apple: Type.Optional(AppleKey),
  clientId: Type.String(),
  hasClientSecret: Type.Boolean({ description: 'Always true once saved; the secret is never returned' }),
  scopes: Type.Array(Type.String()),
  tokenEndpointAuth: TokenEndpointAuth,
  enabled: Type.Boolean(),
  callbackUrl: Type.String({ description: 'The redirect URI to register at the provider' }),
  updatedAt: DateTime
}, { $id: 'ProjectOauthProvider' })
export type OauthProviderT = Static<typeof OauthProvider>

export const OauthSignInProvider = Type.Object({
  id: Type.String(),
  label: Type.String(),
  startUrl: Type.String({ description: 'Send the browser here, with `?redirectTo=` and `&codeChallenge=` (PKCE S256 of a verifier the app keeps for the ticket exchange), to sign in' })
})

export const OauthStartQuery = Type.Object({
  redirectTo: Type.String({ minLength: 1, maxLength: 2048, description: 'Where the browser lands afterwards with `?ticket=` or `?error=`; its origin must be one of the project\'s `allowedOrigins`' }),
  codeChallenge: CodeChallenge
})

export const OauthCallbackQuery = Type.Omit(SsoCallbackParams, ['user'])

export const OauthExchangeBody = Type.Object({
  ticket: Type.String({ minLength: 1, maxLength: 256, description: 'The one-time ticket from the `?ticket=` of the landing URL' }),
  codeVerifier: CodeVerifier
}, { additionalProperties: false })

export const OauthIdentity = Type.Object({
  provider: Type.String({ description: 'The provider\'s id within the project' }),
  linkedAt: DateTime,
  email: Type.Union([Type.String(), Type.Null()], { description: 'The address the provider proved when the link was made; null for links made before it was kept' })
}, { $id: 'ProjectOauthIdentity', description: 'A provider identity the end user signs in with' })
export type OauthIdentityT = Static<typeof OauthIdentity>

const landingCodes = (codes: readonly LandingCode[]) => codes.map(({ code, description }) => `\`${code}\` (${description})`).join('; ')

export const OauthResponses = {
  provider: { 200: Envelope(Type.Ref(OauthProvider)) },
  providers: { 200: Envelope(Type.Array(Type.Ref(OauthProvider))) },
  deleted: { 200: Envelope(Deleted) },
  signInProviders: { 200: Envelope(Type.Array(OauthSignInProvider)) },
  started: { 302: Type.Null({ description: 'To the provider\'s authorization endpoint, with a cookie that binds the sign-in to this browser' }) },
  completed: (codes: readonly LandingCode[]) => ({
    302: Type.Null({ description: `To the \`redirectTo\` given at start with \`?ticket=<one-time ticket>\`, or with \`?error=<code>\`: ${landingCodes(codes)}` })
  }),
  exchanged: { 200: Envelope(ProjectSession) },
  identities: { 200: Envelope(Type.Array(Type.Ref(OauthIdentity), { description: 'Oldest link first' })) }
}

export const projectOauthSchemas = [OauthProvider, OauthIdentity]
