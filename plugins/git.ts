import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import fp from 'fastify-plugin'
import ssh2 from 'ssh2'
import type { FastifyInstance, FastifyRequest } from 'fastify'
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
import { accessTo, authorize, writeLevel, type GitCaller, type GitService, type PermissionsOf } from '../services/git/access.js'
import { isRepoSlug } from '../services/git/names.js'
import { installHooks } from '../services/git/pre-receive.js'
import { Transport } from '../services/git/transport.js'
import { GitSshServer, type SshGitDeps } from '../services/git/ssh-server.js'
import { gitCredential } from './credentials.js'

export interface GitHosting {
  enabled: boolean
  repositories: Repositories
  protection: ProtectedBranches
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
  }
  interface FastifyRequest {
    gitCaller: GitCaller | null
  }
}

/** The git caller resolved by `auth: 'git'`. */
export function gitCaller (request: FastifyRequest): GitCaller {
  if (request.gitCaller === null) throw new AppError('APP_INTERNAL', 500, 'route is missing auth: \'git\'')
  return request.gitCaller
}

/** The answer of every git route while GIT_HOSTING_ENABLED is off. */
export function gitDisabled (): AppError {
  return notFound('APP_GIT_HOSTING_DISABLED', 'Git hosting is not enabled on this server (GIT_HOSTING_ENABLED)')
}

const SAFE_ID = /^[0-9A-Za-z_-]{1,64}$/

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
  const deployKeys = new DeployKeys(app.store, { ...deps, userKeyOwner: async (fingerprint) => await app.identity.sshKeys.ownerOf(fingerprint) })
  app.identity.sshKeys.onAdd(async (fingerprint) => await deployKeys.byFingerprint(fingerprint) !== null)
  await Promise.all([repositories.init(), protection.init(), deployKeys.init()])
  repositories.onDelete(async (repo) => { await deployKeys.deleteForRepo(repo) })
  repositories.onDelete(async (repo) => { await protection.deleteForRepo(repo) })
  app.projects.onDelete(async (projectId) => { await repositories.deleteAllForProject(projectId) })
  for (const schema of gitSchemas) app.addSchema(schema)

  const permissionsOf: PermissionsOf = async (projectId, caller) => {
    const project = await app.projects.findById(projectId)
    if (project === null) return null
    return (await app.orgs.resolver.access(project.orgId, caller, projectId))?.permissions ?? null
  }
  const authorizeGit = async (caller: GitCaller, projectId: string, slug: string, service: GitService) => {
    const repo = SAFE_ID.test(projectId) && isRepoSlug(slug) ? await repositories.find(projectId, slug) : null
    const access = repo === null ? { read: false, write: false, admin: false, insider: false } : await accessTo(repo, caller, permissionsOf)
    authorize(repo, access, caller, service)
    if (repo === null) throw new Error('unreachable: authorize refuses a missing repository')
    return service === 'receive-pack' ? { repo, policy: await protection.policy(repo, writeLevel(access)) } : { repo }
  }
  const transport = new Transport({ git: cli, hooksDir })
  app.decorate('git', {
    enabled,
    repositories,
    protection,
    refs: new Refs({ reader, writer: new Writer(cli, systemClock), protection }),
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
      transport,
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
