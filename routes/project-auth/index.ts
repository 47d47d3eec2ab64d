import type { FastifyReply } from 'fastify'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { ProjectAuthParams, ProjectAuthResponses, ProjectLoginBody, ProjectRegisterBody, VerifyBody } from '../../schemas/project-auth.js'
import { projectUser } from '../../plugins/project-auth.js'
import { JSON_TYPE, successJson } from '../frozen-json.js'
import type { VerifyAnswer } from '../../services/projects/project-auth.js'

/** `/api/p/:projectId/auth`: a project's end users, public while the project has auth on. */
const projectAuthRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { auth } = app.projectAuth
  const { rateLimiter } = app.identity
  const limit = app.config.authRateLimit
  const tags = ['project auth']

  app.post('/register', {
    schema: { operationId: 'registerProjectUser', tags, summary: 'Register an end user; returns the user and a project JWT', params: ProjectAuthParams, body: ProjectRegisterBody, response: ProjectAuthResponses.registered }
  }, async (request, reply) => {
    await rateLimiter.hit('project-register', `${request.params.projectId}:${request.ip}`, limit)
    return reply.code(201).send({ success: true as const, data: await auth.register(request.params.projectId, request.body) })
  })

  app.post('/login', {
    schema: { operationId: 'loginProjectUser', tags, summary: 'Log an end user in; returns a project JWT', params: ProjectAuthParams, body: ProjectLoginBody, response: ProjectAuthResponses.loggedIn }
  }, async (request) => {
    await rateLimiter.hit('project-login', `${request.params.projectId}:${request.ip}`, limit)
    return { success: true as const, data: await auth.login(request.params.projectId, request.body.email, request.body.password) }
  })

  app.get('/me', {
    onRequest: app.requireProjectUser,
    schema: { operationId: 'getProjectMe', tags, summary: 'The end user holding this project JWT', security: [{ projectAuth: [] }], params: ProjectAuthParams, response: ProjectAuthResponses.me }
  }, async (request, reply) => reply.type(JSON_TYPE).serializer(successJson).send({ success: true as const, data: projectUser(request) }))

  app.post('/verify', {
    onRequest: app.requireServiceToken,
    schema: { operationId: 'verifyProjectToken', tags, summary: 'For the project\'s servers: whether a project JWT is valid here, and whose it is', security: [{ serviceToken: [] }], params: ProjectAuthParams, body: VerifyBody, response: ProjectAuthResponses.verified }
  }, (request, reply) => {
    const { projectId } = request.params
    const { token } = request.body
    const send = (answer: VerifyAnswer): void => { void reply.type(JSON_TYPE).serializer(successJson).send({ success: true as const, data: answer }) }
    // Servers verify the same tokens again and again: a remembered answer goes out without a promise. Otherwise
    // the handler answers through the reply alone (an error too), as Fastify's non-async handlers may.
    const known = auth.verifyKnown(projectId, token)
    if (known === undefined) void auth.verify(projectId, token).then(send, (error: unknown) => { void (reply as FastifyReply).send(error) })
    else send(known)
  })
}

export default projectAuthRoutes
