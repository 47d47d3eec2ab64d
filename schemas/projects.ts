import { Type, type Static } from '@sinclair/typebox'
import { Created, Envelope } from './envelope.js'
import { DateTime, Deleted, Id } from './common.js'

const Slug = Type.String({ minLength: 1, maxLength: 48, pattern: '^[a-z0-9](?:[a-z0-9-]{0,46}[a-z0-9])?$', description: 'Unique in the organization; derived from the name when omitted' })
const Name = Type.String({ minLength: 1, maxLength: 100 })
const Description = Type.String({ maxLength: 2000 })

export const Project = Type.Object({
  id: Type.String(),
  orgId: Type.String(),
  name: Type.String(),
  slug: Type.String(),
  description: Type.String(),
  authEnabled: Type.Boolean({ description: 'Whether end-user auth (/api/p/:projectId/auth) is on' }),
  allowedOrigins: Type.Array(Type.String(), { description: 'Browser origins that may call /api/p/:projectId/… (CORS); ["*"] allows any origin without credentials' }),
  createdBy: Type.String(),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'Project' })

export const ServiceToken = Type.Object({
  id: Type.String(),
  name: Type.String(),
  hint: Type.String({ description: 'Prefix and last characters, enough to recognise the token' }),
  createdBy: Type.String(),
  createdAt: DateTime,
  lastUsedAt: Type.Union([DateTime, Type.Null()]),
  expiresAt: Type.Union([DateTime, Type.Null()])
}, { $id: 'ServiceToken' })

export const CreatedServiceToken = Type.Object({ ...ServiceToken.properties, token: Type.String({ description: 'Shown once; only its hash is stored' }) })

export const ProjectParams = Type.Object({ id: Id })
export const ProjectIdParams = Type.Object({ projectId: Id })
export const ServiceTokenParams = Type.Object({ projectId: Id, tokenId: Id })
export const ProjectUserParams = Type.Object({ projectId: Id, userId: Id })
export const ListProjectsQuery = Type.Object({ orgId: Type.Optional(Id) }, { additionalProperties: false })

export const CreateProjectBody = Type.Object({ orgId: Id, name: Name, slug: Type.Optional(Slug), description: Type.Optional(Description) }, { additionalProperties: false })
const AllowedOrigins = Type.Array(Type.String({ minLength: 1, maxLength: 2048 }), {
  maxItems: 50,
  description: 'Replaces the list: origins such as https://app.example.com, or ["*"] for any origin (never with credentials); [] allows none'
})
export const UpdateProjectBody = Type.Object({
  name: Type.Optional(Name), slug: Type.Optional(Slug), description: Type.Optional(Description), allowedOrigins: Type.Optional(AllowedOrigins)
}, { additionalProperties: false, minProperties: 1 })
export const ToggleAuthBody = Type.Object({
  enabled: Type.Optional(Type.Boolean({ description: 'The state wanted; when omitted the current state is flipped' }))
}, { additionalProperties: false })
export const CreateServiceTokenBody = Type.Object({
  name: Type.String({ minLength: 1, maxLength: 100 }),
  expiresAt: Type.Optional(DateTime)
}, { additionalProperties: false })

/** Each route's success answer; its error answers come from the codes it declares (`config.errors`). */
export const ProjectResponses = {
  list: { 200: Envelope(Type.Array(Type.Ref(Project))) },
  created: { 201: Created(Type.Ref(Project)) },
  one: { 200: Envelope(Type.Ref(Project)) },
  deleted: { 200: Envelope(Deleted) },
  tokenList: { 200: Envelope(Type.Array(Type.Ref(ServiceToken))) },
  tokenCreated: { 201: Created(CreatedServiceToken) }
}

export const projectSchemas = [Project, ServiceToken]
export type ProjectT = Static<typeof Project>
export type ServiceTokenT = Static<typeof ServiceToken>
