import { PlinthError } from '../core/errors.js'
import type { Http } from '../core/http.js'

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
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  try {
    for (;;) {
      const { value, done } = await reader.read()
      if (done) return
      buffer += value
      let end: number
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const event = buffer.slice(0, end)
        buffer = buffer.slice(end + 2)
        let id: string | null = null
        const data: string[] = []
        for (const line of event.split('\n')) {
          if (line.startsWith('id:')) id = line.slice(3).trim()
          else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''))
        }
        if (data.length === 0) continue
        const text = data.join('\n')
        let parsed: unknown = text
        try { parsed = JSON.parse(text) } catch {}
        yield { seq: id === null || !/^\d+$/.test(id) ? null : Number(id), data: parsed }
      }
    }
  } finally {
    reader.releaseLock()
    await response.body.cancel().catch(() => {})
  }
}
