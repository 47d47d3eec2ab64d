import { join } from 'node:path'
import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import type { PlatformUsers } from '../identity/users.js'
import type { SshKeys } from '../identity/ssh-keys.js'
import type { Store } from '../store/types.js'
import { GitAccess, type GitCaller, type PermissionsOf } from './access.js'
import type { GitConfig } from './config.js'
import { DeployKeys } from './deploy-keys.js'
import { GitCli, MIN_GIT_VERSION, versionAtLeast } from './git-cli.js'
import { History } from './history.js'
import { RepoLabels } from './labels.js'
import { RepoMembers } from './members.js'
import { installHooks } from './pre-receive.js'
import { ProtectedBranches } from './protection.js'
import { RepoReader } from './reader.js'
import { Refs } from './refs.js'
import { Repositories } from './repositories.js'
import type { SshGitDeps } from './ssh-server.js'
import { ProtectedTags } from './tag-protection.js'
import { Transport } from './transport.js'
import { Writer, type Signature } from './writer.js'

/** What the git family is built from. */
export interface GitPorts {
  store: Store
  clock: Clock
  newId: IdGenerator
  config: GitConfig
  /** PUBLIC_URL: clone URLs are under it. */
  publicUrl: string
  /** The port git over SSH listens on once started; null while it is not (or SSH is off). */
  sshPort: () => number | null
  /** Platform users: members are found by id or e-mail address, and sign what the server writes. */
  users: Pick<PlatformUsers, 'get' | 'findById' | 'findByEmail' | 'findMany' | 'account'>
  /** Users' SSH keys, which no deploy key may share. */
  userKeys: Pick<SshKeys, 'ownerOf' | 'onAdd'>
  /** The one permission resolver, for a repository's project. */
  projectPermissions: PermissionsOf
  /** Told when a git run serving a clone, fetch or push ends, by service and transport (metrics). */
  onGitRun?: ConstructorParameters<typeof Transport>[0]['onRun']
}

export interface GitServices {
  /** GIT_HOSTING_ENABLED: when off the services still exist (a deleted project takes earlier repositories along) but the routes answer 404. */
  enabled: boolean
  repositories: Repositories
  protection: ProtectedBranches
  tagProtection: ProtectedTags
  labels: RepoLabels
  members: RepoMembers
  access: GitAccess
  refs: Refs
  history: History
  /** The one reader of repository content, so every family shares its pack cache. */
  reader: RepoReader
  /** The one git binary runner. */
  git: GitCli
  deployKeys: DeployKeys
  transport: Transport
  /** The repository at `projectId/slug` once the caller may use the git service on it, with the push policy for pushes; both transports ask this. */
  authorize: SshGitDeps['authorize']
  /** Who an SSH key stands for: a user's registered key, a deploy key, or nobody. */
  sshCaller: SshGitDeps['callerFor']
  /** How the SSH greeting of a session without a command names its caller: a user, or a deploy key's repository. */
  describeCaller: SshGitDeps['describe']
  /** A platform user as the author of what the server writes (README commits, annotated tags, merges). */
  signature: (userId: string) => Promise<Signature & { userId: string }>
  /** The port git over SSH listens on once started; null while it is not (or SSH is off). */
  sshPort: () => number | null
}

/**
 * The git family's services, their indexes made and their cleanups joined.
 * With hosting on, git itself is looked for (a version too old stops the
 * start) and the shared pre-receive hook is written; with it off, neither.
 */
export async function buildGitServices (ports: GitPorts): Promise<GitServices> {
  const { store, clock, newId, config, users } = ports
  const git = new GitCli()
  const hooksDir = join(config.reposDir, '.hooks')
  if (config.enabled) {
    const version = await git.version().catch(() => null)
    if (version === null || !versionAtLeast(version)) {
      throw new Error(`Git hosting needs git ${MIN_GIT_VERSION.join('.')} or newer on the PATH (found ${version?.join('.') ?? 'none'}); install it or set GIT_HOSTING_ENABLED=false`)
    }
    await installHooks(hooksDir)
  }
  const reader = new RepoReader()
  const host = new URL(ports.publicUrl).hostname
  const repositories = new Repositories(store, {
    clock,
    newId,
    git,
    reader,
    reposDir: config.reposDir,
    httpUrl: (projectId, slug) => `${ports.publicUrl}/git/${projectId}/${slug}.git`,
    sshUrl: (projectId, slug) => {
      const port = ports.sshPort()
      return port === null ? null : `ssh://git@${host}:${port}/${projectId}/${slug}.git`
    }
  })
  const protection = new ProtectedBranches(store, { clock, newId })
  const tagProtection = new ProtectedTags(store, { clock, newId })
  const labels = new RepoLabels(store, { clock, newId })
  const members = new RepoMembers(store, {
    clock,
    findUser: async (reference) => reference.includes('@') ? await users.findByEmail(reference) : await users.findById(reference),
    findUsers: async (ids) => await users.findMany(ids)
  })
  const deployKeys = new DeployKeys(store, { clock, newId, userKeyOwner: async (fingerprint) => await ports.userKeys.ownerOf(fingerprint) })
  ports.userKeys.onAdd(async (fingerprint) => await deployKeys.byFingerprint(fingerprint) !== null)
  await Promise.all([repositories.init(), protection.init(), tagProtection.init(), labels.init(), members.init(), deployKeys.init()])
  for (const owned of [deployKeys, protection, tagProtection, labels, members]) repositories.onDelete(async (repo) => { await owned.deleteForRepo(repo) })
  const access = new GitAccess({ repositories, members, protection, tagProtection, projectPermissions: ports.projectPermissions })
  return {
    enabled: config.enabled,
    repositories,
    protection,
    tagProtection,
    labels,
    members,
    access,
    refs: new Refs({ reader, writer: new Writer(git, clock), protection, tagProtection }),
    history: new History({ reader, git }),
    reader,
    git,
    deployKeys,
    transport: new Transport({ git, hooksDir, onRun: ports.onGitRun }),
    authorize: async (caller, projectId, slug, service) => await access.forTransport(caller, projectId, slug, service),
    sshCaller: async (fingerprint): Promise<GitCaller | null> => {
      const [userId, key] = await Promise.all([ports.userKeys.ownerOf(fingerprint), deployKeys.byFingerprint(fingerprint)])
      // Each side refuses the other's keys when added; one held by both anyway (written before that) stands for nobody.
      if (userId !== null && key !== null) return null
      if (userId !== null) return await users.account(userId) === null ? null : { kind: 'user', userId }
      return key === null ? null : { kind: 'deployKey', ...key }
    },
    describeCaller: async (caller) => {
      if (caller.kind === 'user') {
        const user = await users.findById(caller.userId)
        return user === null ? 'there' : `${user.name} (${user.email})`
      }
      if (caller.kind === 'deployKey') {
        const repo = await repositories.findById(caller.projectId, caller.repoId)
        return `deploy key of ${caller.projectId}/${repo?.slug ?? caller.repoId}${caller.readOnly ? ' (read-only)' : ''}`
      }
      return 'there'
    },
    signature: async (userId) => {
      const user = await users.get(userId)
      return { userId, name: user.name, email: user.email }
    },
    sshPort: ports.sshPort
  }
}
