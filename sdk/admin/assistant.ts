import { PlinthError } from '../core/errors.js'
import { expectOk, unwrap, type Http } from '../core/http.js'
import type { BodyOf, QueryOf } from '../core/paths.js'
import { sseFrames } from '../core/sse.js'
import type { components } from '../generated/plinth.js'

export type AssistantRunEvent = components['schemas']['AssistantRunEvent']
export type AssistantRun = components['schemas']['AssistantRun']

const SESSIONS = '/api/projects/{projectId}/assistant/sessions'
const SESSION = `${SESSIONS}/{sessionId}` as const
const RUN = `${SESSION}/runs/{runId}` as const

/**
 * Follows a run's events (server-sent) after `after` (0: from the start):
 * what was recorded, then each as it comes, until the run ends or pauses for
 * an approval, when the server ends the stream. Leaving the loop, or `signal`,
 * stops the stream, not the run; follow again after the last `id` seen.
 */
export async function * followRun (http: Http, where: { projectId: string, sessionId: string, runId: string, after?: number, signal?: AbortSignal }): AsyncGenerator<AssistantRunEvent> {
  const path = [where.projectId, 'assistant', 'sessions', where.sessionId, 'runs', where.runId, 'events'].map(encodeURIComponent).join('/')
  const headers: Record<string, string> = { accept: 'text/event-stream', 'last-event-id': String(where.after ?? 0) }
  const response = await http.once(new Request(`${http.baseUrl}/api/projects/${path}`, { headers, signal: where.signal }))
  if (!response.ok || response.body === null) throw PlinthError.fromAnswer(response, await response.json().catch(() => null))
  try {
    for await (const frame of sseFrames(response.body)) {
      // `error`: the server could not read the run's events; the frame carries its message.
      if (frame.event === 'error') throw new PlinthError(500, 'SDK_STREAM_FAILED', String((JSON.parse(frame.data) as { message?: unknown }).message))
      const { id, type, data, at } = JSON.parse(frame.data) as AssistantRunEvent
      yield { id, type, data, at }
    }
  } finally {
    await response.body.cancel().catch(() => {})
  }
}

/** The assistant's sessions, messages, runs and approvals (docs/assistant.md), for `admin.assistant`. */
export function assistantMethods (admin: { readonly api: Http['api'], readonly http: Http }) {
  const session = (projectId: string, sessionId: string) => ({ params: { path: { projectId, sessionId } } })
  const run = (projectId: string, sessionId: string, runId: string) => ({ params: { path: { projectId, sessionId, runId } } })
  return {
    /** The caller's sessions in the project, newest first, a page at a time. */
    sessions: async (projectId: string, query?: QueryOf<typeof SESSIONS, 'get'>) => await unwrap(admin.api.GET(SESSIONS, { params: { path: { projectId }, query } })),
    createSession: async (projectId: string, body: BodyOf<typeof SESSIONS, 'post'> = {}) => await unwrap(admin.api.POST(SESSIONS, { params: { path: { projectId } }, body })),
    session: async (projectId: string, sessionId: string) => await unwrap(admin.api.GET(SESSION, session(projectId, sessionId))),
    deleteSession: async (projectId: string, sessionId: string) => { await expectOk(admin.api.DELETE(SESSION, session(projectId, sessionId))) },
    /** The session's messages in the order they were said: the user's, the model's (text, tool calls), the tools' answers. */
    messages: async (projectId: string, sessionId: string) => await unwrap(admin.api.GET(`${SESSION}/messages`, session(projectId, sessionId))),
    /** Says something: the message and the queued run answering it; follow the run with `followRun`. */
    send: async (projectId: string, sessionId: string, body: BodyOf<`${typeof SESSION}/messages`, 'post'>) =>
      await unwrap(admin.api.POST(`${SESSION}/messages`, { ...session(projectId, sessionId), body })),
    run: async (projectId: string, sessionId: string, runId: string) => await unwrap(admin.api.GET(RUN, run(projectId, sessionId, runId))),
    /** The run's events as server-sent events, after `after`, until it ends or waits for an approval. */
    followRun: (projectId: string, sessionId: string, runId: string, options: { after?: number, signal?: AbortSignal } = {}): AsyncGenerator<AssistantRunEvent> =>
      followRun(admin.http, { projectId, sessionId, runId, ...options }),
    /** Approves or denies a tool call the run waits on; the run as it stands after (queued again once every call is decided). */
    decide: async (projectId: string, sessionId: string, runId: string, callId: string, body: BodyOf<`${typeof RUN}/approvals/{callId}`, 'post'>) =>
      await unwrap(admin.api.POST(`${RUN}/approvals/{callId}`, { params: { path: { projectId, sessionId, runId, callId } }, body })),
    cancel: async (projectId: string, sessionId: string, runId: string) => await unwrap(admin.api.POST(`${RUN}/cancel`, run(projectId, sessionId, runId)))
  }
}
