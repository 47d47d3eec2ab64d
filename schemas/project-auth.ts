import { Type, type Static } from '@sinclair/typebox'
import { Envelope, errorResponses } from './envelope.js'

const Email = Type.String({ minLength: 3, maxLength: 254, description: 'Trimmed and lower-cased before use' })
const Password = Type.String({ minLength: 1, maxLength: 256, description: 'At least 8 characters and not the email address' })

export const ProjectUser = Type.Object({
  id: Type.String(),
  email: Type.String(),
  emailVerified: Type.Boolean(),
  createdAt: Type.String({ format: 'date-time' }),
  updatedAt: Type.String({ format: 'date-time' })
}, { $id: 'ProjectUser', additionalProperties: true, description: 'An end user of a project; the extra fields given at registration appear beside these' })

export const ProjectRegisterBody = Type.Object({
  email: Email,
  password: Password,
  extraFields: Type.Optional(Type.Record(Type.String({ maxLength: 64 }), Type.Unknown(), {
    description: 'Profile fields stored with the user. Declared fields of `_users` meet their definitions; undeclared ones are kept as sent unless the `_users` definition\'s `signUpFields` is `strict`. Read-only fields, file fields and reserved names (id, email, password, timestamps, _ or $ prefixes) are refused'
  }))
}, { additionalProperties: false })

export const ProjectLoginBody = Type.Object({ email: Email, password: Password }, { additionalProperties: false })

export const ProjectAccess = Type.Object({
  user: Type.Ref(ProjectUser),
  accessToken: Type.String({ description: 'Project JWT (claim type "project"), valid only on this project: send it as `Authorization: Bearer <accessToken>`' }),
  tokenType: Type.Literal('Bearer'),
  expiresIn: Type.Integer({ description: 'Seconds until the token expires' }),
  expiresAt: Type.String({ format: 'date-time' })
})

export const ProjectSession = Type.Object({
  ...ProjectAccess.properties,
  refreshToken: Type.String({ description: 'Single use: POST it to /refresh for a new project JWT and a new refresh token' }),
  refreshExpiresAt: Type.String({ format: 'date-time' })
})

export const ProjectRefreshBody = Type.Object({ refreshToken: Type.String({ minLength: 1, maxLength: 512 }) }, { additionalProperties: false })

export const ProjectPasswordBody = Type.Object({
  currentPassword: Password,
  newPassword: Type.String({ minLength: 1, maxLength: 256, description: 'At least 8 characters and not the email address' })
}, { additionalProperties: false })

// No length keywords: JSON Schema counts code points, a pass over the whole token on every call, and any
// string that is not a live project JWT of the project (empty or oversized included) simply answers valid: false.
export const VerifyBody = Type.Object({
  token: Type.String({ description: 'A project JWT; anything that is not a live one of this project answers valid: false' })
}, { additionalProperties: false })
export const VerifyResult = Type.Object({
  valid: Type.Boolean(),
  user: Type.Optional(Type.Ref(ProjectUser))
})

export const ProjectAuthParams = Type.Object({ projectId: Type.String({ minLength: 1, maxLength: 64, pattern: '^[0-9A-Za-z_-]+$' }) })

export const ProjectAuthResponses = {
  registered: { 201: Envelope(ProjectSession), ...errorResponses(400, 403, 404, 409, 429) },
  loggedIn: { 200: Envelope(ProjectSession), ...errorResponses(400, 401, 403, 404, 429) },
  refreshed: { 200: Envelope(ProjectSession), ...errorResponses(400, 401, 403, 404, 429) },
  loggedOut: { 200: Envelope(Type.Object({ loggedOut: Type.Literal(true) })), ...errorResponses(400, 403, 404) },
  passwordChanged: { 200: Envelope(ProjectSession), ...errorResponses(400, 401, 403, 404, 429) },
  me: { 200: Envelope(Type.Ref(ProjectUser)), ...errorResponses(400, 401, 403, 404) },
  verified: { 200: Envelope(VerifyResult), ...errorResponses(400, 401, 403) },
  minted: { 201: Envelope(ProjectAccess), ...errorResponses(400, 401, 403, 404) }
}

export const projectAuthSchemas = [ProjectUser]
export type ProjectUserT = Static<typeof ProjectUser>
