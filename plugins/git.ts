import { join } from 'node:path'
import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { AppError, notFound } from '../services/errors.js'
import { systemClock } from '../services/clock.js'
import { newId } from '../services/ids.js'
import { gitSchemas } from '../schemas/git.js'
import { GitCli, MIN_GIT_VERSION, versionAtLeast } from '../services/git/git-cli.js'
import { RepoReader } from '../services/git/reader.js'
import { Writer, type Signature } from '../services/git/writer.js'
import { Repositories, type Repo } from '../services/git/repositories.js'
import { ProtectedBranches } from '../services/git/protection.js'
import { Refs } from '../services/git/refs.js'
import { History } from '../services/git/history.js'
import { DeployKeys, DEPLOY_TOKEN_PREFIX } from '../services/git/deploy-keys.js'
import { accessTo, type GitCaller, type PermissionsOf, type RepoAccess } from '../services/git/access.js'
import { installHooks } from '../services/git/pre-receive.js'
import { Transport } from '../services/git/transport.js'
import { gitCredential } from './credentials.js'

export interface GitHosting {
  enabled: boolean
  repositories: Repositories
  protection: ProtectedBranches
  refs: Refs
  history: History
  deployKeys: DeployKeys
  transport: Transport
  /** What a caller may do with a repository, through the one permission resolver. */
  access: (repo: Repo, caller: GitCaller) => Promise<RepoAccess>
  /** A platform user as the author of what the server writes (README commits, annotated tags). */
  signature: (userId: string) => Promise<Signature & { userId: string }>
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

/**
 * Git hosting: repositories on disk under GIT_REPOS_DIR, their records in the
 * Store, and the smart-protocol transport. With GIT_HOSTING_ENABLED off the
 * services still exist (a project's deletion still removes repositories made
 * earlier) but the routes answer 404 and git itself is never looked for.
 */
async function gitPlugin (app: FastifyInstance): Promise<void> {
  const { enabled, reposDir } = app.config.git
  const cli = new GitCli()
  const hooksDir = join(reposDir, '.hooks')
  if (enabled) {
    const version = await cli.version().catch(() => null)
    if (version === null || !versionAtLeast(version)) {
      throw new Error(`Git hosting needs git ${MIN_GIT_VERSION.join('.')} or newer on the PATH (found ${version?.join('.') ?? 'none'}); install it or set GIT_HOSTING_ENABLED=false`)
    }
    await installHooks(hooksDir)
  }
  const reader = new RepoReader()
  const deps = { clock: systemClock, newId }
  const repositories = new Repositories(app.store, {
    ...deps,
    git: cli,
    reader,
    reposDir,
    httpUrl: (projectId, slug) => `${app.config.publicUrl}/git/${projectId}/${slug}.git`
  })
  const protection = new ProtectedBranches(app.store, deps)
  const deployKeys = new DeployKeys(app.store, deps)
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
  app.decorate('git', {
    enabled,
    repositories,
    protection,
    refs: new Refs({ reader, writer: new Writer(cli, systemClock), protection }),
    history: new History({ reader, git: cli }),
    deployKeys,
    transport: new Transport({ git: cli, hooksDir }),
    access: async (repo, caller) => await accessTo(repo, caller, permissionsOf),
    signature: async (userId) => {
      const user = await app.identity.users.get(userId)
      return { userId, name: user.name, email: user.email }
    }
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
}

export default fp(gitPlugin, {
  name: 'plinth-git',
  fastify: '5.x',
  dependencies: ['plinth-config', 'plinth-store', 'plinth-auth', 'plinth-projects', 'plinth-orgs']
})
