import { Type, type Static } from '@sinclair/typebox'
import { Envelope, errorResponses, LOCATION, withHeaders } from './envelope.js'

const Id = Type.String({ minLength: 1, maxLength: 64, pattern: '^[0-9A-Za-z_-]+$' })
const Slug = Type.String({ minLength: 1, maxLength: 48, pattern: '^[a-z0-9](?:[a-z0-9-]{0,46}[a-z0-9])?$', description: 'Unique in the organization; derived from the name when omitted' })
const Name = Type.String({ minLength: 1, maxLength: 100 })
const Description = Type.String({ maxLength: 2000 })
const DateTime = Type.String({ format: 'date-time' })

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
  expiresAt: Type.Optional(Type.String({ format: 'date-time' }))
}, { additionalProperties: false })

const Deleted = Type.Object({ id: Type.String(), deleted: Type.Literal(true) })

export const ProjectResponses = {
  list: { 200: Envelope(Type.Array(Type.Ref(Project))), ...errorResponses(400, 401, 403) },
  created: { 201: withHeaders(Envelope(Type.Ref(Project)), LOCATION), ...errorResponses(400, 401, 403, 404, 409) },
  one: { 200: Envelope(Type.Ref(Project)), ...errorResponses(400, 401, 403, 404) },
  updated: { 200: Envelope(Type.Ref(Project)), ...errorResponses(400, 401, 403, 404, 409) },
  deleted: { 200: Envelope(Deleted), ...errorResponses(400, 401, 403, 404) },
  tokenList: { 200: Envelope(Type.Array(Type.Ref(ServiceToken))), ...errorResponses(400, 401, 403, 404) },
  tokenCreated: { 201: withHeaders(Envelope(CreatedServiceToken), LOCATION), ...errorResponses(400, 401, 403, 404) }
}

export const projectSchemas = [Project, ServiceToken]
export type ProjectT = Static<typeof Project>
export type ServiceTokenT = Static<typeof ServiceToken>
