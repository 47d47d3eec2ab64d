/** One server-sent event: its `id` when it had one, its `event` name (`message` by default) and its `data` lines joined. */
export interface SseFrame { id?: string, event: string, data: string }

/**
 * Reads a text/event-stream body into its events (the WHATWG parsing rules
 * the SDK's streams need: CRLF or LF line ends, comments, multi-line data).
 * Every streaming method of the SDK reads its answer through this one reader.
 */
export async function * sseFrames (body: ReadableStream<Uint8Array>): AsyncGenerator<SseFrame> {
  const decoder = new TextDecoder()
  let buffer = ''
  // A chunk's last `\r` may be the first half of a `\r\n`: held back until the next chunk says.
  let heldReturn = false
  const reader = body.getReader()
  try {
    for (;;) {
      const { done, value } = await reader.read()
      // At the end, a held `\r` was a line end after all.
      let text: string = (heldReturn ? '\r' : '') + (done ? '' : decoder.decode(value, { stream: true }))
      heldReturn = !done && text.endsWith('\r')
      if (heldReturn) text = text.slice(0, -1)
      buffer += text.replace(/\r\n?/g, '\n')
      let cut: number
      while ((cut = buffer.indexOf('\n\n')) !== -1) {
        const frame: SseFrame = { event: 'message', data: '' }
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
      if (done) return
    }
  } finally {
    reader.releaseLock()
  }
}
