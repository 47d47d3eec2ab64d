import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import { assistantSchemas } from '../schemas/assistant.js'
import { assistantErrors } from '../services/assistant/errors.js'
import { ASSISTANT_RUN_JOB, buildAssistantServices, type Assistant } from '../services/assistant/index.js'
import type { SessionRecord } from '../services/assistant/sessions.js'
import { Cursors } from '../services/collections/query.js'
import { systemClock } from '../services/platform/clock.js'
import { newId } from '../services/platform/ids.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** An assistant route a member other than the session's creator may reach: a run's view, its approvals. */
    openToApprovers?: boolean
  }
  interface FastifyInstance {
    /** Assistant sessions, their messages and runs (docs/assistant.md). */
    assistant: Assistant
  }
}

declare module './permissions.js' {
  interface ParentKinds { assistantSession: SessionRecord }
}

/**
 * The assistant: builds its services on the LLM family's resolution and
 * models and the tracker's tool registry, registers the session parent,
 * works runs on the job queue's long lane (a worker that dies leaves its
 * lease to lapse; the next attempt ends the run as interrupted) and takes a
 * deleted project's sessions with it.
 */
async function assistantPlugin (app: FastifyInstance): Promise<void> {
  const assistant = await buildAssistantServices({
    store: app.store,
    clock: systemClock,
    newId,
    cursors: new Cursors(app.deriveSecretKey('assistant:cursor')),
    config: app.config.assistant,
    llm: app.llm,
    ledger: app.llm.usage,
    tools: app.tools.tracker,
    enqueue: async (runId) => { await app.jobs.enqueue(ASSISTANT_RUN_JOB, { runId }, { maxAttempts: 2 }) }
  })
  for (const schema of assistantSchemas) app.addSchema(schema)
  app.registerParent('assistantSession', {
    within: 'project',
    errors: [assistantErrors.sessionNotFound],
    load: async (request, { scope }) => {
      const session = await assistant.sessions.find(scope.project.id, (request.params as { sessionId: string }).sessionId)
      // A session is its creator's conversation: its messages and events hold what tools read with the creator's
      // access. Another member reaches only what an approver needs: a run's view and the approvals route.
      const another = session !== null && session.createdBy !== request.caller.user.userId
      if (session === null || (another && request.routeOptions.config.openToApprovers !== true)) throw assistantErrors.sessionNotFound()
      return { value: session }
    }
  })
  app.registerJobHandler(ASSISTANT_RUN_JOB, async (payload, { job }) => {
    await assistant.executor.execute(String(payload.runId), job.attempts)
  }, { lane: 'long' })
  app.projects.onDelete(async (projectId) => { await assistant.deleteAllForProject(projectId) })
  app.decorate('assistant', assistant)
}

export default fp(assistantPlugin, {
  name: 'plinth-assistant',
  fastify: '5.x',
  dependencies: ['plinth-config', 'plinth-store', 'plinth-secrets', 'plinth-jobs', 'plinth-projects', 'plinth-permissions', 'plinth-tools', 'plinth-llm']
})
