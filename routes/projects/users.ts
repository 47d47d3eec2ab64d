import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ProjectUserParams } from '../../schemas/projects.js'
import { ProjectAuthResponses } from '../../schemas/project-auth.js'
import { commonErrors } from '../../services/platform/errors.js'
import { projectErrors } from '../../services/projects/errors.js'
import { ok } from '../replies.js'

/** Admin routes over a project's end users. */
const projectUserRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { auth } = app.projectAuth
  app.routeDefaults({ parent: 'project', permission: 'project.users.manage' })

  app.post('/:userId/token', {
    config: { errors: [commonErrors.userNotFound, projectErrors.mintForDisabledUser] },
    schema: {
      operationId: 'mintProjectUserToken',
      tags: ['projects'],
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
