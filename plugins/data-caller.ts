import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { commonErrors } from '../services/platform/errors.js'
import { platformDataCaller, type DataCaller } from '../services/collections/access.js'
import { claimedKind, optionalBearer, wrongToken } from '../http/credentials.js'
import { FileLinks } from '../services/collections/file-links.js'
import { AccessCheck } from '../services/collections/access-check.js'
import { systemClock } from '../services/platform/clock.js'
import { SignedLinks } from '../services/platform/signed-links.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Who is calling the data API of `params.projectId`: anonymous, an end user (project JWT) or a platform admin. */
    dataCaller: (request: FastifyRequest) => Promise<DataCaller>
    /** Signed links to record files, each acting for the caller who asked for it (docs/data.md). */
    fileLinks: FileLinks
    /** "Who can see this?": a collection's rules tried as an end user or anonymous caller (docs/data.md). */
    accessCheck: AccessCheck
  }
}

/**
 * The data API takes several credential kinds on one route, so instead of an
 * onRequest guard it resolves the caller and lets the method's rule decide.
 * A project JWT must be of this project; a platform JWT or PAT acts with the
 * caller's `records.*` permissions in the project's organization. A file
 * link stands for the caller who asked for it, re-checked as them when used.
 */
async function dataCallerPlugin (app: FastifyInstance): Promise<void> {
  const { config, projects } = app
  const { resolver } = app.orgs
  const { tokens, auth } = app.projectAuth

  const adminOf = async (projectId: string, platform: { userId: string, scopes?: string[], keyId?: string }): Promise<DataCaller> => {
    const project = await projects.findById(projectId)
    const access = project === null ? null : await resolver.access(project.orgId, platform, projectId)
    if (access === null) throw commonErrors.projectNotFound()
    return platformDataCaller(platform, access.permissions)
  }

  const asAdmin = async (projectId: string, token: string): Promise<DataCaller> => await adminOf(projectId, await app.verifyPlatformToken(token))

  const patStart = `${config.identity.patPrefix}_`
  const prefixes = { pat: config.identity.patPrefix, serviceToken: config.identity.serviceTokenPrefix }
  app.decorate('dataCaller', async (request: FastifyRequest): Promise<DataCaller> => {
    const { projectId } = request.params as { projectId: string }
    const token = optionalBearer(request, 'project JWT or platform credential')
    if (token === null) return { kind: 'anonymous' }
    if (token.startsWith(patStart)) return await asAdmin(projectId, token)
    if (tokens.verify(projectId, token) === null) {
      // Not this project's: a platform credential, a service token, or a project JWT that has expired or is another project's.
      const wrong = wrongToken(token, prefixes, 'data', projectId)
      if (wrong !== null) throw wrong
      if (claimedKind(token, prefixes) === 'projectJwt') throw commonErrors.invalidToken({ why: 'This project token is not valid: expired or tampered with' })
      return await asAdmin(projectId, token)
    }
    // Signed is not enough: the user must still exist, be enabled and hold the session the token was issued in.
    const user = await auth.endUser(projectId, token)
    return { kind: 'user', id: user.id, emailVerified: user.emailVerified }
  })

  app.decorate('accessCheck', new AccessCheck(app.store, {
    clock: systemClock,
    findCollection: async (projectId, name) => await app.collections.definitions.find(projectId, name),
    endUser: async (projectId, userId) => {
      const account = await app.projectAuth.users.account(projectId, userId)
      return account === null ? null : { emailVerified: account.user.emailVerified, disabled: account.disabled }
    }
  }))
  app.decorate('fileLinks', new FileLinks(new SignedLinks(app.deriveSecretKey('files:links')), systemClock, {
    endUserEpoch: async (projectId, userId) => {
      if ((await projects.findById(projectId))?.authEnabled !== true) return null
      const account = await app.projectAuth.users.account(projectId, userId)
      return account === null || account.disabled ? null : account.sessionEpoch
    },
    platformEpoch: async (userId) => (await app.identity.users.account(userId))?.sessionEpoch ?? null,
    patLive: async (userId, keyId) => await app.identity.apiKeys.live(userId, keyId),
    admin: adminOf
  }))
}

export default fp(dataCallerPlugin, {
  name: 'plinth-data-caller',
  fastify: '5.x',
  dependencies: ['plinth-config', 'plinth-secrets', 'plinth-store', 'plinth-auth', 'plinth-projects', 'plinth-orgs', 'plinth-collections', 'plinth-project-auth']
})
