import { Type, type Static } from '@sinclair/typebox'
import { Envelope, errorResponses, LOCATION, withHeaders } from './envelope.js'

const Email = Type.String({ minLength: 3, maxLength: 254, pattern: '^\\s*[^\\s@]+@[^\\s@]+\\s*$', description: 'An email address; trimmed and lower-cased before use' })
const Password = Type.String({ minLength: 1, maxLength: 256, description: 'At least 8 characters and not the email address' })

export const PlatformUser = Type.Object({
  id: Type.String(),
  email: Type.String(),
  name: Type.String(),
  emailVerified: Type.Boolean(),
  createdAt: Type.String({ format: 'date-time' })
}, { $id: 'PlatformUser' })

export const RegisterBody = Type.Object({
  email: Email,
  password: Password,
  name: Type.String({ minLength: 1, maxLength: 200 })
}, { additionalProperties: false })

export const LoginBody = Type.Object({ email: Email, password: Password }, { additionalProperties: false })

export const RefreshBody = Type.Object({ refreshToken: Type.String({ minLength: 1, maxLength: 512 }) }, { additionalProperties: false })

export const SessionTokens = Type.Object({
  accessToken: Type.String({ description: 'Platform JWT (claim type "platform")' }),
  tokenType: Type.Literal('Bearer'),
  expiresIn: Type.Integer({ description: 'Seconds until the access token expires' }),
  refreshToken: Type.String({ description: 'Single use: each refresh returns a new one' }),
  refreshExpiresAt: Type.String({ format: 'date-time' })
})

export const LoginResult = Type.Object({ user: Type.Ref(PlatformUser), ...SessionTokens.properties })

export const ApiKey = Type.Object({
  id: Type.String(),
  name: Type.String(),
  hint: Type.String({ description: 'Prefix and last characters, enough to recognise the token' }),
  scopes: Type.Array(Type.String()),
  createdAt: Type.String({ format: 'date-time' }),
  lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  expiresAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()])
}, { $id: 'ApiKey' })

export const CreatedApiKey = Type.Object({
  ...ApiKey.properties,
  token: Type.String({ description: 'Shown once; only its hash is stored' })
})

export const CreateApiKeyBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100 }),
  expiresAt: Type.Optional(Type.String({ format: 'date-time' })),
  scopes: Type.Optional(Type.Array(Type.String({ pattern: '^[a-z][a-z0-9_.:*-]{0,63}$' }), { maxItems: 50 }))
}, { additionalProperties: false })

export const KeyParams = Type.Object({ keyId: Type.String({ minLength: 1, maxLength: 64 }) })

export const SshKey = Type.Object({
  id: Type.String(),
  title: Type.String(),
  key: Type.String({ description: 'The public key, `type base64`, without its comment' }),
  type: Type.String({ examples: ['ssh-ed25519'] }),
  bits: Type.Integer(),
  fingerprint: Type.String({ description: 'As `ssh-keygen -lf` prints it', examples: ['SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8'] }),
  createdAt: Type.String({ format: 'date-time' }),
  lastUsedAt: Type.Union([Type.String({ format: 'date-time' }), Type.Null()])
}, { $id: 'SshKey' })

export const AddSshKeyBody = Type.Object({
  title: Type.String({ maxLength: 200 }),
  key: Type.String({ minLength: 1, maxLength: 16384, description: 'OpenSSH public key: ed25519, ecdsa P-256/384/521 or RSA of at least 2048 bits' })
}, { additionalProperties: false })

export const authSchemas = [PlatformUser, ApiKey, SshKey]

export const RegisterResponses = { 201: Envelope(Type.Ref(PlatformUser)), ...errorResponses(400, 409, 429) }
export const LoginResponses = { 200: Envelope(LoginResult), ...errorResponses(400, 401, 429) }
export const RefreshResponses = { 200: Envelope(SessionTokens), ...errorResponses(400, 401, 429) }
export const LogoutResponses = { 200: Envelope(Type.Object({ loggedOut: Type.Literal(true) })), ...errorResponses(400) }
export const MeResponses = { 200: Envelope(Type.Ref(PlatformUser)), ...errorResponses(401) }
export const ListApiKeysResponses = { 200: Envelope(Type.Array(Type.Ref(ApiKey))), ...errorResponses(401) }
export const CreateApiKeyResponses = { 201: withHeaders(Envelope(CreatedApiKey), LOCATION), ...errorResponses(400, 401, 403) }
export const RevokeApiKeyResponses = { 200: Envelope(Type.Object({ revoked: Type.Literal(true) })), ...errorResponses(401, 403, 404) }

export const ListSshKeysResponses = { 200: Envelope(Type.Array(Type.Ref(SshKey))), ...errorResponses(401) }
export const AddSshKeyResponses = { 201: withHeaders(Envelope(Type.Ref(SshKey)), LOCATION), ...errorResponses(400, 401, 409) }
export const DeleteSshKeyResponses = { 200: Envelope(Type.Object({ deleted: Type.Literal(true) })), ...errorResponses(401, 404) }

export type RegisterBodyType = Static<typeof RegisterBody>
export type PlatformUserT = Static<typeof PlatformUser>
export type ApiKeyT = Static<typeof ApiKey>
export type SshKeyT = Static<typeof SshKey>
export type SessionTokensT = Static<typeof SessionTokens>
