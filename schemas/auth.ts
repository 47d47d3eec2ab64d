import { Type, type Static } from '@sinclair/typebox'
import { Created, Envelope } from './envelope.js'
import { DateTime, Deleted } from './common.js'

const Email = Type.String({ minLength: 3, maxLength: 254, pattern: '^\\s*[^\\s@]+@[^\\s@]+\\s*$', description: 'An email address; trimmed and lower-cased before use' })
const Password = Type.String({ minLength: 1, maxLength: 256, description: 'At least 8 characters and not the email address' })

export const PlatformUser = Type.Object({
  id: Type.String(),
  email: Type.String(),
  name: Type.String(),
  emailVerified: Type.Boolean(),
  createdAt: DateTime
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
  refreshExpiresAt: DateTime
})

export const LoginResult = Type.Object({ user: Type.Ref(PlatformUser), ...SessionTokens.properties })

export const ApiKey = Type.Object({
  id: Type.String(),
  name: Type.String(),
  hint: Type.String({ description: 'Prefix and last characters, enough to recognise the token' }),
  scopes: Type.Array(Type.String()),
  createdAt: DateTime,
  lastUsedAt: Type.Union([DateTime, Type.Null()]),
  expiresAt: Type.Union([DateTime, Type.Null()])
}, { $id: 'ApiKey' })

export const CreatedApiKey = Type.Object({
  ...ApiKey.properties,
  token: Type.String({ description: 'Shown once; only its hash is stored' })
})

export const CreateApiKeyBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100 }),
  expiresAt: Type.Optional(DateTime),
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
  createdAt: DateTime,
  lastUsedAt: Type.Union([DateTime, Type.Null()])
}, { $id: 'SshKey' })

export const AddSshKeyBody = Type.Object({
  title: Type.String({ maxLength: 200 }),
  key: Type.String({ minLength: 1, maxLength: 16384, description: 'OpenSSH public key: ed25519, ecdsa P-256/384/521 or RSA of at least 2048 bits' })
}, { additionalProperties: false })

export const authSchemas = [PlatformUser, ApiKey, SshKey]

/** Each route's success answer; its error answers come from the codes it declares (`config.errors`). */
export const AuthResponses = {
  registered: { 201: Envelope(Type.Ref(PlatformUser)) },
  loggedIn: { 200: Envelope(LoginResult) },
  refreshed: { 200: Envelope(SessionTokens) },
  loggedOut: { 200: Envelope(Type.Object({ loggedOut: Type.Literal(true) })) },
  me: { 200: Envelope(Type.Ref(PlatformUser)) },
  apiKeyList: { 200: Envelope(Type.Array(Type.Ref(ApiKey))) },
  apiKeyCreated: { 201: Created(CreatedApiKey) },
  sshKeyList: { 200: Envelope(Type.Array(Type.Ref(SshKey))) },
  sshKeyCreated: { 201: Created(Type.Ref(SshKey)) },
  deleted: { 200: Envelope(Deleted) }
}

export type RegisterBodyType = Static<typeof RegisterBody>
export type PlatformUserT = Static<typeof PlatformUser>
export type ApiKeyT = Static<typeof ApiKey>
export type SshKeyT = Static<typeof SshKey>
export type SessionTokensT = Static<typeof SessionTokens>
