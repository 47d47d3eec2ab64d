import { Type, type Static } from '@sinclair/typebox'
import { Created, Envelope } from './envelope.js'
import { DateTime, Deleted, Id } from './common.js'

const Slug = Type.String({ minLength: 1, maxLength: 48, pattern: '^[a-z0-9](?:[a-z0-9-]{0,46}[a-z0-9])?$', description: 'Lower-case letters, digits and inner hyphens; derived from the name when omitted' })
const Name = Type.String({ minLength: 1, maxLength: 100 })
const Description = Type.String({ maxLength: 2000 })
export const RoleName = Type.Union([Type.Literal('owner'), Type.Literal('admin'), Type.Literal('member'), Type.Literal('viewer')], { $id: 'RoleName' })
const PermissionName = Type.String({ pattern: '^[a-z][a-z.]{2,63}$', description: 'A name from the permission catalogue (GET /api/permissions)' })

export const Grant = Type.Object({
  permission: PermissionName,
  projectId: Type.Optional(Type.Union([Id, Type.Null()], { description: 'Limits the grant to one project; null or absent means across the organization' }))
}, { $id: 'Grant', additionalProperties: false })
const Grants = Type.Array(Type.Ref(Grant), { maxItems: 200 })

export const Organization = Type.Object({
  id: Type.String(),
  name: Type.String(),
  slug: Type.String(),
  description: Type.String(),
  createdBy: Type.String(),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'Organization' })

export const OrganizationWithRole = Type.Object({ ...Organization.properties, role: Type.Ref(RoleName) })

export const Member = Type.Object({
  id: Type.String({ description: 'The platform user id; the memberId in paths' }),
  email: Type.String(),
  name: Type.String(),
  role: Type.Ref(RoleName),
  permissions: Type.Array(Type.Ref(Grant), { description: 'Direct grants, beside the role' }),
  joinedAt: DateTime
}, { $id: 'Member' })

export const MemberSet = Type.Object({
  id: Type.String(),
  name: Type.String(),
  slug: Type.String(),
  description: Type.String(),
  members: Type.Array(Type.String(), { description: 'Platform user ids' }),
  permissions: Type.Array(Type.Ref(Grant)),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'MemberSet' })

export const EffectivePermissions = Type.Object({
  role: Type.Ref(RoleName),
  projectId: Type.Union([Type.String(), Type.Null()]),
  permissions: Type.Array(Type.String()),
  sources: Type.Array(Type.Object({
    permission: Type.String(),
    via: Type.Union([Type.Literal('role'), Type.Literal('grant'), Type.Literal('team'), Type.Literal('group')]),
    setId: Type.Optional(Type.String()),
    setName: Type.Optional(Type.String()),
    projectId: Type.Union([Type.String(), Type.Null()])
  }))
}, { $id: 'EffectivePermissions' })

export const PermissionCatalogue = Type.Object({
  permissions: Type.Array(Type.Object({ name: Type.String(), description: Type.String() })),
  roles: Type.Array(Type.Object({ name: Type.Ref(RoleName), description: Type.String(), permissions: Type.Array(Type.String()) }))
})

export const OrgParams = Type.Object({ orgId: Id })
export const MemberParams = Type.Object({ orgId: Id, memberId: Id })
export const SetParams = Type.Object({ orgId: Id, setId: Id })
export const SetMemberParams = Type.Object({ orgId: Id, setId: Id, memberId: Id })
export const ProjectScopeQuery = Type.Object({ projectId: Type.Optional(Id) }, { additionalProperties: false })

export const CreateOrganizationBody = Type.Object({ name: Name, slug: Type.Optional(Slug), description: Type.Optional(Description) }, { additionalProperties: false })
export const UpdateOrganizationBody = Type.Object({ name: Type.Optional(Name), slug: Type.Optional(Slug), description: Type.Optional(Description) }, { additionalProperties: false, minProperties: 1 })
export const AddMemberBody = Type.Object({
  email: Type.Optional(Type.String({ minLength: 3, maxLength: 254 })),
  userId: Type.Optional(Id),
  role: Type.Ref(RoleName),
  permissions: Type.Optional(Grants)
}, { additionalProperties: false, description: 'An existing platform user, by exactly one of email or userId' })
export const ChangeRoleBody = Type.Object({ role: Type.Ref(RoleName) }, { additionalProperties: false })
export const GrantsBody = Type.Object({ permissions: Grants }, { additionalProperties: false, description: 'Replaces the member\'s direct grants' })
export const CreateSetBody = Type.Object({
  name: Name,
  description: Type.Optional(Description),
  permissions: Type.Optional(Grants),
  members: Type.Optional(Type.Array(Id, { maxItems: 1000, description: 'Platform user ids of organization members' }))
}, { additionalProperties: false })
export const UpdateSetBody = Type.Object({
  name: Type.Optional(Name),
  description: Type.Optional(Description),
  permissions: Type.Optional(Grants),
  members: Type.Optional(Type.Array(Id, { maxItems: 1000 }))
}, { additionalProperties: false, minProperties: 1 })

/** Each route's success answer; its error answers come from the codes it declares (`config.errors`). */
export const OrganizationResponses = {
  catalogue: { 200: Envelope(PermissionCatalogue) },
  orgList: { 200: Envelope(Type.Array(OrganizationWithRole)) },
  orgCreated: { 201: Created(Type.Ref(Organization)) },
  org: { 200: Envelope(Type.Ref(Organization)) },
  deleted: { 200: Envelope(Deleted) },
  memberList: { 200: Envelope(Type.Array(Type.Ref(Member))) },
  memberAdded: { 201: Created(Type.Ref(Member)) },
  member: { 200: Envelope(Type.Ref(Member)) },
  grants: { 200: Envelope(Type.Array(Type.Ref(Grant))) },
  effective: { 200: Envelope(Type.Ref(EffectivePermissions)) },
  setList: { 200: Envelope(Type.Array(Type.Ref(MemberSet))) },
  set: { 200: Envelope(Type.Ref(MemberSet)) },
  setCreated: { 201: Created(Type.Ref(MemberSet)) }
}

export const organizationSchemas = [RoleName, Grant, Organization, Member, MemberSet, EffectivePermissions]
export type OrganizationT = Static<typeof Organization>
