import { Type, type Static } from '@sinclair/typebox'
import { Envelope } from './envelope.js'
import { DateTime, Deleted } from './common.js'
import { WEBHOOK_LIMITS } from './webhooks.js'

/** An end user as the project's admins see them: the account's state, never a password hash or a token. */
export const ProjectUserAccount = Type.Object({
  id: Type.String(),
  email: Type.String(),
  emailVerified: Type.Boolean(),
  disabled: Type.Boolean({ description: 'A disabled user holds no session and cannot sign in' }),
  hasPassword: Type.Boolean({ description: 'False for a user who signs in only through an OpenID provider' }),
  providers: Type.Array(Type.String(), { description: 'The ids of the OpenID providers the user has linked an identity at' }),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'ProjectUserAccount', additionalProperties: false })
export type ProjectUserAccountT = Static<typeof ProjectUserAccount>

export const ListProjectUsersQuery = Type.Object({
  email: Type.Optional(Type.String({ minLength: 1, maxLength: 254, description: 'Only users whose address contains this text, compared lower-cased and literally (no pattern)' })),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: WEBHOOK_LIMITS.pageMax, default: WEBHOOK_LIMITS.pageDefault })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'The `nextCursor` of the previous page of the same list and filter' }))
}, { additionalProperties: false })
export type ListProjectUsersQueryT = Static<typeof ListProjectUsersQuery>

export const UpdateProjectUserBody = Type.Object({
  disabled: Type.Boolean({ description: 'True ends every session of the user at once and refuses sign-in; false lets them sign in again (old sessions stay ended)' })
}, { additionalProperties: false })

export const ProjectUserAdminResponses = {
  list: {
    200: Envelope(Type.Object({
      items: Type.Array(Type.Ref(ProjectUserAccount)),
      nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last page' })
    }))
  },
  one: { 200: Envelope(Type.Ref(ProjectUserAccount)) },
  deleted: { 200: Envelope(Deleted) }
}

export const projectUserAdminSchemas = [ProjectUserAccount]
