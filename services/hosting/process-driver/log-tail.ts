import { open, stat, truncate } from 'node:fs/promises'
import type { LogSink, LogStream } from '../runtime.js'

const CHUNK_BYTES = 64 * 1024
/** A line longer than this is cut and passed on in pieces, so one endless line cannot grow memory. */
const MAX_LINE_BYTES = 16 * 1024

/**
 * Follows an instance's log file from a byte offset and hands complete lines
 * to the sink. The file, not a pipe, holds the output, so an instance keeps
 * writing while no server runs and the next server resumes from the offset
 * the last one saved.
 */
export class LogTail {
  /** Bytes after the last newline, kept as bytes so a character split across reads stays whole. */
  private partial = Buffer.alloc(0)
  private timer: NodeJS.Timeout | null = null
  private reading: Promise<void> = Promise.resolve()

  /** Once read past `maxBytes` the file is emptied (the process appends, so it writes on from the start). */
  constructor (private readonly file: string, private readonly stream: LogStream, private readonly sink: LogSink, public offset: number, private readonly maxBytes = Infinity) {}

  start (intervalMs: number): void {
    this.timer = setInterval(() => { void this.poll() }, intervalMs)
    this.timer.unref()
  }

  /** Reads what is new; calls are serialized so lines keep their order. */
  async poll (): Promise<void> {
    this.reading = this.reading.then(async () => await this.readNew())
    await this.reading
  }

  /** Stops following after passing on everything written so far, the unfinished last line too. */
  async stop (): Promise<void> {
    if (this.timer !== null) clearInterval(this.timer)
    this.timer = null
    await this.poll()
    if (this.partial.length > 0) this.sink.write(this.partial.toString('utf8'), this.stream)
    this.partial = Buffer.alloc(0)
  }

  /** Where the next server resumes: the start of the line not yet passed on. */
  get resumeOffset (): number {
    return Math.max(0, this.offset - this.partial.length)
  }

  /** Stops following without flushing the unfinished line, which the next server reads again from `resumeOffset`. */
  pause (): void {
    if (this.timer !== null) clearInterval(this.timer)
    this.timer = null
  }

  private async readNew (): Promise<void> {
    const size = await stat(this.file).then(s => s.size, () => 0)
    if (size < this.offset) { this.offset = 0; this.partial = Buffer.alloc(0) }
    if (size === this.offset) return
    const handle = await open(this.file, 'r')
    try {
      const buffer = Buffer.alloc(CHUNK_BYTES)
      while (this.offset < size) {
        const { bytesRead } = await handle.read(buffer, 0, Math.min(CHUNK_BYTES, size - this.offset), this.offset)
        if (bytesRead === 0) break
        this.offset += bytesRead
        this.emit(buffer.subarray(0, bytesRead))
      }
    } finally {
      await handle.close()
    }
    if (this.offset >= this.maxBytes) {
      // Everything up to here is passed on; what the process writes meanwhile may be lost, a bounded price for a bounded file.
      await truncate(this.file, 0)
      this.offset = 0
    }
  }

  private emit (chunk: Buffer): void {
    let pending = Buffer.concat([this.partial, chunk])
    for (let newline = pending.indexOf(10); newline !== -1; newline = pending.indexOf(10)) {
      this.pass(pending.subarray(0, newline))
      pending = pending.subarray(newline + 1)
    }
    const whole = pending.length - pending.length % MAX_LINE_BYTES
    if (whole > 0) this.pass(pending.subarray(0, whole))
    this.partial = Buffer.from(pending.subarray(whole))
  }

  private pass (line: Buffer): void {
    let start = 0
    do {
      this.sink.write(line.subarray(start, start + MAX_LINE_BYTES).toString('utf8'), this.stream)
      start += MAX_LINE_BYTES
    } while (start < line.length)
  }
}
