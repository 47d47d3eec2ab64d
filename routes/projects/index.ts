import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  CreateProjectBody, ListProjectsQuery, ProjectIdParams, ProjectParams, ProjectResponses, ToggleAuthBody, UpdateProjectBody
} from '../../schemas/projects.js'
import { commonErrors } from '../../services/platform/errors.js'
import { projectErrors } from '../../services/projects/errors.js'
import { created, deleted, ok } from '../replies.js'
import serviceTokenRoutes from './service-tokens.js'
import projectUserRoutes from './users.js'
import authOauthRoutes from './auth-oauth.js'
import authEmailRoutes from './auth-email.js'

const tags = ['projects']
/** What naming a project may meet; a slug is unique in its organization. */
const NAMING = [commonErrors.invalidName, commonErrors.invalidSlug, commonErrors.slugTaken]

/** `/api/projects/…`: projects, as members of their organizations see them. */
const projectRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { projects } = app
  const { resolver } = app.orgs
  app.routeDefaults({ auth: 'platform' })

  app.get('', {
    schema: {
      operationId: 'listProjects',
      tags,
      summary: 'Projects the caller may read, optionally in one organization',
      description: 'Every project in the organizations where the caller holds `project.read`; `orgId` narrows it to one organization.',
      querystring: ListProjectsQuery,
      response: ProjectResponses.list
    }
  }, async (request) => {
    const orgIds = await resolver.organizationsWhere(request.caller.user, 'project.read')
    const wanted = request.query.orgId === undefined ? orgIds : orgIds.filter((id) => id === request.query.orgId)
    return ok(await projects.listInOrganizations(wanted))
  })

  app.post('', {
    config: { parent: 'organization', permission: 'project.create', errors: NAMING },
    schema: {
      operationId: 'createProject',
      tags,
      summary: 'Create a project in an organization',
      description: 'In the organization named by `orgId`, where the caller needs the permission. ' +
        'The slug is derived from the name when omitted and must be unique in the organization.',
      body: CreateProjectBody,
      response: ProjectResponses.created
    }
  }, async (request, reply) => {
    const { orgId: _org, ...input } = request.body
    return created(reply, await projects.create(request.scope.organization.orgId, request.caller.user.userId, input))
  })

  app.get('/:id', {
    config: { parent: 'project', permission: 'project.read' },
    schema: {
      operationId: 'getProject',
      tags,
      summary: 'One project',
      params: ProjectParams,
      response: ProjectResponses.one
    }
  }, async (request) => ok(request.scope.project))

  app.put('/:id', {
    config: { parent: 'project', permission: 'project.update', errors: [...NAMING, projectErrors.invalidOrigin] },
    schema: {
      operationId: 'updateProject',
      tags,
      summary: 'Rename a project or change its slug, description or allowed browser origins',
      description: '`allowedOrigins` replaces the browser origins that may call the project\'s data API (CORS).',
      params: ProjectParams,
      body: UpdateProjectBody,
      response: ProjectResponses.one
    }
  }, async (request) => ok(await projects.update(request.scope.project.id, request.body)))

  app.delete('/:id', {
    config: { parent: 'project', permission: 'project.delete' },
    schema: {
      operationId: 'deleteProject',
      tags,
      summary: 'Delete a project with its collections, end users, files and tokens',
      description: 'Removes the project\'s collections and records, files, end users, sessions and service tokens, ' +
        'and what the other families keep for it.',
      params: ProjectParams,
      response: ProjectResponses.deleted
    }
  }, async (request) => {
    await projects.delete(request.scope.project.id)
    return deleted(request.scope.project.id)
  })

  app.post('/:projectId/auth/toggle', {
    config: { parent: 'project', permission: 'project.auth.manage' },
    schema: {
      operationId: 'toggleProjectAuth',
      tags,
      summary: 'Switch end-user auth on (creating the _users collection) or off (keeping its users)',
      description: 'Turning auth on creates the `_users` collection (idempotently); ' +
        'turning it off refuses register, login and project JWTs but keeps every user. Without `enabled` the state flips.',
      params: ProjectIdParams,
      body: ToggleAuthBody,
      response: ProjectResponses.one
    }
  }, async (request) => ok(await projects.setAuth(request.scope.project.id, request.body?.enabled)))

  await app.register(serviceTokenRoutes, { prefix: '/:projectId/service-tokens' })
  await app.register(projectUserRoutes, { prefix: '/:projectId/users' })
  await app.register(authEmailRoutes, { prefix: '/:projectId/auth/email' })
  await app.register(authOauthRoutes, { prefix: '/:projectId/auth/oauth-providers' })
}

export default projectRoutes
