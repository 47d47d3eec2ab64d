/**
 * A strict reader of an upstream's HTTP/1.1 answers, fed the bytes of one
 * connection as they come: the status line, the header lines, then a body
 * framed by Content-Length, by chunked Transfer-Encoding or by the end of
 * the connection (RFC 9112 §6.3), and nothing else. Informational answers
 * (100, 103) are read and dropped. Anything it does not expect — an
 * obsolete line fold, a bare LF, a Transfer-Encoding other than chunked, a
 * second Content-Length, both framings at once, a head past the size limit,
 * a 101 to a request that asked for no upgrade — is an
 * `UpstreamProtocolError`: the answer is refused (502) and the connection
 * dropped, so an upstream cannot make the gateway see message boundaries
 * the client would not.
 */

export class UpstreamProtocolError extends Error {
  readonly code = 'UPSTREAM_PROTOCOL'
}

export interface AnswerSink {
  /**
   * The head of the final answer. `whole` is the entire body when it came
   * in the same read as the head (then no body or end call follows, and a
   * chunked answer's headers gain its Content-Length), else null and the
   * body follows.
   */
  head: (status: number, reason: string, headers: string[], whole: Buffer | null) => void
  /** A piece of the body; false asks the connection to pause until the sink catches up. */
  body: (chunk: Buffer) => boolean
  end: () => void
}

/** How the body of the answer being read is delimited. */
export type Framing = 'none' | 'length' | 'chunked' | 'close'

const enum State { Head, Length, ChunkSize, ChunkData, ChunkEnd, Trailers, UntilClose, Done }

const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
// Field values: visible characters, spaces, tabs and obs-text; no other controls.
const BAD_VALUE = /[\x00-\x08\x0a-\x1f\x7f]/
const STATUS_LINE = /^HTTP\/1\.([01]) ([1-9]\d\d)(?: ([^\x00-\x08\x0a-\x1f\x7f]*))?$/
const CHUNK_SIZE = /^([0-9A-Fa-f]{1,12})(?:[ \t]*;[^\x00-\x08\x0a-\x1f\x7f]*)?$/
const LENGTH = /^\d{1,15}$/
/** A chunk-size line, extensions included, longer than this is refused. */
const MOST_CHUNK_LINE = 1024
const KEEP_ALIVE_TIMEOUT = /(?:^|[,;\s])timeout=(\d{1,9})/i

/** A field value without the optional whitespace around it (spaces and tabs only). */
function withoutOws (line: string, from: number): string {
  let start = from
  let end = line.length
  while (start < end && (line.charCodeAt(start) === 0x20 || line.charCodeAt(start) === 0x09)) start++
  while (end > start && (line.charCodeAt(end - 1) === 0x20 || line.charCodeAt(end - 1) === 0x09)) end--
  return line.slice(start, end)
}

export class UpstreamReader {
  state = State.Head
  framing: Framing = 'none'
  /** Whether the connection may carry another request once this answer is read. */
  reusable = true
  /** The upstream's Keep-Alive timeout hint, in ms, when it gave one. */
  keepAliveMs: number | null = null
  private pending: Buffer | null = null
  private remaining = 0
  private headBytes = 0
  private paused = false
  /** Body pieces read in the read that completed the head, held to answer whole when the body ends in it too. */
  private held: Buffer[] | null = null
  private heldHead: [number, string, string[]] | null = null

  constructor (private readonly sink: AnswerSink, private readonly headRequest: boolean, private readonly maxHeadBytes: number) {}

  get done (): boolean {
    return this.state === State.Done
  }

  /** Whether the upstream has sent anything yet: a request it has begun to answer is not sent again. */
  received = false

  /** Reads `chunk`; true when the sink asked to pause. Throws UpstreamProtocolError. */
  push (chunk: Buffer): boolean {
    this.received = true
    this.paused = false
    let data = chunk
    let offset = 0
    while (offset < data.length && this.state !== State.Done) {
      switch (this.state) {
        case State.Head: {
          const joined = this.pending === null ? data.subarray(offset) : Buffer.concat([this.pending, data.subarray(offset)])
          const searchFrom = this.pending === null ? 0 : Math.max(0, this.pending.length - 3)
          const end = joined.indexOf('\r\n\r\n', searchFrom, 'latin1')
          if (end === -1) {
            if (joined.length > this.maxHeadBytes) throw new UpstreamProtocolError('the upstream\'s answer head is too large')
            this.pending = joined
            return false
          }
          if (end + 4 > this.maxHeadBytes) throw new UpstreamProtocolError('the upstream\'s answer head is too large')
          this.pending = null
          this.headBytes += end + 4
          data = joined
          offset = end + 4
          this.readHead(joined.toString('latin1', 0, end))
          if (this.state === State.Head) continue
          this.held = []
          break
        }
        case State.Length:
          offset = this.passCounted(data, offset)
          if (this.remaining === 0) this.finish()
          break
        case State.ChunkSize:
        case State.Trailers: {
          const pending = this.pending
          let line: Buffer
          if (pending !== null && pending[pending.length - 1] === 0x0d && data[offset] === 0x0a) {
            // The line's CRLF was cut between two reads.
            line = pending.subarray(0, pending.length - 1)
            offset++
          } else {
            const lineEnd = data.indexOf('\r\n', offset, 'latin1')
            const piece = data.subarray(offset, lineEnd === -1 ? data.length : lineEnd)
            line = pending === null ? piece : Buffer.concat([pending, piece])
            if (line.length > (this.state === State.ChunkSize ? MOST_CHUNK_LINE : this.maxHeadBytes)) throw new UpstreamProtocolError('the upstream sent an oversized chunk line')
            if (lineEnd === -1) {
              this.pending = line
              offset = data.length
              break
            }
            offset = lineEnd + 2
          }
          this.pending = null
          if (this.state === State.ChunkSize) this.chunkSize(line.toString('latin1', 0, line.length))
          else this.trailer(line)
          break
        }
        case State.ChunkData:
          offset = this.passCounted(data, offset)
          if (this.remaining === 0) {
            this.state = State.ChunkEnd
            this.remaining = 2
          }
          break
        case State.ChunkEnd: {
          // The CRLF after a chunk's data, possibly split across reads.
          const expected = this.remaining === 2 ? 0x0d : 0x0a
          if (data[offset] !== expected) throw new UpstreamProtocolError('a chunk of the upstream\'s answer is not followed by CRLF')
          offset++
          if (--this.remaining === 0) this.state = State.ChunkSize
          break
        }
        case State.UntilClose:
          this.emit(data.subarray(offset))
          offset = data.length
          break
      }
    }
    // Bytes past the end of the answer: no request asked for them, so the connection is not trusted again.
    if (offset < data.length) this.reusable = false
    this.flushHeld()
    return this.paused
  }

  /** The upstream closed its side: that ends a body read until close; anywhere else the answer is cut. */
  close (): void {
    if (this.state === State.UntilClose) {
      this.state = State.Done
      this.sink.end()
      return
    }
    if (this.state !== State.Done) throw new UpstreamProtocolError('the upstream closed the connection before its answer ended')
  }

  private readHead (head: string): void {
    const lines = head.split('\r\n')
    const status = STATUS_LINE.exec(lines[0])
    if (status === null) throw new UpstreamProtocolError('the upstream\'s status line is not HTTP/1.1')
    const code = Number(status[2])
    const headers: string[] = []
    let length: string | null = null
    let chunked = false
    let connection: string | null = null
    for (let i = 1; i < lines.length; i++) {
      const line = lines[i]
      const colon = line.indexOf(':')
      if (colon <= 0) throw new UpstreamProtocolError('the upstream sent a header line without a name')
      const name = line.slice(0, colon)
      if (!TOKEN.test(name)) throw new UpstreamProtocolError('the upstream sent a header name that is not a token')
      const value = withoutOws(line, colon + 1)
      if (BAD_VALUE.test(value)) throw new UpstreamProtocolError('the upstream sent a control character in a header')
      // Framing and connection headers are this connection's; the rest goes on.
      switch (name.length) {
        case 10:
          if (name.toLowerCase() === 'connection') connection = connection === null ? value : `${connection}, ${value}`
          else if (name.toLowerCase() === 'keep-alive') this.keepAliveHint(value)
          break
        case 14:
          if (name.toLowerCase() === 'content-length') {
            if (length !== null || !LENGTH.test(value)) throw new UpstreamProtocolError('the upstream sent a Content-Length that is not one number')
            length = value
          }
          break
        case 17:
          if (name.toLowerCase() === 'transfer-encoding') {
            if (chunked || value.toLowerCase() !== 'chunked') throw new UpstreamProtocolError('the upstream sent a Transfer-Encoding other than chunked')
            chunked = true
          }
          break
      }
      headers.push(name, value)
    }
    if (code < 200) {
      if (code === 101) throw new UpstreamProtocolError('the upstream switched protocols unasked')
      return
    }
    if (chunked && length !== null) throw new UpstreamProtocolError('the upstream framed its answer both by length and by chunks')
    if (status[1] === '0' || (connection !== null && /(?:^|,)\s*close\s*(?:,|$)/i.test(connection))) this.reusable = false
    this.heldHead = [code, status[3] ?? '', headers]
    if (this.headRequest || code === 204 || code === 304) {
      this.framing = 'none'
      this.state = State.Done
      // An answer that has no body but names one (a HEAD answer with the GET's length, a 304 with its entity's) may
      // still send those bytes in a later write, where the next request on this connection would read them as its own.
      if (chunked || (length !== null && Number(length) !== 0)) this.reusable = false
    } else if (chunked) {
      this.framing = 'chunked'
      this.state = State.ChunkSize
    } else if (length !== null) {
      this.framing = 'length'
      this.remaining = Number(length)
      this.state = this.remaining === 0 ? State.Done : State.Length
    } else {
      this.framing = 'close'
      this.reusable = false
      this.state = State.UntilClose
    }
  }

  private keepAliveHint (value: string): void {
    const timeout = KEEP_ALIVE_TIMEOUT.exec(value)
    if (timeout !== null) this.keepAliveMs = Number(timeout[1]) * 1000
  }

  private chunkSize (line: string): void {
    const size = CHUNK_SIZE.exec(line)
    if (size === null) throw new UpstreamProtocolError('the upstream sent a malformed chunk size')
    this.remaining = parseInt(size[1], 16)
    this.state = this.remaining === 0 ? State.Trailers : State.ChunkData
  }

  /** Trailer fields are read and dropped (the client's answer carries none); an empty line ends the answer. */
  private trailer (line: Buffer): void {
    if (line.length === 0) {
      this.finish()
      return
    }
    this.headBytes += line.length + 2
    if (this.headBytes > this.maxHeadBytes) throw new UpstreamProtocolError('the upstream\'s trailers are too large')
    const text = line.toString('latin1', 0, line.length)
    const colon = text.indexOf(':')
    if (colon <= 0 || !TOKEN.test(text.slice(0, colon)) || BAD_VALUE.test(withoutOws(text, colon + 1))) throw new UpstreamProtocolError('the upstream sent a malformed trailer')
  }

  /** Passes on as much of `data` from `offset` as the body still has `remaining`; where the next byte is. */
  private passCounted (data: Buffer, offset: number): number {
    const take = Math.min(this.remaining, data.length - offset)
    this.remaining -= take
    this.emit(data.subarray(offset, offset + take))
    return offset + take
  }

  private emit (chunk: Buffer): void {
    if (this.held !== null) this.held.push(chunk)
    else if (!this.sink.body(chunk)) this.paused = true
  }

  private finish (): void {
    this.state = State.Done
    if (this.held === null) this.sink.end()
  }

  /** At the end of a read: the head read in it goes to the sink, with the whole body when that ended in the same read. */
  private flushHeld (): void {
    const head = this.heldHead
    if (head === null) return
    const held = this.held as Buffer[]
    this.heldHead = null
    this.held = null
    if (this.state === State.Done) {
      const whole = held.length === 1 ? held[0] : Buffer.concat(held)
      // Read whole, a chunked answer has a length (its Transfer-Encoding is this connection's and is not passed on).
      if (this.framing === 'chunked') head[2].push('Content-Length', String(whole.length))
      this.sink.head(head[0], head[1], head[2], whole)
      return
    }
    this.sink.head(head[0], head[1], head[2], null)
    for (const chunk of held) if (!this.sink.body(chunk)) this.paused = true
  }
}
