import { errorCatalogue, fieldIssue } from '../platform/errors.js'

interface Ceiling { verb: string, role: string, missing: readonly string[] }

const ceilingMessage = ({ verb, role, missing }: Ceiling): string =>
  `You cannot ${verb} the ${role} role: it holds permissions you do not (${missing.slice(0, 3).join(', ')}${missing.length > 3 ? ', …' : ''})`

/**
 * Every code the organizations family answers with, once: organizations,
 * members, roles, grants, teams and permission groups. An organization the
 * caller cannot see is `commonErrors.organizationNotFound`.
 */
export const orgErrors = errorCatalogue('orgs', {
  scopedToken: {
    code: 'APP_SCOPED_TOKEN',
    status: 403,
    message: 'A personal access token with scopes cannot create organizations',
    description: 'a personal access token with scopes cannot create an organization, which would hold every permission'
  },
  invalidMember: {
    code: 'APP_INVALID_MEMBER',
    status: 400,
    message: 'Give exactly one of email or userId',
    description: 'the body names the user by both, or neither, of `email` and `userId`'
  },
  invalidRole: {
    code: 'APP_INVALID_ROLE',
    status: 400,
    message: ({ role }: { role: string }) => `role must be one of owner, admin, member, viewer (got "${role}")`,
    details: () => fieldIssue('body.role', 'must be owner, admin, member or viewer'),
    description: 'the role is not owner, admin, member or viewer'
  },
  memberNotFound: {
    code: 'APP_MEMBER_NOT_FOUND',
    status: 404,
    message: (params?: { set: string }) => params === undefined ? 'Member not found' : `That user is not in this ${params.set}`,
    description: 'the user is not a member of the organization (or of the team or group)'
  },
  alreadyMember: { code: 'APP_ALREADY_MEMBER', status: 409, message: 'That user is already a member', description: 'the user is a member already' },
  memberChanged: {
    code: 'APP_MEMBER_CHANGED',
    status: 409,
    message: 'The member was changed at the same time; try again',
    description: 'the member was changed by another request meanwhile; try again'
  },
  lastOwner: {
    code: 'APP_LAST_OWNER',
    status: 409,
    message: 'An organization keeps at least one owner: add another owner first',
    description: 'the change would leave the organization without an owner'
  },
  ownerOnly: {
    code: 'APP_OWNER_ONLY',
    status: 403,
    message: ceilingMessage,
    details: ({ missing }: Ceiling) => fieldIssue('role', `holds permissions you do not: ${missing.join(', ')}`),
    description: 'only full owners make, change or remove owners'
  },
  roleCeiling: {
    code: 'APP_ROLE_CEILING',
    status: 403,
    message: ceilingMessage,
    details: ({ missing }: Ceiling) => fieldIssue('role', `holds permissions you do not: ${missing.join(', ')}`),
    description: 'the role holds permissions the caller does not'
  },
  cannotGrant: {
    code: 'APP_CANNOT_GRANT',
    status: 403,
    message: ({ permission }: { permission: string }) => `You cannot grant "${permission}": you do not hold it yourself`,
    details: ({ permission }) => ({ permission }),
    description: 'a grant names a permission the caller does not hold, named in `details.permission`'
  },
  unknownPermission: {
    code: 'APP_UNKNOWN_PERMISSION',
    status: 400,
    message: ({ names, path }: { names: readonly string[], path: string }) => `${path}: unknown permission ${names.map((name) => `"${name}"`).join(', ')}`,
    details: ({ names, path }) => ({ fields: names.map((name: string) => ({ path, message: `"${name}" is not a permission` })) }),
    description: 'a name is not in the permission catalogue (`GET /api/permissions`)'
  },
  tooManyGrants: {
    code: 'APP_TOO_MANY_GRANTS',
    status: 400,
    message: ({ limit }: { limit: number }) => `At most ${limit} grants`,
    details: ({ limit }) => ({ limit }),
    description: 'more grants than one member, team or group may hold'
  },
  unknownProject: {
    code: 'APP_UNKNOWN_PROJECT',
    status: 400,
    message: ({ ids }: { ids: string[] }) => `Grants name projects that are not in this organization: ${ids.join(', ')}`,
    details: ({ ids }) => ({ ids }),
    description: 'a grant names a project outside the organization; `details.ids` lists them'
  },
  notAMember: {
    code: 'APP_NOT_A_MEMBER',
    status: 400,
    message: ({ ids }: { ids: string[] }) => `Not members of this organization: ${ids.join(', ')}`,
    details: ({ ids }) => ({ ids }),
    description: 'only members of the organization join its teams and groups; `details.ids` lists the others'
  },
  tooManyMembers: {
    code: 'APP_TOO_MANY_MEMBERS',
    status: 400,
    message: ({ set, limit }: { set: string, limit: number }) => `A ${set} holds at most ${limit} members`,
    details: ({ limit }) => ({ limit }),
    description: 'the team or group would hold more members than one may'
  },
  teamNotFound: { code: 'APP_TEAM_NOT_FOUND', status: 404, message: 'Team not found', description: 'no such team in the organization' },
  teamNameTaken: {
    code: 'APP_TEAM_NAME_TAKEN',
    status: 409,
    message: ({ name }: { name: string }) => `A team named "${name}" already exists`,
    description: 'the organization has a team of that name'
  },
  permissionGroupNotFound: {
    code: 'APP_PERMISSION_GROUP_NOT_FOUND',
    status: 404,
    message: 'Permission group not found',
    description: 'no such permission group in the organization'
  },
  permissionGroupNameTaken: {
    code: 'APP_PERMISSION_GROUP_NAME_TAKEN',
    status: 409,
    message: ({ name }: { name: string }) => `A permission group named "${name}" already exists`,
    description: 'the organization has a permission group of that name'
  }
})
