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

export const SsoStartQuery = Type.Object({
  redirectTo: Type.Optional(Type.String({ maxLength: 2048, description: 'Where to land afterwards instead of SSO_REDIRECT_URL; its origin must be listed in SSO_ALLOWED_REDIRECTS' }))
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
  ticket: Type.String({ minLength: 1, maxLength: 256, description: 'The one-time ticket from the `?ticket=` of the SSO landing URL' })
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
  exchanged: { 200: Envelope(LoginResult) }
}
