import type { Readable } from 'node:stream'
import { StringDecoder } from 'node:string_decoder'
import { LineSplitter } from '../line-splitter.js'
import type { LogStream } from '../runtime.js'

/**
 * Reading what the engine streams back: its multiplexed container output
 * (8-byte frame headers: stream 1 stdout, 2 stderr, then a big-endian length)
 * and the newline-delimited JSON of a build, both cut into whole lines.
 */

const HEADER = 8

/**
 * Demultiplexes a container's attach stream into lines; resolves when the
 * stream ends or fails. A frame's payload is passed on as it arrives, never
 * held whole, so a frame however long costs no more than a chunk.
 */
export async function readContainerOutput (stream: Readable, write: (line: string, source: LogStream) => void): Promise<void> {
  const outputs = {
    stdout: { lines: new LineSplitter((line) => write(line, 'stdout')), text: new StringDecoder('utf8') },
    stderr: { lines: new LineSplitter((line) => write(line, 'stderr')), text: new StringDecoder('utf8') }
  }
  let header = Buffer.alloc(0)
  let remaining = 0
  let target = outputs.stdout
  try {
    for await (const chunk of stream) {
      const bytes = chunk as Buffer
      let offset = 0
      while (offset < bytes.length) {
        if (remaining === 0) {
          const taken = Math.min(HEADER - header.length, bytes.length - offset)
          header = Buffer.concat([header, bytes.subarray(offset, offset + taken)])
          offset += taken
          if (header.length < HEADER) break
          target = header[0] === 2 ? outputs.stderr : outputs.stdout
          remaining = header.readUInt32BE(4)
          header = Buffer.alloc(0)
          continue
        }
        const taken = Math.min(remaining, bytes.length - offset)
        target.lines.push(target.text.write(bytes.subarray(offset, offset + taken)))
        offset += taken
        remaining -= taken
      }
    }
  } catch {
    // A stream cut by close() or by the container's removal ends the output like an end would.
  }
  for (const output of [outputs.stdout, outputs.stderr]) {
    output.lines.push(output.text.end())
    output.lines.flush()
  }
}

export interface BuildMessage {
  stream?: string
  error?: string
  aux?: { ID?: string }
}

/** Reads a build's newline-delimited JSON answer, one parsed message at a time. */
export async function readBuildMessages (stream: Readable, onMessage: (message: BuildMessage) => void): Promise<void> {
  // Never cut: an engine's message is one JSON document, however long.
  const lines = new LineSplitter((line) => {
    if (line.trim() === '') return
    try {
      onMessage(JSON.parse(line) as BuildMessage)
    } catch {
      onMessage({ stream: `${line}\n` })
    }
  }, Infinity)
  for await (const chunk of stream) lines.push((chunk as Buffer).toString('utf8'))
  lines.flush()
}
