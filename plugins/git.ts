import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import fp from 'fastify-plugin'
import ssh2 from 'ssh2'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import type { Permission } from '../services/orgs/catalogue.js'
import { AppError, notFound } from '../services/errors.js'
import { systemClock } from '../services/clock.js'
import { newId } from '../services/ids.js'
import { gitSchemas } from '../schemas/git.js'
import { GitCli, MIN_GIT_VERSION, versionAtLeast } from '../services/git/git-cli.js'
import { RepoReader } from '../services/git/reader.js'
import { Writer, type Signature } from '../services/git/writer.js'
import { Repositories } from '../services/git/repositories.js'
import { ProtectedBranches } from '../services/git/protection.js'
import { Refs } from '../services/git/refs.js'
import { History } from '../services/git/history.js'
import { DeployKeys, DEPLOY_TOKEN_PREFIX } from '../services/git/deploy-keys.js'
import { GitAccess, type GitCaller } from '../services/git/access.js'
import { RepoLabels } from '../services/git/labels.js'
import { RepoMembers } from '../services/git/members.js'
import { ProtectedTags } from '../services/git/tag-protection.js'
import type { Repo } from '../services/git/repositories.js'
import { installHooks } from '../services/git/pre-receive.js'
import { Transport } from '../services/git/transport.js'
import { GitSshServer, type SshGitDeps } from '../services/git/ssh-server.js'
import { gitCredential } from './credentials.js'
import { platformCaller } from './auth.js'

export interface GitHosting {
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
  deployKeys: DeployKeys
  transport: Transport
  /** The repository at `projectId/slug` once the caller may use the git service on it, with the push policy for pushes; both transports ask this. */
  authorize: SshGitDeps['authorize']
  /** A platform user as the author of what the server writes (README commits, annotated tags). */
  signature: (userId: string) => Promise<Signature & { userId: string }>
  /** The port git over SSH listens on once the app is ready; null when SSH is off. */
  sshPort: () => number | null
}

declare module 'fastify' {
  interface FastifyInstance {
    git: GitHosting
    /** onRequest of git clients: a token in Basic or Bearer (PAT, platform JWT, deploy key token), or nobody. */
    requireGitCaller: (request: FastifyRequest) => Promise<void>
    /**
     * preHandler of the REST routes under a repository: `params.repoSlug` of
     * `params.projectId` exists and the caller holds `permission` there, from
     * the project or as a member of the repository.
     */
    requireRepoPermission: (permission: Permission) => (request: FastifyRequest) => Promise<void>
  }
  interface FastifyRequest {
    gitCaller: GitCaller | null
    gitRepo: RepoOfRequest | null
  }
}

interface RepoOfRequest { repo: Repo, permissions: ReadonlySet<Permission> }

/** @deprecated once git registers its `repository` parent: read `request.scope.repository`. The repository of a route behind requireRepoPermission, and the caller's git permissions there. */
export function repoOfRequest (request: FastifyRequest): RepoOfRequest {
  if (request.gitRepo === null) throw new AppError('APP_INTERNAL', 500, 'route is missing its repository permission hook')
  return request.gitRepo
}

/** @deprecated read `request.caller.git`. The git caller resolved by `auth: 'git'`. */
export function gitCaller (request: FastifyRequest): GitCaller {
  if (request.gitCaller === null) throw new AppError('APP_INTERNAL', 500, 'route is missing auth: \'git\'')
  return request.gitCaller
}

/** The answer of every git route while GIT_HOSTING_ENABLED is off. */
export function gitDisabled (): AppError {
  return notFound('APP_GIT_HOSTING_DISABLED', 'Git hosting is not enabled on this server (GIT_HOSTING_ENABLED)')
}

/** The SSH host key in DATA_DIR, made on first start, so clients see the same host key on every restart. */
/**
 * ssh2 writes, about once in 150, an ed25519 key its own parser then refuses
 * as malformed; a server holding one could never start, so a key is kept only
 * once it reads back.
 */
function newHostKey (): string {
  for (let attempt = 0; attempt < 20; attempt++) {
    const key = ssh2.utils.generateKeyPairSync('ed25519').private
    if (!(ssh2.utils.parseKey(key) instanceof Error)) return key
  }
  throw new Error('could not make an SSH host key that reads back')
}

function hostKey (dataDir: string): string {
  const file = join(dataDir, 'ssh_host_ed25519_key')
  try {
    writeFileSync(file, newHostKey(), { mode: 0o600, flag: 'wx' })
  } catch (error) {
    // Made already, maybe just now by another process on the same DATA_DIR: that one is the key.
    if ((error as { code?: string }).code !== 'EEXIST') throw error
  }
  return readFileSync(file, 'utf8')
}

/**
 * Git hosting: repositories on disk under GIT_REPOS_DIR, their records in the
 * Store, the smart-protocol transport over HTTP and (with GIT_SSH_PORT) SSH.
 * With GIT_HOSTING_ENABLED off the services still exist (a project's deletion
 * still removes repositories made earlier) but the routes answer 404, no
 * listener starts and git itself is never looked for.
 */
async function gitPlugin (app: FastifyInstance): Promise<void> {
  const { config } = app
  const { enabled, reposDir } = config.git
  const cli = new GitCli()
  const hooksDir = join(reposDir, '.hooks')
  if (enabled) {
    const version = await cli.version().catch(() => null)
    if (version === null || !versionAtLeast(version)) {
      throw new Error(`Git hosting needs git ${MIN_GIT_VERSION.join('.')} or newer on the PATH (found ${version?.join('.') ?? 'none'}); install it or set GIT_HOSTING_ENABLED=false`)
    }
    await installHooks(hooksDir)
  }
  let sshPort: number | null = null
  const reader = new RepoReader()
  const deps = { clock: systemClock, newId }
  const repositories = new Repositories(app.store, {
    ...deps,
    git: cli,
    reader,
    reposDir,
    httpUrl: (projectId, slug) => `${config.publicUrl}/git/${projectId}/${slug}.git`,
    sshUrl: (projectId, slug) => sshPort === null ? null : `ssh://git@${new URL(config.publicUrl).hostname}:${sshPort}/${projectId}/${slug}.git`
  })
  const protection = new ProtectedBranches(app.store, deps)
  const tagProtection = new ProtectedTags(app.store, deps)
  const labels = new RepoLabels(app.store, deps)
  const { users } = app.identity
  const members = new RepoMembers(app.store, {
    clock: systemClock,
    findUser: async (reference) => reference.includes('@') ? await users.findByEmail(reference) : await users.findById(reference),
    findUsers: async (ids) => await users.findMany(ids)
  })
  const deployKeys = new DeployKeys(app.store, { ...deps, userKeyOwner: async (fingerprint) => await app.identity.sshKeys.ownerOf(fingerprint) })
  app.identity.sshKeys.onAdd(async (fingerprint) => await deployKeys.byFingerprint(fingerprint) !== null)
  await Promise.all([repositories.init(), protection.init(), tagProtection.init(), labels.init(), members.init(), deployKeys.init()])
  for (const owned of [deployKeys, protection, tagProtection, labels, members]) repositories.onDelete(async (repo) => { await owned.deleteForRepo(repo) })
  app.projects.onDelete(async (projectId) => { await repositories.deleteAllForProject(projectId) })
  for (const schema of gitSchemas) app.addSchema(schema)

  const access = new GitAccess({
    repositories,
    members,
    protection,
    tagProtection,
    projectPermissions: async (projectId, caller) => {
      const project = await app.projects.findById(projectId)
      if (project === null) return null
      return (await app.orgs.resolver.access(project.orgId, caller, projectId))?.permissions ?? null
    }
  })
  const authorizeGit: GitHosting['authorize'] = async (caller, projectId, slug, service) => await access.forTransport(caller, projectId, slug, service)
  const transport = new Transport({ git: cli, hooksDir })
  app.decorate('git', {
    enabled,
    repositories,
    protection,
    tagProtection,
    labels,
    members,
    access,
    refs: new Refs({ reader, writer: new Writer(cli, systemClock), protection, tagProtection }),
    history: new History({ reader, git: cli }),
    reader,
    deployKeys,
    transport,
    authorize: authorizeGit,
    signature: async (userId) => {
      const user = await app.identity.users.get(userId)
      return { userId, name: user.name, email: user.email }
    },
    sshPort: () => sshPort
  } satisfies GitHosting)

  app.decorateRequest('gitCaller', null)
  app.decorateRequest('gitRepo', null)
  app.decorate('requireRepoPermission', (permission: Permission) => async (request: FastifyRequest) => {
    const params = request.params as { projectId: string, repoSlug: string }
    request.gitRepo = await access.forRoute(platformCaller(request), params.projectId, params.repoSlug, permission)
  })
  app.decorate('requireGitCaller', async (request: FastifyRequest) => {
    const token = gitCredential(request)
    if (token === null) { request.gitCaller = { kind: 'anonymous' }; return }
    if (token.startsWith(`${DEPLOY_TOKEN_PREFIX}_`)) {
      const key = await deployKeys.authenticate(token)
      if (key !== null) { request.gitCaller = { kind: 'deployKey', ...key }; return }
    }
    const auth = await app.verifyPlatformToken(token)
    request.gitCaller = { kind: 'user', userId: auth.userId, ...(auth.scopes === undefined ? {} : { scopes: auth.scopes }) }
  })

  if (enabled && config.git.sshPort !== null) {
    const server = new GitSshServer({
      hostKey: hostKey(config.dataDir),
      callerFor: async (fingerprint) => {
        const userId = await app.identity.sshKeys.ownerOf(fingerprint)
        const key = await deployKeys.byFingerprint(fingerprint)
        // Each side refuses the other's keys when added; one held by both anyway (written before that) stands for nobody.
        if (userId !== null && key !== null) return null
        if (userId !== null) return await app.identity.users.account(userId) === null ? null : { kind: 'user', userId }
        return key === null ? null : { kind: 'deployKey', ...key }
      },
      authorize: authorizeGit,
      describe: async (caller) => {
        if (caller.kind === 'user') {
          const user = await app.identity.users.findById(caller.userId)
          return user === null ? 'there' : `${user.name} (${user.email})`
        }
        if (caller.kind === 'deployKey') {
          const repo = await repositories.findById(caller.projectId, caller.repoId)
          return `deploy key of ${caller.projectId}/${repo?.slug ?? caller.repoId}${caller.readOnly ? ' (read-only)' : ''}`
        }
        return 'there'
      },
      transport,
      limits: config.git.sshLimits,
      log: app.log
    })
    const port = config.git.sshPort
    app.addHook('onReady', async () => { sshPort = await server.listen(port, config.host) })
    app.addHook('preClose', async () => { await server.close() })
  }
}

export default fp(gitPlugin, {
  name: 'plinth-git',
  fastify: '5.x',
  dependencies: ['plinth-config', 'plinth-store', 'plinth-auth', 'plinth-projects', 'plinth-orgs']
})
