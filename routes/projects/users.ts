import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ProjectUserParams } from '../../schemas/projects.js'
import { ProjectAuthResponses } from '../../schemas/project-auth.js'

/** Admin routes over a project's end users. */
const projectUserRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { auth } = app.projectAuth

  app.post('/:userId/token', {
    config: { auth: 'platform' },
    preHandler: app.requireProjectPermission('project.users.manage'),
    schema: {
      operationId: 'mintProjectUserToken',
      tags: ['projects'],
      summary: 'Mint a project JWT for an end user, for the API tester (not a replacement for login)',
      description: 'Needs `project.users.manage`. A short-lived project JWT (no refresh token) for an existing, enabled end user, so an admin can try the data API as that user.',
      params: ProjectUserParams,
      response: ProjectAuthResponses.minted
    }
  }, async (request, reply) => reply.code(201).send({ success: true as const, data: await auth.mint(request.params.projectId, request.params.userId) }))
}

export default projectUserRoutes
