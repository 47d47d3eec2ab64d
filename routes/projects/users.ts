import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ProjectIdParams, ProjectUserParams } from '../../schemas/projects.js'
import { ProjectAuthResponses } from '../../schemas/project-auth.js'
import { ListProjectUsersQuery, ProjectUserAdminResponses, UpdateProjectUserBody } from '../../schemas/project-users.js'
import { commonErrors } from '../../services/platform/errors.js'
import { projectErrors } from '../../services/projects/errors.js'
import { collectionErrors } from '../../services/collections/errors.js'
import { deleted, ok } from '../replies.js'

const tags = ['projects']

/** Admin routes over a project's end users (docs/projects.md#managing-end-users). */
const projectUserRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { auth, userAdmin } = app.projectAuth
  app.routeDefaults({ parent: 'project', permission: 'project.users.manage' })

  app.get('', {
    config: { errors: [commonErrors.invalidCursor] },
    schema: {
      operationId: 'listProjectUsers',
      tags,
      summary: 'The project\'s end users, newest first',
      description: 'Each with its address, whether it is verified, disabled or has a password, and the OpenID providers it is linked at; ' +
        'never a password hash or a token. `email` keeps the users whose address contains that text; page with `nextCursor`.',
      params: ProjectIdParams,
      querystring: ListProjectUsersQuery,
      response: ProjectUserAdminResponses.list
    }
  }, async (request) => {
    const { email, limit, cursor } = request.query
    return ok(await userAdmin.list(request.scope.project.id, { emailContains: email, limit, cursor }))
  })

  app.get('/:userId', {
    config: { errors: [commonErrors.userNotFound] },
    schema: {
      operationId: 'getProjectUser',
      tags,
      summary: 'One end user of the project',
      params: ProjectUserParams,
      response: ProjectUserAdminResponses.one
    }
  }, async (request) => ok(await userAdmin.get(request.scope.project.id, request.params.userId)))

  app.patch('/:userId', {
    config: { errors: [commonErrors.userNotFound] },
    schema: {
      operationId: 'updateProjectUser',
      tags,
      summary: 'Disable an end user (ending every session at once) or enable them again',
      description: 'A disabled user cannot sign in, refresh or use a project JWT; ' +
        'enabling them again revives none of the sessions that ended.',
      params: ProjectUserParams,
      body: UpdateProjectUserBody,
      response: ProjectUserAdminResponses.one
    }
  }, async (request) => {
    const { project } = request.scope
    return ok(await userAdmin.setDisabled(project.id, request.params.userId, request.body.disabled, request.caller.user.userId))
  })

  app.delete('/:userId', {
    config: { errors: [commonErrors.userNotFound, collectionErrors.versionMismatch] },
    schema: {
      operationId: 'deleteProjectUser',
      tags,
      summary: 'Delete an end user with their sessions, provider identities and files',
      description: 'Whatever the `_users` delete rule says. Their refresh tokens are revoked ' +
        'and the project JWTs they hold stop working at once.',
      params: ProjectUserParams,
      response: ProjectUserAdminResponses.deleted
    }
  }, async (request) => {
    await userAdmin.delete(request.scope.project.id, request.params.userId, request.caller.user.userId)
    return deleted(request.params.userId)
  })

  app.post('/:userId/token', {
    config: { errors: [commonErrors.userNotFound, projectErrors.mintForDisabledUser] },
    schema: {
      operationId: 'mintProjectUserToken',
      tags,
      summary: 'Mint a project JWT for an end user, for the API tester (not a replacement for login)',
      description: 'A short-lived project JWT (no refresh token) for an existing, enabled end user, ' +
        'so an admin can try the data API as that user. It works whether or not end-user auth is on.',
      params: ProjectUserParams,
      response: ProjectAuthResponses.minted
    }
  }, async (request, reply) => {
    void reply.code(201)
    return ok(await auth.mint(request.scope.project.id, request.params.userId))
  })
}

export default projectUserRoutes
