/** A Server-Sent Events reader over fetch's streaming body, as a browser's fetch-based client reads one. */
export interface SseEvent { id?: string, event: string, data: any }

export class SseStream {
  readonly events: SseEvent[] = []
  ended = false
  private read = 0
  private wake: (() => void) | null = null
  private readonly controller = new AbortController()

  static async open (url: string, headers: Record<string, string> = {}): Promise<SseStream | { status: number, body: any }> {
    const stream = new SseStream()
    const response = await fetch(url, { headers: { accept: 'text/event-stream', ...headers }, signal: stream.controller.signal })
    if (response.status !== 200 || response.body === null) return { status: response.status, body: await response.json() }
    void stream.pipe(response.body)
    return stream
  }

  private async pipe (body: ReadableStream<Uint8Array>): Promise<void> {
    const decoder = new TextDecoder()
    let buffer = ''
    try {
      for await (const chunk of body) {
        buffer += decoder.decode(chunk, { stream: true })
        let cut: number
        while ((cut = buffer.indexOf('\n\n')) !== -1) {
          const block = buffer.slice(0, cut)
          buffer = buffer.slice(cut + 2)
          const event: SseEvent = { event: 'message', data: '' }
          const data: string[] = []
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) continue
            const colon = line.indexOf(':')
            const [field, value] = colon === -1 ? [line, ''] : [line.slice(0, colon), line.slice(colon + 1).replace(/^ /, '')]
            if (field === 'id') event.id = value
            else if (field === 'event') event.event = value
            else if (field === 'data') data.push(value)
          }
          if (data.length === 0) continue
          event.data = JSON.parse(data.join('\n'))
          this.events.push(event)
          this.wake?.()
        }
      }
    } catch {
      // aborted by close()
    }
    this.ended = true
    this.wake?.()
  }

  /** The next event not read yet (null once the stream has ended). */
  async next (): Promise<SseEvent | null> {
    while (this.read >= this.events.length) {
      if (this.ended) return null
      await new Promise<void>((resolve) => { this.wake = resolve })
      this.wake = null
    }
    return this.events[this.read++]
  }

  /** The next event of one of `types`, skipping others. */
  async nextOf (...types: string[]): Promise<SseEvent | null> {
    for (;;) {
      const event = await this.next()
      if (event === null || types.includes(event.event)) return event
    }
  }

  close (): void {
    this.controller.abort()
  }
}
