import { Type } from '@sinclair/typebox'
import { Envelope } from './envelope.js'
import { LoginResult } from './auth.js'

export const SsoProvider = Type.Object({
  id: Type.String({ examples: ['google'] }),
  name: Type.String({ examples: ['Google'] }),
  startUrl: Type.String({ description: 'Send the browser here to sign in', examples: ['/api/auth/oauth/google/start'] })
})

export const SsoProviderParams = Type.Object({
  provider: Type.String({ minLength: 1, maxLength: 32, pattern: '^[a-z][a-z0-9-]*$', examples: ['google', 'microsoft', 'apple'] })
})

/** RFC 7636's verifier: 43 to 128 unreserved characters; its S256 challenge is 43 base64url characters. */
export const CodeChallenge = Type.String({
  pattern: '^[A-Za-z0-9_-]{43}$',
  description: 'BASE64URL(SHA-256(code verifier)), as PKCE\'s S256 (RFC 7636): the app keeps the verifier, and the ticket is traded only with it'
})
export const CodeVerifier = Type.String({ pattern: '^[A-Za-z0-9._~-]{43,128}$', description: 'The verifier whose S256 challenge started this sign-in' })

export const SsoStartQuery = Type.Object({
  redirectTo: Type.Optional(Type.String({ maxLength: 2048, description: 'Where to land afterwards instead of SSO_REDIRECT_URL; its origin must be listed in SSO_ALLOWED_REDIRECTS' })),
  codeChallenge: CodeChallenge
})

/** Providers add parameters of their own (scope, session_state, authuser…), so unknown fields are allowed and ignored. */
export const SsoCallbackParams = Type.Object({
  code: Type.Optional(Type.String({ maxLength: 8192 })),
  state: Type.Optional(Type.String({ maxLength: 512 })),
  error: Type.Optional(Type.String({ maxLength: 256 })),
  error_description: Type.Optional(Type.String({ maxLength: 2048 })),
  iss: Type.Optional(Type.String({ maxLength: 2048, description: 'RFC 9207 issuer identifier' })),
  user: Type.Optional(Type.String({ maxLength: 4096, description: 'Apple only, first sign-in: the name as a JSON string' }))
})

export const SsoExchangeBody = Type.Object({
  ticket: Type.String({ minLength: 1, maxLength: 256, description: 'The one-time ticket from the `?ticket=` of the SSO landing URL' }),
  codeVerifier: CodeVerifier
}, { additionalProperties: false })

const SsoRedirect = (description: string) => Type.Null({ description })

/** A code a sign-in may land with in `?error=`, and what it means. */
export interface LandingCode { code: string, description: string }

const landingCodes = (codes: readonly LandingCode[]) => codes.map(({ code, description }) => `\`${code}\` (${description})`).join('; ')

/** Each route's success answer; its error answers come from the codes it declares (`config.errors`). */
export const SsoResponses = {
  providers: { 200: Envelope(Type.Array(SsoProvider)) },
  started: (codes: readonly LandingCode[]) => ({
    302: SsoRedirect(`To the provider's authorization endpoint; to the landing URL with \`?error=<code>\` if the provider cannot be reached: ${landingCodes(codes)}`)
  }),
  completed: (codes: readonly LandingCode[]) => ({
    302: SsoRedirect(`To the landing URL with \`?ticket=<one-time ticket>\`, or with \`?error=<code>\` on any failure: ${landingCodes(codes)}`)
  }),
  /** A provider's cross-site form post carries no SameSite=Lax cookie: the browser is sent to the query callback with the same fields. */
  formPosted: { 303: SsoRedirect('To the same callback by GET, with the posted fields as its query, so the browser\'s sign-in cookie comes along') },
  exchanged: { 200: Envelope(LoginResult) }
}
