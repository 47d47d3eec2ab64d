import { commonErrors } from '../platform/errors.js'
import type { Permission } from '../orgs/catalogue.js'
import { permissionMissing } from '../orgs/resolver.js'
import type { RepoRoleT } from '../../schemas/git.js'
import type { Repo, Repositories } from './repositories.js'
import type { ProtectedBranches, PushPolicy } from './protection.js'
import type { WriteLevel } from './pattern-rules.js'
import type { ProtectedTags } from './tag-protection.js'
import type { RepoMembers } from './members.js'
import { gitErrors } from './errors.js'
import { isRepoSlug } from './names.js'

/** Who is speaking git: nobody, a platform user (JWT or PAT), or a repository's deploy key. */
export type GitCaller =
  | { kind: 'anonymous' }
  | { kind: 'user', userId: string, scopes?: string[] }
  | { kind: 'deployKey', keyId: string, projectId: string, repoId: string, readOnly: boolean }

/** A platform user as the resolver sees them: a PAT's scopes narrow everything they hold. */
export interface UserCaller { userId: string, scopes?: string[] }

/** A platform user acting in a repository, with the git permissions they hold there (as the repository's parent resolved them). */
export interface RepoActor { userId: string, permissions: ReadonlySet<Permission> }

/** A caller's permissions in a project, or null when the project is missing or the caller is not a member of its organization. */
export type PermissionsOf = (projectId: string, caller: UserCaller) => Promise<ReadonlySet<Permission> | null>

/** A caller's git permissions on one repository, or null when they belong neither to its project nor to its members. */
export type RepoPermissionsOf = (repo: Repo, caller: UserCaller) => Promise<ReadonlySet<Permission> | null>

export interface RepoAccess {
  read: boolean
  write: boolean
  admin: boolean
  /** The caller belongs to the project or the repository (a member, or its own deploy key): refusals may say why. */
  insider: boolean
}

export type GitService = 'upload-pack' | 'receive-pack'

const NOTHING: RepoAccess = { read: false, write: false, admin: false, insider: false }

/** What a repository role stands for: the git permissions it gives in that repository only. */
export const ROLE_PERMISSIONS: Record<RepoRoleT, readonly Permission[]> = {
  read: ['git.read'],
  write: ['git.read', 'git.write'],
  admin: ['git.read', 'git.write', 'git.admin']
}

function narrow (permissions: readonly Permission[], caller: UserCaller): Permission[] {
  if (caller.scopes === undefined || caller.scopes.length === 0) return [...permissions]
  return permissions.filter((permission) => caller.scopes?.includes(permission) === true)
}

/** The project's permissions and the repository role together: the stronger of the two wins. */
export function combine (project: ReadonlySet<Permission> | null, role: RepoRoleT | null, caller: UserCaller): ReadonlySet<Permission> | null {
  if (project === null && role === null) return null
  return new Set([...(project ?? []), ...(role === null ? [] : narrow(ROLE_PERMISSIONS[role], caller))])
}

/** What a caller may do with one repository: git permissions there, a deploy key's own repository, or a public one. */
export async function accessTo (repo: Repo, caller: GitCaller, permissionsOf: RepoPermissionsOf): Promise<RepoAccess> {
  const open = repo.visibility === 'public'
  if (caller.kind === 'deployKey') {
    if (caller.repoId !== repo._id) return { ...NOTHING, read: open }
    return { read: true, write: !caller.readOnly, admin: false, insider: true }
  }
  if (caller.kind === 'anonymous') return { ...NOTHING, read: open }
  const permissions = await permissionsOf(repo, caller)
  if (permissions === null) return { ...NOTHING, read: open }
  return { read: open || permissions.has('git.read'), write: permissions.has('git.write'), admin: permissions.has('git.admin'), insider: true }
}

export function writeLevel (access: { admin: boolean }): WriteLevel {
  return access.admin ? 'admin' : 'write'
}

/** How much an actor may change in the repository: `git.admin` holders more than writers; null for readers. */
export function actorLevel (actor: RepoActor): WriteLevel | null {
  return actor.permissions.has('git.admin') ? 'admin' : actor.permissions.has('git.write') ? 'write' : null
}

/**
 * Whether a transport request goes ahead: nobody gets 401 (so git asks for
 * credentials), whoever may not see the repository 404, and an insider
 * lacking the permission 403 naming it.
 */
export function authorize (repo: Repo | null, access: RepoAccess, caller: GitCaller, service: GitService): void {
  const permission: Permission = service === 'upload-pack' ? 'git.read' : 'git.write'
  const allowed = service === 'upload-pack' ? access.read : access.write
  if (repo !== null && allowed) return
  if (caller.kind === 'anonymous') throw gitErrors.authRequired()
  if (repo === null || (!access.read && !access.insider)) throw gitErrors.repositoryNotFound()
  if (caller.kind === 'deployKey' && caller.repoId === repo._id) throw gitErrors.readOnlyKey()
  throw permissionMissing(permission, caller.kind === 'user' ? caller.scopes : undefined)
}
// Route params are checked by their schemas; transport paths come raw, so both are checked here before any lookup.
const SAFE_ID = /^[0-9A-Za-z_-]{1,64}$/

export interface GitAccessDeps {
  repositories: Pick<Repositories, 'find' | 'list'>
  members: Pick<RepoMembers, 'roleOf' | 'rolesIn'>
  protection: Pick<ProtectedBranches, 'policy'>
  tagProtection: Pick<ProtectedTags, 'policy'>
  /** The one permission resolver, for the repository's project. */
  projectPermissions: PermissionsOf
}

/**
 * Every access decision on a repository, for the REST routes, smart HTTP and
 * SSH alike: the project's `git.*` permissions through the one resolver, the
 * caller's role as a member of the repository (the stronger wins, both
 * narrowed by a PAT's scopes), deploy keys and public visibility. Nothing is
 * cached: a removed member, a deleted user or a revoked token loses access
 * on the next request.
 */
export class GitAccess {
  constructor (private readonly deps: GitAccessDeps) {}

  async permissions (repo: Repo, caller: UserCaller): Promise<ReadonlySet<Permission> | null> {
    const [project, role] = await Promise.all([this.deps.projectPermissions(repo.projectId, caller), this.deps.members.roleOf(repo._id, caller.userId)])
    return combine(project, role, caller)
  }

  async canRead (repo: Repo, userId: string): Promise<boolean> {
    return (await this.permissions(repo, { userId }))?.has('git.read') === true
  }

  /**
   * The repository a REST route acts on, and what the caller may do there:
   * outsiders to both the project and the repository get 404 for the
   * project (they learn nothing), insiders 404 for a missing repository.
   * The route's permission is checked against what this returns.
   */
  async forRoute (caller: UserCaller, projectId: string, slug: string): Promise<{ repo: Repo, permissions: ReadonlySet<Permission> }> {
    const [project, repo] = await Promise.all([this.deps.projectPermissions(projectId, caller), this.deps.repositories.find(projectId, slug)])
    const role = repo === null ? null : await this.deps.members.roleOf(repo._id, caller.userId)
    const permissions = combine(project, role, caller)
    if (permissions === null) throw commonErrors.projectNotFound()
    if (repo === null) throw gitErrors.repositoryNotFound()
    return { repo, permissions }
  }

  /**
   * Whether the caller holds `permission` somewhere in the project: in the
   * project itself, or through their role in one of its repositories (both
   * narrowed by a PAT's scopes), as `forRoute` would grant it on that one.
   */
  async holdsAnywhere (caller: UserCaller, projectId: string, permission: Permission): Promise<boolean> {
    if ((await this.deps.projectPermissions(projectId, caller))?.has(permission) === true) return true
    const roles = await this.deps.members.rolesIn(projectId, caller.userId)
    return [...roles.values()].some((role) => narrow(ROLE_PERMISSIONS[role], caller).includes(permission))
  }

  /** The project's repositories the caller may read: all of them with `git.read` in the project, else those they are a member of. */
  async readableRepositories (caller: UserCaller, projectId: string): Promise<Repo[]> {
    const project = await this.deps.projectPermissions(projectId, caller)
    if (project?.has('git.read') === true) return await this.deps.repositories.list(projectId)
    const roles = await this.deps.members.rolesIn(projectId, caller.userId)
    if (project === null && roles.size === 0) throw commonErrors.projectNotFound()
    const readable = [...roles].filter(([, role]) => narrow(ROLE_PERMISSIONS[role], caller).includes('git.read')).map(([repoId]) => repoId)
    if (readable.length === 0) throw permissionMissing('git.read', caller.scopes)
    return (await this.deps.repositories.list(projectId)).filter((repo) => readable.includes(repo._id))
  }

  /** The repository at `projectId/slug` once the caller may use `service` on it, with the push policy for pushes; both transports ask this. */
  async forTransport (caller: GitCaller, projectId: string, slug: string, service: GitService): Promise<{ repo: Repo, policy?: PushPolicy }> {
    const repo = SAFE_ID.test(projectId) && isRepoSlug(slug) ? await this.deps.repositories.find(projectId, slug) : null
    const access = repo === null ? NOTHING : await accessTo(repo, caller, async (target, user) => await this.permissions(target, user))
    authorize(repo, access, caller, service)
    if (repo === null) throw new Error('unreachable: authorize refuses a missing repository')
    return service === 'receive-pack' ? { repo, policy: await this.policy(repo, writeLevel(access)) } : { repo }
  }

  private async policy (repo: Repo, level: WriteLevel): Promise<PushPolicy> {
    const [branches, tags] = await Promise.all([this.deps.protection.policy(repo, level), this.deps.tagProtection.policy(repo, level)])
    return { ...branches, tags }
  }
}
