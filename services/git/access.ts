import { forbidden, notFound, unauthorized } from '../errors.js'
import type { Permission } from '../orgs/catalogue.js'
import type { Repo } from './repositories.js'
import type { WriteLevel } from './protection.js'

/** Who is speaking git: nobody, a platform user (JWT or PAT), or a repository's deploy key. */
export type GitCaller =
  | { kind: 'anonymous' }
  | { kind: 'user', userId: string, scopes?: string[] }
  | { kind: 'deployKey', keyId: string, projectId: string, repoId: string, readOnly: boolean }

/** A member's permissions in a project, or null when the caller is not a member of its organization. */
export type PermissionsOf = (projectId: string, caller: { userId: string, scopes?: string[] }) => Promise<ReadonlySet<Permission> | null>

export interface RepoAccess {
  read: boolean
  write: boolean
  admin: boolean
  /** The caller belongs to the project (a member or the repository's own deploy key): refusals may say why. */
  insider: boolean
}

export type GitService = 'upload-pack' | 'receive-pack'

const NOTHING: RepoAccess = { read: false, write: false, admin: false, insider: false }

/** What a caller may do with one repository: `git.read`/`git.write`/`git.admin`, a deploy key's own repository, or a public one. */
export async function accessTo (repo: Repo, caller: GitCaller, permissionsOf: PermissionsOf): Promise<RepoAccess> {
  const open = repo.visibility === 'public'
  if (caller.kind === 'deployKey') {
    if (caller.repoId !== repo._id) return { ...NOTHING, read: open }
    return { read: true, write: !caller.readOnly, admin: false, insider: true }
  }
  if (caller.kind === 'anonymous') return { ...NOTHING, read: open }
  const permissions = await permissionsOf(repo.projectId, caller)
  if (permissions === null) return { ...NOTHING, read: open }
  return { read: open || permissions.has('git.read'), write: permissions.has('git.write'), admin: permissions.has('git.admin'), insider: true }
}

export function writeLevel (access: RepoAccess): WriteLevel {
  return access.admin ? 'admin' : 'write'
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
  if (caller.kind === 'anonymous') throw unauthorized('APP_GIT_AUTH_REQUIRED', 'Sign in: give a personal access token, a platform JWT or a deploy key token as the password')
  if (repo === null || (!access.read && !access.insider)) throw notFound('APP_GIT_REPOSITORY_NOT_FOUND', 'Repository not found')
  if (caller.kind === 'deployKey' && caller.repoId === repo._id) throw forbidden('APP_GIT_READ_ONLY_KEY', 'This deploy key is read-only')
  throw forbidden('APP_FORBIDDEN', `This needs the "${permission}" permission`, { permission })
}
