import type { Readable } from 'node:stream'
import type { LogStream } from '../runtime.js'

/**
 * Reading what the engine streams back: its multiplexed container output
 * (8-byte frame headers: stream 1 stdout, 2 stderr, then a big-endian length)
 * and the newline-delimited JSON of a build, both cut into whole lines.
 */

/** Cuts text into lines; a partial line waits for its end (or for `flush`). */
export class LineSplitter {
  private pending = ''
  constructor (private readonly onLine: (line: string) => void) {}

  push (text: string): void {
    const parts = (this.pending + text).split('\n')
    this.pending = parts.pop() ?? ''
    for (const part of parts) this.onLine(part.endsWith('\r') ? part.slice(0, -1) : part)
  }

  flush (): void {
    if (this.pending !== '') this.onLine(this.pending)
    this.pending = ''
  }
}

const HEADER = 8

/** Demultiplexes a container's attach stream into lines; resolves when the stream ends or fails. */
export async function readContainerOutput (stream: Readable, write: (line: string, source: LogStream) => void): Promise<void> {
  const lines = { stdout: new LineSplitter((line) => write(line, 'stdout')), stderr: new LineSplitter((line) => write(line, 'stderr')) }
  let buffered = Buffer.alloc(0)
  try {
    for await (const chunk of stream) {
      buffered = Buffer.concat([buffered, chunk as Buffer])
      while (buffered.length >= HEADER) {
        const length = buffered.readUInt32BE(4)
        if (buffered.length < HEADER + length) break
        const target = buffered[0] === 2 ? lines.stderr : lines.stdout
        target.push(buffered.subarray(HEADER, HEADER + length).toString('utf8'))
        buffered = buffered.subarray(HEADER + length)
      }
    }
  } catch {
    // A stream cut by close() or by the container's removal ends the output like an end would.
  }
  lines.stdout.flush()
  lines.stderr.flush()
}

export interface BuildMessage {
  stream?: string
  error?: string
  aux?: { ID?: string }
}

/** Reads a build's newline-delimited JSON answer, one parsed message at a time. */
export async function readBuildMessages (stream: Readable, onMessage: (message: BuildMessage) => void): Promise<void> {
  const lines = new LineSplitter((line) => {
    if (line.trim() === '') return
    try {
      onMessage(JSON.parse(line) as BuildMessage)
    } catch {
      onMessage({ stream: `${line}\n` })
    }
  })
  for await (const chunk of stream) lines.push((chunk as Buffer).toString('utf8'))
  lines.flush()
}
