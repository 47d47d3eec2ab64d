import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  AssistantResponses, CreateSessionBody, PageQuery, PostMessageBody, RenameSessionBody, SessionListParams, SessionParams
} from '../../schemas/assistant.js'
import { assistantErrors as e } from '../../services/assistant/errors.js'
import { messageView, sessionView } from '../../services/assistant/sessions.js'
import { runView } from '../../services/assistant/runs.js'
import { llmErrors } from '../../services/llm/errors.js'
import { created, deleted, ok } from '../replies.js'
import { assistantCaller } from './caller.js'
import runRoutes from './runs.js'
import { streamEvents, wantsEventStream } from './sse.js'

/**
 * `/assistant/sessions`: a project's assistant sessions, their messages and
 * runs (docs/assistant.md). Every route needs `assistant.use` as a platform user.
 */
const assistantRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { assistant } = app
  const tags = ['assistant']
  app.routeDefaults({ auth: 'platform', parent: 'project', permission: 'assistant.use' })

  app.get('/sessions', {
    schema: {
      operationId: 'listAssistantSessions',
      tags,
      summary: 'The caller\'s own assistant sessions in the project, newest first',
      params: SessionListParams,
      querystring: PageQuery,
      response: AssistantResponses.sessionList
    }
  }, async (request) => {
    const page = await assistant.sessions.list(request.scope.project.id, request.caller.user.userId, request.query)
    return ok({ items: page.items.map(sessionView), nextCursor: page.nextCursor })
  })

  app.post('/sessions', {
    schema: {
      operationId: 'createAssistantSession',
      tags,
      summary: 'Start an assistant session',
      params: SessionListParams,
      body: CreateSessionBody,
      response: AssistantResponses.sessionCreated
    }
  }, async (request, reply) => {
    const session = await assistant.sessions.create(request.scope.project.id, request.caller.user.userId, request.body.title)
    return created(reply, sessionView(session))
  })

  app.get('/sessions/:sessionId', {
    config: { parent: 'assistantSession' },
    schema: {
      operationId: 'getAssistantSession',
      tags,
      summary: 'One assistant session',
      params: SessionParams,
      response: AssistantResponses.session
    }
  }, async (request) => ok(sessionView(request.scope.assistantSession)))

  app.patch('/sessions/:sessionId', {
    config: { parent: 'assistantSession' },
    schema: {
      operationId: 'renameAssistantSession',
      tags,
      summary: 'Rename an assistant session',
      params: SessionParams,
      body: RenameSessionBody,
      response: AssistantResponses.session
    }
  }, async (request) => ok(sessionView(await assistant.sessions.rename(request.scope.assistantSession, request.body.title))))

  app.delete('/sessions/:sessionId', {
    config: { parent: 'assistantSession' },
    schema: {
      operationId: 'deleteAssistantSession',
      tags,
      summary: 'Delete an assistant session',
      description: 'Its active run is cancelled; its messages, runs and events go with it.',
      params: SessionParams,
      response: AssistantResponses.sessionDeleted
    }
  }, async (request) => {
    await assistant.deleteSession(request.scope.assistantSession)
    return deleted(request.scope.assistantSession._id)
  })

  app.get('/sessions/:sessionId/messages', {
    config: { parent: 'assistantSession' },
    schema: {
      operationId: 'listAssistantMessages',
      tags,
      summary: 'The session\'s messages, in the order they were said',
      description: 'The user\'s, the model\'s (text and tool calls) and the tools\' answers, as the model was given them.',
      params: SessionParams,
      querystring: PageQuery,
      response: AssistantResponses.messageList
    }
  }, async (request) => {
    const page = await assistant.sessions.messagePage(request.scope.assistantSession._id, request.query)
    return ok({ items: page.items.map(messageView), nextCursor: page.nextCursor })
  })

  app.post('/sessions/:sessionId/messages', {
    config: {
      parent: 'assistantSession',
      errors: [e.runActive, llmErrors.noModel, llmErrors.modelNotAllowed, llmErrors.noCredential, llmErrors.budgetExceeded]
    },
    schema: {
      operationId: 'postAssistantMessage',
      tags,
      summary: 'Say something: starts a run that answers',
      description: 'With `Accept: text/event-stream` the answer is a stream of named server-sent events (`run.started`, `text.delta`, ' +
        '`tool.call`, `approval.required`, `tool.result`, `step.finished`, `run.completed`, `run.failed`, `run.cancelled`), ' +
        'each with an `id`; ' +
        'it ends at the run\'s end or at `approval.required`. Otherwise 202: the run works on the job queue, read it at `Location`. ' +
        'A lost stream is taken up at `GET …/runs/{runId}/events` with `Last-Event-ID`.',
      params: SessionParams,
      body: PostMessageBody,
      response: AssistantResponses.runStarted
    }
  }, async (request, reply) => {
    const session = request.scope.assistantSession
    const { message, run } = await assistant.start(session, request.scope.project.orgId, assistantCaller(request), request.body)
    if (wantsEventStream(request)) return await streamEvents(request, reply, assistant.runs, run._id, 0)
    void reply.code(202).header('location', `${request.url.split('?')[0].replace(/\/messages$/, '')}/runs/${run._id}`)
    return ok({ message: messageView(message), run: runView(run) })
  })

  await app.register(runRoutes)
}

export default assistantRoutes
