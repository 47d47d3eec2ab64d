import fp from 'fastify-plugin'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { systemClock } from '../services/clock.js'
import { newId } from '../services/ids.js'
import { notFound, unauthorized } from '../services/errors.js'
import type { DataCaller } from '../services/collections/access.js'
import { Cursors } from '../services/collections/query.js'
import { Records } from '../services/collections/records.js'
import { recordSchemas } from '../schemas/records.js'
import { PROJECT_USERS_TABLE } from '../services/projects/naming.js'
import { optionalBearer } from './credentials.js'

declare module 'fastify' {
  interface FastifyInstance {
    records: Records
    /** Who is calling the data API of `params.projectId`: anonymous, an end user (project JWT) or a platform admin. */
    dataCaller: (request: FastifyRequest) => Promise<DataCaller>
  }
}

/**
 * The data API takes several credential kinds on one route, so instead of an
 * onRequest guard it resolves the caller and lets the method's rule decide.
 * A project JWT must be of this project; a platform JWT or PAT acts with the
 * caller's `records.*` permissions in the project's organization.
 */
async function recordsPlugin (app: FastifyInstance): Promise<void> {
  const { config } = app
  const { tokens, auth } = app.projectAuth
  const records = new Records(app.store, {
    clock: systemClock,
    newId,
    cursors: new Cursors(app.deriveSecretKey('records:cursor')),
    findCollection: async (projectId, name) => await app.collections.definitions.find(projectId, name),
    writes: app.collections.writes
  })
  for (const schema of recordSchemas) app.addSchema(schema)
  app.decorate('records', records)

  const asAdmin = async (projectId: string, token: string): Promise<DataCaller> => {
    const platform = await app.verifyPlatformToken(token)
    const project = await app.projects.findById(projectId)
    const access = project === null ? null : await app.orgs.resolver.access(project.orgId, platform, projectId)
    if (access === null) throw notFound('APP_PROJECT_NOT_FOUND', 'Project not found')
    return { kind: 'admin', userId: platform.userId, canRead: access.permissions.has('records.read'), canWrite: access.permissions.has('records.write') }
  }

  const serviceTokenStart = `${config.serviceTokenPrefix}_`
  const patStart = `${config.patPrefix}_`
  app.decorate('dataCaller', async (request: FastifyRequest): Promise<DataCaller> => {
    const { projectId } = request.params as { projectId: string }
    const token = optionalBearer(request, 'project JWT or platform credential')
    if (token === null) return { kind: 'anonymous' }
    if (token.startsWith(serviceTokenStart)) throw unauthorized('APP_INVALID_TOKEN', 'A service token only calls auth/verify; use a project JWT or a platform credential')
    if (token.startsWith(patStart)) return await asAdmin(projectId, token)
    if (tokens.verify(projectId, token) === null) return await asAdmin(projectId, token)
    // Signed is not enough: the user must still exist, be enabled and hold the session the token was issued in.
    return { kind: 'user', id: (await auth.endUser(projectId, token)).id }
  })

  // A user deleted or disabled through the data API loses every session at once.
  records.onRemove(async (projectId, collection, docs) => {
    if (collection.name === PROJECT_USERS_TABLE) await auth.endSessions(projectId, docs.map((doc) => doc._id))
  })
  records.onUpdate(async (projectId, collection, ids, changes) => {
    if (collection.name === PROJECT_USERS_TABLE) await auth.usersUpdated(projectId, ids, changes)
  })
}

export default fp(recordsPlugin, { name: 'plinth-records', fastify: '5.x', dependencies: ['plinth-auth', 'plinth-project-auth', 'plinth-permissions', 'plinth-collections'] })
