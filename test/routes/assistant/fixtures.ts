import type { Test } from 'tap'
import { startScriptedProvider, type ScriptedProvider, type ScriptedTurn } from '../../fixtures/scripted-provider.js'
import { trackerSetup } from '../tracker/fixtures.js'

export const API_KEY = 'sk-assistant-secret-7f3a9c'
export type Wire = 'openai-compatible' | 'anthropic'
export const WIRES: Array<[Wire, string]> = [['openai-compatible', 'OpenAI chat completions streaming'], ['anthropic', 'Anthropic messages streaming']]

export interface StreamedEvent { id: number, type: string, data: any }

/**
 * The tracker's setup (an organization with roles, a platform project, the
 * tracker project WEB), listening on loopback, with a scripted provider as
 * the organization's credential `scripted` and its default model.
 */
export async function assistantSetup (t: Test, options: { wire?: Wire, script?: ScriptedTurn[], env?: Record<string, string> } = {}) {
  const s = await trackerSetup(t, { LLM_ALLOWED_HOSTS: '127.0.0.1', ...options.env })
  const provider: ScriptedProvider = await startScriptedProvider(options.script ?? [])
  t.teardown(provider.close)
  await s.app.listen({ port: 0, host: '127.0.0.1' })
  const address = s.app.server.address()
  if (address === null || typeof address === 'string') throw new Error('not listening')
  const origin = `http://127.0.0.1:${address.port}`
  const org = `/api/organizations/${s.orgId}`
  await s.must('POST', `${org}/llm-credentials`, s.owner.auth, { name: 'scripted', provider: options.wire ?? 'openai-compatible', baseUrl: `${provider.url}/v1`, apiKey: API_KEY })
  await s.must('PATCH', `${org}/llm-settings`, s.owner.auth, { defaultModel: 'scripted:model-1' })
  const sessions = `/api/projects/${s.projectId}/assistant/sessions`
  const newSession = async (auth = s.owner.auth): Promise<string> => (await s.must('POST', sessions, auth, { title: 'Help' })).id as string

  /** A POST or GET that answers server-sent events, read to the end (or until `stopAfter` events, dropping the connection). */
  const stream = async (method: 'GET' | 'POST', path: string, auth: Record<string, string>, options: { body?: unknown, lastEventId?: number, stopAfter?: number, onEvent?: (event: StreamedEvent) => Promise<void> | void } = {}) => {
    const aborter = new AbortController()
    const res = await fetch(`${origin}${path}`, {
      method,
      headers: { ...auth, accept: 'text/event-stream', ...(options.body === undefined ? {} : { 'content-type': 'application/json' }), ...(options.lastEventId === undefined ? {} : { 'last-event-id': String(options.lastEventId) }) },
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      signal: aborter.signal
    })
    const events: StreamedEvent[] = []
    if (res.headers.get('content-type')?.startsWith('text/event-stream') !== true) return { status: res.status, events, body: await res.json() as any }
    const decoder = new TextDecoder()
    let buffer = ''
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true })
        let end: number
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, end)
          buffer = buffer.slice(end + 2)
          const fields = Object.fromEntries(block.split('\n').filter((line) => !line.startsWith(':') && line.includes(': ')).map((line) => [line.slice(0, line.indexOf(': ')), line.slice(line.indexOf(': ') + 2)]))
          if (fields.event === undefined) continue
          const event = { id: Number(fields.id), type: fields.event, data: JSON.parse(fields.data).data }
          events.push(event)
          await options.onEvent?.(event)
          if (options.stopAfter !== undefined && events.length >= options.stopAfter) { aborter.abort(); return { status: res.status, events, body: null } }
        }
      }
    } catch (error) {
      if (!aborter.signal.aborted) throw error
    }
    return { status: res.status, events, body: null }
  }

  /** The run once it has ended or waits for an approval (read until then; the worker runs it). */
  const settled = async (sessionId: string, runId: string): Promise<any> => {
    for (;;) {
      const run = await s.must('GET', `${sessions}/${sessionId}/runs/${runId}`, s.owner.auth)
      if (!['queued', 'running'].includes(run.status as string)) return run
      await new Promise((resolve) => setTimeout(resolve, 20))
    }
  }
  return { ...s, provider, origin, sessions, newSession, stream, settled }
}

export type AssistantSetup = Awaited<ReturnType<typeof assistantSetup>>
export const types = (events: StreamedEvent[]): string[] => events.map((event) => event.type).filter((type) => type !== 'text.delta')
