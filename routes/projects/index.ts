import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  CreateProjectBody, ListProjectsQuery, ProjectIdParams, ProjectParams, ProjectResponses, ToggleAuthBody, UpdateProjectBody
} from '../../schemas/projects.js'
import { platformCaller } from '../../plugins/auth.js'
import { requestProject } from '../../plugins/permissions.js'
import serviceTokenRoutes from './service-tokens.js'
import projectUserRoutes from './users.js'
import collectionDefinitionRoutes from '../collections/definitions.js'
import { createdAt } from '../location.js'

const projectRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { projects } = app
  const { resolver } = app.orgs

  app.get('', {
    config: { auth: 'platform' },
    schema: { operationId: 'listProjects', tags: ['projects'], summary: 'Projects the caller may read, optionally in one organization', description: 'Every project in the organizations where the caller holds `project.read`; `orgId` narrows it to one organization.', querystring: ListProjectsQuery, response: ProjectResponses.list }
  }, async (request) => {
    const orgIds = await resolver.organizationsWhere(platformCaller(request), 'project.read')
    const wanted = request.query.orgId === undefined ? orgIds : orgIds.filter((id) => id === request.query.orgId)
    return { success: true as const, data: await projects.listInOrganizations(wanted) }
  })

  app.post('', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('project.create', { orgIdIn: 'body' }),
    schema: { operationId: 'createProject', tags: ['projects'], summary: 'Create a project in an organization', description: 'Needs `project.create` in the organization named by `orgId`. The slug is derived from the name when omitted and must be unique in the organization (409 `APP_SLUG_TAKEN`).', body: CreateProjectBody, response: ProjectResponses.created }
  }, async (request, reply) => {
    const { orgId, ...input } = request.body
    const project = await projects.create(orgId, platformCaller(request).userId, input)
    return reply.code(201).header('location', createdAt(request, project.id)).send({ success: true as const, data: project })
  })

  app.get('/:id', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('project.read'),
    schema: { operationId: 'getProject', tags: ['projects'], summary: 'One project', description: 'Needs `project.read` on the project. Outsiders get 404 whether or not the project exists.', params: ProjectParams, response: ProjectResponses.one }
  }, async (request) => ({ success: true as const, data: requestProject(request) }))

  app.put('/:id', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('project.update'),
    schema: { operationId: 'updateProject', tags: ['projects'], summary: 'Rename a project or change its slug, description or allowed browser origins', description: 'Needs `project.update`. `allowedOrigins` replaces the browser origins that may call the project\'s data API (CORS); an entry that is not an origin is 400 `APP_INVALID_ORIGIN`.', params: ProjectParams, body: UpdateProjectBody, response: ProjectResponses.updated }
  }, async (request) => ({ success: true as const, data: await projects.update(request.params.id, request.body) }))

  app.delete('/:id', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('project.delete'),
    schema: { operationId: 'deleteProject', tags: ['projects'], summary: 'Delete a project with its collections, end users, files and tokens', description: 'Needs `project.delete`. Removes the project\'s collections and records, files, end users, sessions and service tokens.', params: ProjectParams, response: ProjectResponses.deleted }
  }, async (request) => {
    await projects.delete(request.params.id)
    return { success: true as const, data: { id: request.params.id, deleted: true as const } }
  })

  app.post('/:projectId/auth/toggle', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('project.auth.manage'),
    schema: { operationId: 'toggleProjectAuth', tags: ['projects'], summary: 'Switch end-user auth on (creating the _users collection) or off (keeping its users)', description: 'Needs `project.auth.manage`. Turning auth on creates the `_users` collection (idempotently); turning it off refuses register, login and project JWTs but keeps every user. Without `enabled` the state flips.', params: ProjectIdParams, body: ToggleAuthBody, response: ProjectResponses.updated }
  }, async (request) => ({ success: true as const, data: await projects.setAuth(request.params.projectId, request.body?.enabled) }))

  await app.register(serviceTokenRoutes, { prefix: '/:projectId/service-tokens' })
  await app.register(projectUserRoutes, { prefix: '/:projectId/users' })
  await app.register(collectionDefinitionRoutes, { prefix: '/:projectId/collections' })
}

export default projectRoutes
