/**
 * The one catalogue of permissions. Every route that needs one names it from
 * here, roles are sets drawn from it, and grants, teams, groups and PAT scopes
 * may only name what it lists. Families still to come (hosting, git, dns,
 * tracker, assistant, llm) are listed now so they only have to use them.
 */
export const PERMISSIONS = {
  'org.read': 'See the organization, its members, teams and groups',
  'org.update': 'Rename the organization and change its settings',
  'org.delete': 'Delete the organization and everything it owns',
  'org.members.manage': 'Add and remove members, change roles and direct grants',
  'org.teams.manage': 'Create, change and delete teams and their membership',
  'org.groups.manage': 'Create, change and delete permission groups and their membership',
  'audit.read': 'Read the organization\'s audit log: who changed what, from where (never a secret value)',
  'project.read': 'See projects and their settings',
  'project.create': 'Create projects in the organization',
  'project.update': 'Change a project\'s name and settings',
  'project.delete': 'Delete a project and all of its data',
  'project.export': 'Export a project to an archive: its definitions, records, end users (with their password hashes), files and repositories',
  'project.import': 'Create a project in the organization from an exported archive',
  'project.auth.manage': 'Switch a project\'s end-user auth on or off',
  'project.tokens.manage': 'Issue, list and revoke a project\'s service tokens',
  'project.users.manage': 'Manage a project\'s end users and mint their tokens',
  'collections.read': 'See collection definitions',
  'collections.manage': 'Create, change and drop collections',
  'records.read': 'Read any record through the admin credentials, regardless of rules',
  'records.write': 'Write any record through the admin credentials, regardless of rules',
  'hosting.read': 'See apps, static sites and deployments',
  'hosting.deploy': 'Deploy, roll back, suspend and resume apps',
  'hosting.manage': 'Create, configure and delete apps and their secrets',
  'git.read': 'Clone and browse repositories',
  'git.write': 'Push to repositories',
  'git.admin': 'Create, configure and delete repositories',
  'dns.read': 'See zones and records',
  'dns.manage': 'Change zones and records',
  'tracker.read': 'See tracker projects and work items',
  'tracker.write': 'Create and change work items',
  'tracker.admin': 'Configure tracker projects, workflows and webhooks',
  'assistant.use': 'Start and use assistant sessions',
  'assistant.manage': 'Configure the assistant',
  'llm.read': 'See LLM settings and models (never the keys)',
  'llm.manage': 'Set LLM credentials and settings',
  'auxiliary.read': 'See the project\'s automation: record webhooks and their deliveries, variables (never secret values), schedules and their runs',
  'auxiliary.manage': 'Create, change and delete record webhooks, variables and schedules, and run them'
} as const

export type Permission = keyof typeof PERMISSIONS

export const PERMISSION_NAMES = Object.keys(PERMISSIONS) as Permission[]

export const ROLE_NAMES = ['owner', 'admin', 'member', 'viewer'] as const
export type Role = typeof ROLE_NAMES[number]

const VIEWER: Permission[] = [
  'org.read', 'project.read', 'collections.read', 'records.read', 'hosting.read', 'git.read', 'dns.read', 'tracker.read', 'llm.read', 'auxiliary.read'
]
const MEMBER: Permission[] = [
  ...VIEWER, 'project.create', 'project.update', 'records.write', 'hosting.deploy', 'git.write', 'tracker.write', 'assistant.use'
]
// Admins run everything day to day; deleting the organization stays with its owners.
const ADMIN: Permission[] = PERMISSION_NAMES.filter((name) => name !== 'org.delete')

export const ROLES: Record<Role, { description: string, permissions: readonly Permission[] }> = {
  owner: { description: 'Everything, including deleting the organization and managing owners', permissions: PERMISSION_NAMES },
  admin: { description: 'Everything except deleting the organization and changing owners', permissions: ADMIN },
  member: { description: 'Works on projects: creates them, writes data, deploys, pushes', permissions: MEMBER },
  viewer: { description: 'Reads everything the organization has, changes nothing', permissions: VIEWER }
}

export function isPermission (name: string): name is Permission {
  return Object.hasOwn(PERMISSIONS, name)
}

export function isRole (name: string): name is Role {
  return (ROLE_NAMES as readonly string[]).includes(name)
}

/** A permission held across the organization (`projectId: null`) or for one project only. */
export interface Grant { permission: Permission, projectId: string | null }
