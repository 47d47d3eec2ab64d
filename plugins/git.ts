import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import fp from 'fastify-plugin'
import ssh2 from 'ssh2'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { systemClock } from '../services/platform/clock.js'
import { commonErrors } from '../services/platform/errors.js'
import { newId } from '../services/platform/ids.js'
import { gitSchemas } from '../schemas/git.js'
import { DEPLOY_TOKEN_PREFIX } from '../services/git/deploy-keys.js'
import { gitErrors } from '../services/git/errors.js'
import { buildGitServices, type GitServices } from '../services/git/index.js'
import type { Repo } from '../services/git/repositories.js'
import { GitSshServer } from '../services/git/ssh-server.js'
import { gitCredential } from '../http/credentials.js'
import { setCaller } from '../http/caller.js'

declare module 'fastify' {
  interface FastifyInstance {
    git: GitServices
    /** onRequest of git clients: a token in Basic or Bearer (PAT, platform JWT, deploy key token), or nobody. */
    requireGitCaller: (request: FastifyRequest) => Promise<void>
  }
}

declare module './permissions.js' {
  interface ParentKinds {
    /**
     * `params.repoSlug` of `params.projectId`, as the caller may reach it: from the
     * project, or as a member of the repository (an outside collaborator reaches it alone).
     */
    repository: Repo
  }
}

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

/** The SSH host key in DATA_DIR, made on first start, so clients see the same host key on every restart. */
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
 * Builds the family's services, offers the repository parent to routes,
 * takes a deleted project's repositories with it, authenticates git clients
 * and runs the SSH server. With GIT_HOSTING_ENABLED off the services still
 * exist but no listener starts.
 */
async function gitPlugin (app: FastifyInstance): Promise<void> {
  const { config } = app
  let sshPort: number | null = null
  const git = await buildGitServices({
    store: app.store,
    clock: systemClock,
    newId,
    config: config.git,
    publicUrl: config.publicUrl,
    sshPort: () => sshPort,
    onGitRun: app.metrics === null ? undefined : app.metrics.registry.gitRun.bind(app.metrics.registry),
    users: app.identity.users,
    userKeys: app.identity.sshKeys,
    projectPermissions: async (projectId, caller) => {
      const project = await app.projects.findById(projectId)
      if (project === null) return null
      return (await app.orgs.resolver.access(project.orgId, caller, projectId))?.permissions ?? null
    }
  })
  for (const schema of gitSchemas) app.addSchema(schema)
  app.projects.onDelete(async (projectId) => { await git.repositories.deleteAllForProject(projectId) })
  app.registerParent('repository', {
    errors: [commonErrors.projectNotFound, gitErrors.repositoryNotFound],
    decidesAccess: true,
    needs: (permission) => `Needs \`${permission}\`, in the project or through a role in the repository.`,
    load: async (request, { caller }) => {
      const { projectId, repoSlug } = request.params as { projectId: string, repoSlug: string }
      const { repo, permissions } = await git.access.forRoute(caller.user, projectId, repoSlug)
      return { value: repo, permissions, scopes: caller.user.scopes }
    }
  })
  app.decorate('git', git)

  app.decorate('requireGitCaller', async (request: FastifyRequest) => {
    const token = gitCredential(request)
    if (token === null) { setCaller(request, 'git', { kind: 'anonymous' }); return }
    if (token.startsWith(`${DEPLOY_TOKEN_PREFIX}_`)) {
      const key = await git.deployKeys.authenticate(token)
      if (key !== null) { setCaller(request, 'git', { kind: 'deployKey', ...key }); return }
    }
    const auth = await app.verifyPlatformToken(token)
    setCaller(request, 'git', { kind: 'user', userId: auth.userId, ...(auth.scopes === undefined ? {} : { scopes: auth.scopes }) })
  })

  const port = config.git.sshPort
  if (git.enabled && port !== null) {
    const server = new GitSshServer({
      hostKey: hostKey(config.dataDir),
      callerFor: git.sshCaller,
      authorize: git.authorize,
      describe: git.describeCaller,
      transport: git.transport,
      limits: config.git.sshLimits,
      log: app.log
    })
    // Started once the app is ready, so a test or a server that never gets there holds no port.
    app.addHook('onReady', async () => {
      sshPort = await server.listen(port, config.host)
      app.log.info({ port: sshPort, host: config.host }, 'git over SSH listening')
    })
    app.addHook('preClose', async () => { await server.close() })
  }
}

export default fp(gitPlugin, {
  name: 'plinth-git',
  fastify: '5.x',
  dependencies: ['plinth-config', 'plinth-store', 'plinth-metrics', 'plinth-auth', 'plinth-projects', 'plinth-orgs', 'plinth-permissions']
})
