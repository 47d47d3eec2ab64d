import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  CreateProjectBody, ListProjectsQuery, ProjectIdParams, ProjectParams, ProjectResponses, ToggleAuthBody, UpdateProjectBody
} from '../../schemas/projects.js'
import { platformCaller } from '../../plugins/auth.js'
import { requestProject } from '../../plugins/permissions.js'
import serviceTokenRoutes from './service-tokens.js'
import projectUserRoutes from './users.js'
import collectionDefinitionRoutes from '../collections/definitions.js'

const projectRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { projects } = app
  const { resolver } = app.orgs

  app.get('', {
    config: { auth: 'platform' },
    schema: { operationId: 'listProjects', tags: ['projects'], summary: 'Projects the caller may read, optionally in one organization', querystring: ListProjectsQuery, response: ProjectResponses.list }
  }, async (request) => {
    const orgIds = await resolver.organizationsWhere(platformCaller(request), 'project.read')
    const wanted = request.query.orgId === undefined ? orgIds : orgIds.filter((id) => id === request.query.orgId)
    return { success: true as const, data: await projects.listInOrganizations(wanted) }
  })

  app.post('', {
    config: { auth: 'platform' },
    preHandler: app.requireOrgPermission('project.create', { orgIdIn: 'body' }),
    schema: { operationId: 'createProject', tags: ['projects'], summary: 'Create a project in an organization', body: CreateProjectBody, response: ProjectResponses.created }
  }, async (request, reply) => {
    const { orgId, ...input } = request.body
    return reply.code(201).send({ success: true as const, data: await projects.create(orgId, platformCaller(request).userId, input) })
  })

  app.get('/:id', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('project.read'),
    schema: { operationId: 'getProject', tags: ['projects'], summary: 'One project', params: ProjectParams, response: ProjectResponses.one }
  }, async (request) => ({ success: true as const, data: requestProject(request) }))

  app.put('/:id', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('project.update'),
    schema: { operationId: 'updateProject', tags: ['projects'], summary: 'Rename a project or change its slug, description or allowed browser origins', params: ProjectParams, body: UpdateProjectBody, response: ProjectResponses.updated }
  }, async (request) => ({ success: true as const, data: await projects.update(request.params.id, request.body) }))

  app.delete('/:id', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('project.delete'),
    schema: { operationId: 'deleteProject', tags: ['projects'], summary: 'Delete a project with its collections, end users, files and tokens', params: ProjectParams, response: ProjectResponses.deleted }
  }, async (request) => {
    await projects.delete(request.params.id)
    return { success: true as const, data: { id: request.params.id, deleted: true as const } }
  })

  app.post('/:projectId/auth/toggle', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('project.auth.manage'),
    schema: { operationId: 'toggleProjectAuth', tags: ['projects'], summary: 'Switch end-user auth on (creating the _users collection) or off (keeping its users)', params: ProjectIdParams, body: ToggleAuthBody, response: ProjectResponses.updated }
  }, async (request) => ({ success: true as const, data: await projects.setAuth(request.params.projectId, request.body?.enabled) }))

  await app.register(serviceTokenRoutes, { prefix: '/:projectId/service-tokens' })
  await app.register(projectUserRoutes, { prefix: '/:projectId/users' })
  await app.register(collectionDefinitionRoutes, { prefix: '/:projectId/collections' })
}

export default projectRoutes
