import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import {
  ApprovalBody, ApprovalParams, AssistantResponses, EventsQuery, PageQuery, RunParams, SessionParams
} from '../../schemas/assistant.js'
import { assistantErrors as e } from '../../services/assistant/errors.js'
import { runView } from '../../services/assistant/runs.js'
import { ok } from '../replies.js'
import { assistantCaller } from './caller.js'
import { streamEvents, wantsEventStream } from './sse.js'

/** `…/sessions/:sessionId/runs`: runs, their events (resumable), cancel and the approvals of destructive tool calls. */
const runRoutes: FastifyPluginAsyncTypebox = async (app) => {
  const { assistant } = app
  const tags = ['assistant']
  app.routeDefaults({ auth: 'platform', parent: 'assistantSession', permission: 'assistant.use' })

  app.get('/sessions/:sessionId/runs', {
    schema: {
      operationId: 'listAssistantRuns',
      tags,
      summary: 'The session\'s runs, newest first',
      params: SessionParams,
      querystring: PageQuery,
      response: AssistantResponses.runList
    }
  }, async (request) => {
    const page = await assistant.runs.list(request.scope.assistantSession._id, request.query)
    return ok({ items: page.items.map(runView), nextCursor: page.nextCursor })
  })

  app.get('/sessions/:sessionId/runs/:runId', {
    config: { openToApprovers: true, errors: [e.runNotFound] },
    schema: {
      operationId: 'getAssistantRun',
      tags,
      summary: 'One run: status, stop reason, usage, the approvals it waits on',
      params: RunParams,
      response: AssistantResponses.run
    }
  }, async (request) => ok(runView(await assistant.run(request.scope.assistantSession, request.params.runId))))

  app.get('/sessions/:sessionId/runs/:runId/events', {
    config: { errors: [e.runNotFound, e.eventIdInvalid] },
    schema: {
      operationId: 'listAssistantRunEvents',
      tags,
      summary: 'The run\'s events after an id',
      description: 'With `Accept: text/event-stream`, the events after `Last-Event-ID` (or `after`) and then as they come, ' +
        'until the run ends ' +
        'or waits for an approval: how a client takes up a lost stream. Otherwise the events recorded so far after `after`, ' +
        'with the run; a run read as ended or waiting for an approval comes with the event saying so.',
      params: RunParams,
      querystring: EventsQuery,
      response: AssistantResponses.events
    }
  }, async (request, reply) => {
    const run = await assistant.run(request.scope.assistantSession, request.params.runId)
    const header = request.headers['last-event-id']
    let after = request.query.after ?? 0
    if (typeof header === 'string' && header.trim() !== '') {
      if (!/^\d{1,9}$/.test(header.trim())) throw e.eventIdInvalid()
      after = Number(header.trim())
    }
    if (wantsEventStream(request)) return await streamEvents(request, reply, assistant.runs, run._id, after)
    return ok({ items: await assistant.runs.eventsSoFar(run, after), run: runView(run) })
  })

  app.post('/sessions/:sessionId/runs/:runId/cancel', {
    config: { errors: [e.runNotFound, e.runFinished] },
    schema: {
      operationId: 'cancelAssistantRun',
      tags,
      summary: 'Cancel a run that has not ended',
      params: RunParams,
      response: AssistantResponses.run
    }
  }, async (request) => ok(runView(await assistant.cancel(request.scope.assistantSession, request.params.runId))))

  app.post('/sessions/:sessionId/runs/:runId/approvals/:callId', {
    config: { openToApprovers: true, errors: [e.runNotFound, e.approvalNotPending] },
    schema: {
      operationId: 'decideAssistantToolCall',
      tags,
      summary: 'Approve or deny a destructive tool call the run waits on',
      description: 'Approving needs, besides `assistant.use`, the permission the tool needs (`approvals[].permission`), held now. ' +
        'A denial is told to the model as the tool\'s result. Once every call of the pause is decided the run goes on.',
      params: ApprovalParams,
      body: ApprovalBody,
      response: AssistantResponses.run
    }
  }, async (request) => {
    const { runId, callId } = request.params
    return ok(runView(await assistant.decide(request.scope.assistantSession, runId, callId, assistantCaller(request), request.body)))
  })
}

export default runRoutes
