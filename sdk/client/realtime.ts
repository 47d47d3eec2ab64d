import { PlinthError } from '../core/errors.js'
import type { Http } from '../core/http.js'
import { sseFrames, type SseFrame } from '../core/sse.js'

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
  /**
   * `sse` (the default): Server-Sent Events over fetch. `websocket`: one
   * WebSocket (the client's `WebSocket` option, else the platform's), for
   * networks or runtimes where a long fetch does not stream. Same events either way.
   */
  transport?: 'sse' | 'websocket'
}

/** What the WebSocket transport needs of a WebSocket class: the browser's, Node 22's, or the `ws` package's. */
export interface WebSocketLike {
  readonly protocol: string
  close: (code?: number, reason?: string) => void
  addEventListener: (type: 'open' | 'message' | 'close' | 'error', listener: (event: { data?: unknown }) => void) => void
}
export type WebSocketConstructor = new (url: string, protocols?: string[]) => WebSocketLike

/** What subscribe needs besides the HTTP client: the bearer token (the socket's subprotocol carries it) and a WebSocket class. */
export interface RealtimeTransport { token: () => Promise<string | null>, WebSocket?: WebSocketConstructor }

/** The messages of one realtime WebSocket, as frames; null when the handshake failed (the server's answer was not a switch). */
async function * socketFrames (WebSocketClass: WebSocketConstructor, url: string, token: string | null, signal: AbortSignal): AsyncGenerator<SseFrame | null> {
  // A browser's WebSocket cannot send Authorization: the server reads the token from the offered subprotocol.
  const socket = new WebSocketClass(url, token === null ? [REALTIME_PROTOCOL] : [REALTIME_PROTOCOL, `plinth.bearer.${token}`])
  const queue: Array<SseFrame | 'closed'> = []
  let opened = false
  let wake: (() => void) | null = null
  const push = (item: SseFrame | 'closed'): void => { queue.push(item); wake?.() }
  socket.addEventListener('open', () => { opened = true })
  socket.addEventListener('message', (event) => {
    let message: { id?: unknown, event?: unknown, data?: unknown }
    try {
      message = JSON.parse(String(event.data)) as typeof message
    } catch {
      message = {}
    }
    // Not a message of this protocol (a proxy's page, a cut frame): thrown here it would be an uncaught error in Node,
    // so the connection is dropped instead, and taken up again with the last event id.
    if (typeof message !== 'object' || message === null || typeof message.event !== 'string') {
      socket.close(1002)
      push('closed')
      return
    }
    push({ ...(typeof message.id === 'string' ? { id: message.id } : {}), event: message.event, data: JSON.stringify(message.data ?? null) })
  })
  socket.addEventListener('close', () => { push('closed') })
  // A failed handshake or a dropped socket says so by 'close' too, which is where it is handled.
  socket.addEventListener('error', () => {})
  const onAbort = (): void => { socket.close(1000) }
  signal.addEventListener('abort', onAbort, { once: true })
  try {
    for (;;) {
      while (queue.length === 0) await new Promise<void>((resolve) => { wake = resolve })
      const item = queue.shift()
      if (item === 'closed') {
        if (!opened) yield null
        return
      }
      if (item !== undefined) yield item
    }
  } finally {
    signal.removeEventListener('abort', onAbort)
    socket.close(1000)
  }
}

const REALTIME_PROTOCOL = 'plinth.realtime'

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
  http: Http, projectId: string, subscriptions: RealtimeSubscription[], options: SubscribeOptions = {}, transport?: RealtimeTransport
): AsyncGenerator<RealtimeChange<T> | RealtimeGap> {
  const stop = new AbortController()
  const onAbort = (): void => { stop.abort() }
  options.signal?.addEventListener('abort', onAbort, { once: true })
  let lastEventId = options.lastEventId ?? null
  const url = `${http.baseUrl}/api/p/${encodeURIComponent(projectId)}/realtime?subscriptions=${encodeURIComponent(JSON.stringify(subscriptions))}`
  const WebSocketClass = options.transport === 'websocket'
    ? transport?.WebSocket ?? (globalThis as { WebSocket?: WebSocketConstructor }).WebSocket
    : undefined
  if (options.transport === 'websocket' && WebSocketClass === undefined) throw new PlinthError(0, 'SDK_NO_WEBSOCKET', 'This runtime has no WebSocket: pass createClient({ WebSocket }) (the `ws` package in Node before 22)')
  /** The stream's frames, or the refusal it met (thrown), or null for a dropped connection. */
  const open = async (): Promise<AsyncGenerator<SseFrame | null> | null> => {
    const headers: Record<string, string> = { accept: 'text/event-stream' }
    if (lastEventId !== null) headers['last-event-id'] = lastEventId
    let response: Response
    try {
      response = await http.once(new Request(url, { headers, signal: stop.signal }))
    } catch (error) {
      if (stop.signal.aborted) return null
      if (!(error instanceof PlinthError) || error.code !== 'SDK_NETWORK') throw error
      return null
    }
    if (!response.ok || response.body === null) {
      const error = PlinthError.fromAnswer(response, await response.json().catch(() => null))
      // The server may not have noticed the previous connection go yet.
      if (response.status !== 429) throw error
      return null
    }
    if (WebSocketClass === undefined) return sseFrames(response.body)
    // Asked over HTTP only to learn a refusal, which a WebSocket handshake cannot tell a browser: admitted, it is let go.
    await response.body.cancel().catch(() => {})
    return null
  }
  try {
    while (!stop.signal.aborted) {
      let source: AsyncGenerator<SseFrame | null> | null
      if (WebSocketClass !== undefined) {
        const resume = lastEventId === null ? '' : `&lastEventId=${encodeURIComponent(lastEventId)}`
        source = socketFrames(WebSocketClass, `${url.replace(/^http/, 'ws')}${resume}`, await transport?.token() ?? null, stop.signal)
      } else {
        source = await open()
      }
      try {
        for await (const frame of source ?? []) {
          if (frame === null) {
            // The handshake was refused: learn why over HTTP (thrown), or retry after the delay.
            await open()
            break
          }
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
