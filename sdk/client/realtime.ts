import { PlinthError } from '../core/errors.js'
import type { Http } from '../core/http.js'

/** One subscription: a collection (under its list rule) or one record (under its get rule), optionally filtered. */
export interface RealtimeSubscription { collection: string, record?: string, filter?: Record<string, unknown> }

/** A record change, as the caller's rule shows the record. */
export interface RealtimeChange<T = Record<string, unknown>> {
  type: 'create' | 'update' | 'delete'
  /** The event's id: where a resumed stream goes on from. */
  id: string
  collection: string
  record: T & { id: string }
  /** The indexes of the subscriptions the change matched. */
  subscriptions: number[]
  at: string
}

/** Changes were missed and are no longer kept: reload what you show, then go on. */
export interface RealtimeGap { type: 'gap', message: string }

export interface SubscribeOptions {
  /** Resume after this event id (one a previous stream handed out). */
  lastEventId?: string
  /** Ends the stream. Breaking out of the loop does too. */
  signal?: AbortSignal
  /** Wait before reconnecting after a drop. Default 1000 ms. */
  reconnectDelayMs?: number
}

interface Frame { id?: string, event: string, data: string }

async function * frames (body: ReadableStream<Uint8Array>): AsyncGenerator<Frame> {
  const decoder = new TextDecoder()
  let buffer = ''
  const reader = body.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) return
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, '\n')
      let cut: number
      while ((cut = buffer.indexOf('\n\n')) !== -1) {
        const frame: Frame = { event: 'message', data: '' }
        const data: string[] = []
        for (const line of buffer.slice(0, cut).split('\n')) {
          if (line === '' || line.startsWith(':')) continue
          const colon = line.indexOf(':')
          const field = colon === -1 ? line : line.slice(0, colon)
          const value = colon === -1 ? '' : line.slice(colon + 1).replace(/^ /, '')
          if (field === 'id') frame.id = value
          else if (field === 'event') frame.event = value
          else if (field === 'data') data.push(value)
        }
        buffer = buffer.slice(cut + 2)
        if (data.length > 0) yield { ...frame, data: data.join('\n') }
      }
    }
  } finally {
    reader.releaseLock()
  }
}

const sleep = async (ms: number, signal: AbortSignal): Promise<void> => await new Promise((resolve) => {
  const timer = setTimeout(resolve, ms)
  signal.addEventListener('abort', () => { clearTimeout(timer); resolve() }, { once: true })
})

/**
 * Follows record changes (docs/realtime.md) as an async iterator. A dropped
 * connection, a server restart or an expired token (the session renews it)
 * reconnects with the last event id, so nothing is missed while the server
 * keeps it; a `gap` says it did not. A refusal (a bad subscription, a
 * revoked credential) ends the loop with a PlinthError.
 */
export async function * subscribe<T = Record<string, unknown>> (
  http: Http, projectId: string, subscriptions: RealtimeSubscription[], options: SubscribeOptions = {}
): AsyncGenerator<RealtimeChange<T> | RealtimeGap> {
  const stop = new AbortController()
  const onAbort = (): void => { stop.abort() }
  options.signal?.addEventListener('abort', onAbort, { once: true })
  let lastEventId = options.lastEventId ?? null
  const url = `${http.baseUrl}/api/p/${encodeURIComponent(projectId)}/realtime?subscriptions=${encodeURIComponent(JSON.stringify(subscriptions))}`
  try {
    while (!stop.signal.aborted) {
      const headers: Record<string, string> = { accept: 'text/event-stream' }
      if (lastEventId !== null) headers['last-event-id'] = lastEventId
      let response: Response
      try {
        response = await http.once(new Request(url, { headers, signal: stop.signal }))
      } catch (error) {
        if (stop.signal.aborted) return
        if (!(error instanceof PlinthError) || error.code !== 'SDK_NETWORK') throw error
        await sleep(options.reconnectDelayMs ?? 1000, stop.signal)
        continue
      }
      if (!response.ok || response.body === null) {
        const error = PlinthError.fromAnswer(response, await response.json().catch(() => null))
        // The server may not have noticed the previous connection go yet.
        if (response.status !== 429) throw error
        await sleep(options.reconnectDelayMs ?? 1000, stop.signal)
        continue
      }
      try {
        for await (const frame of frames(response.body)) {
          const data = JSON.parse(frame.data) as Record<string, unknown>
          if (frame.event === 'ready') lastEventId = String(data.lastEventId)
          else if (frame.event === 'gap') yield { type: 'gap', message: String(data.message) }
          else if (frame.event === 'end' && data.reason === 'revoked') throw new PlinthError(401, 'SDK_REALTIME_REVOKED', String(data.message))
          else if (frame.event === 'create' || frame.event === 'update' || frame.event === 'delete') {
            lastEventId = frame.id ?? lastEventId
            yield { type: frame.event, id: frame.id ?? '', ...(data as Omit<RealtimeChange<T>, 'type' | 'id'>) }
          }
        }
      } catch (error) {
        if (stop.signal.aborted) return
        if (error instanceof PlinthError) throw error
        // A dropped connection: reconnect below.
      }
      await sleep(options.reconnectDelayMs ?? 1000, stop.signal)
    }
  } finally {
    options.signal?.removeEventListener('abort', onAbort)
    stop.abort()
  }
}
