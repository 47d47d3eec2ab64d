import { PlinthError } from '../core/errors.js'
import type { Http } from '../core/http.js'
import { sseFrames } from '../core/sse.js'

export interface LogLine {
  /** The line's sequence number (the event id): pass it as `after` to continue from there. */
  seq: number | null
  /** The event's data, parsed when it is JSON. */
  data: unknown
}

/** Reads a text/event-stream answer into its `log` events. */
export async function * followLogs (http: Http, where: { projectId: string, appId: string, kind: 'build' | 'runtime', deploymentId?: string, signal?: AbortSignal }): AsyncGenerator<LogLine> {
  const query = new URLSearchParams({ follow: 'true' })
  if (where.deploymentId !== undefined) query.set('deploymentId', where.deploymentId)
  const url = `${http.baseUrl}/api/projects/${encodeURIComponent(where.projectId)}/backend/apps/${encodeURIComponent(where.appId)}/logs/${where.kind}?${query.toString()}`
  const response = await http.once(new Request(url, { headers: { accept: 'text/event-stream' }, signal: where.signal }))
  if (!response.ok || response.body === null) throw PlinthError.fromAnswer(response, await response.json().catch(() => null))
  try {
    for await (const frame of sseFrames(response.body)) {
      let parsed: unknown = frame.data
      try { parsed = JSON.parse(frame.data) } catch {}
      yield { seq: frame.id === undefined || !/^\d+$/.test(frame.id) ? null : Number(frame.id), data: parsed }
    }
  } finally {
    await response.body.cancel().catch(() => {})
  }
}
