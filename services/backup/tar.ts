import type { Writable } from 'node:stream'

/**
 * The POSIX tar format (ustar headers, pax `x` records for long names and
 * large sizes), only as far as backups need it: directories and regular files.
 * Written here rather than taken from a package so that every refusal of a
 * damaged archive can name the entry, and nothing outside the two types is
 * ever extracted (no links, devices or absolute paths).
 */

const BLOCK = 512
const MAX_OCTAL_SIZE = 0o77777777777

export class TarFormatError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'TarFormatError'
  }
}

function writeField (header: Buffer, offset: number, length: number, text: string): void {
  header.write(text, offset, length, 'utf8')
}

function octal (value: number, length: number): string {
  return value.toString(8).padStart(length - 1, '0') + '\0'
}

function paxRecord (key: string, value: string): string {
  const body = ` ${key}=${value}\n`
  let length = Buffer.byteLength(body)
  // The length counts its own digits.
  while (String(length).length + Buffer.byteLength(body) !== length) length = String(length).length + Buffer.byteLength(body)
  return `${length}${body}`
}

function header (name: string, type: '0' | '5' | 'x', size: number, mode: number, mtime: number): Buffer {
  const block = Buffer.alloc(BLOCK)
  writeField(block, 0, 100, name)
  writeField(block, 100, 8, octal(mode, 8))
  writeField(block, 108, 8, octal(0, 8))
  writeField(block, 116, 8, octal(0, 8))
  writeField(block, 124, 12, octal(size, 12))
  writeField(block, 136, 12, octal(Math.floor(mtime / 1000), 12))
  block.fill(0x20, 148, 156)
  block.write(type, 156, 1, 'ascii')
  block.write('ustar\0', 257, 6, 'ascii')
  block.write('00', 263, 2, 'ascii')
  let sum = 0
  for (const byte of block) sum += byte
  writeField(block, 148, 8, sum.toString(8).padStart(6, '0') + '\0 ')
  return block
}

async function write (out: Writable, chunk: Buffer): Promise<void> {
  if (!out.write(chunk)) {
    await new Promise<void>((resolve, reject) => {
      const done = (error?: Error): void => { out.off('drain', done); out.off('error', done); error === undefined ? resolve() : reject(error) }
      out.once('drain', done)
      out.once('error', done)
    })
  }
}

export interface TarEntryHeader { path: string, type: 'file' | 'directory', size: number, mode: number, mtime: number }

/** Writes entries one after another to `out`; `end()` writes the closing blocks (the caller ends the stream). */
export class TarWriter {
  constructor (private readonly out: Writable) {}

  private async headerFor (entry: TarEntryHeader): Promise<void> {
    const name = entry.type === 'directory' ? `${entry.path}/` : entry.path
    const simple = Buffer.byteLength(name) < 100 && /^[\x20-\x7e]*$/.test(name)
    if (!simple || entry.size > MAX_OCTAL_SIZE) {
      const pax = Buffer.from(paxRecord('path', name) + (entry.size > MAX_OCTAL_SIZE ? paxRecord('size', String(entry.size)) : ''))
      await write(this.out, header('PaxHeader', 'x', pax.length, 0o644, entry.mtime))
      await write(this.out, pad(pax))
    }
    await write(this.out, header(simple ? name : name.slice(0, 99).replace(/[^\x20-\x7e]/g, '_'), entry.type === 'directory' ? '5' : '0',
      entry.size > MAX_OCTAL_SIZE ? 0 : entry.size, entry.mode, entry.mtime))
  }

  async directory (path: string, mode: number, mtime: number): Promise<void> {
    await this.headerFor({ path, type: 'directory', size: 0, mode, mtime })
  }

  /** A file of exactly `size` bytes, read from `body`; a body that ends short or runs long is an error (the file changed). */
  async file (path: string, size: number, mode: number, mtime: number, body: AsyncIterable<Buffer> | Iterable<Buffer>): Promise<void> {
    await this.headerFor({ path, type: 'file', size, mode, mtime })
    let written = 0
    for await (const chunk of body) {
      written += chunk.length
      if (written > size) throw new Error(`${path} grew while it was read`)
      await write(this.out, chunk)
    }
    if (written !== size) throw new Error(`${path} shrank while it was read`)
    const rest = size % BLOCK
    if (rest !== 0) await write(this.out, Buffer.alloc(BLOCK - rest))
  }

  async end (): Promise<void> {
    await write(this.out, Buffer.alloc(BLOCK * 2))
  }
}

function pad (data: Buffer): Buffer {
  const rest = data.length % BLOCK
  return rest === 0 ? data : Buffer.concat([data, Buffer.alloc(BLOCK - rest)])
}

/** Pulls exact byte counts out of a stream of chunks. */
class ByteSource {
  private readonly chunks: AsyncIterator<Buffer>
  private pending: Buffer = Buffer.alloc(0)

  constructor (source: AsyncIterable<Buffer>) {
    this.chunks = source[Symbol.asyncIterator]()
  }

  /** Up to `max` bytes (fewer only at the end of the stream; empty at its end). */
  async take (max: number): Promise<Buffer> {
    while (this.pending.length === 0) {
      const next = await this.chunks.next()
      if (next.done === true) return this.pending
      this.pending = next.value
    }
    const out = this.pending.subarray(0, max)
    this.pending = this.pending.subarray(out.length)
    return out
  }

  async exactly (length: number, what: string): Promise<Buffer> {
    const parts: Buffer[] = []
    let have = 0
    while (have < length) {
      const part = await this.take(length - have)
      if (part.length === 0) throw new TarFormatError(`the archive ends in the middle of ${what}`)
      parts.push(part)
      have += part.length
    }
    return parts.length === 1 ? parts[0] : Buffer.concat(parts)
  }
}

function readText (block: Buffer, offset: number, length: number): string {
  const field = block.subarray(offset, offset + length)
  const end = field.indexOf(0)
  return field.subarray(0, end === -1 ? length : end).toString('utf8')
}

function readOctal (block: Buffer, offset: number, length: number, what: string): number {
  const text = readText(block, offset, length).trim()
  if (!/^[0-7]*$/.test(text)) throw new TarFormatError(`a header's ${what} is not a number`)
  return text === '' ? 0 : parseInt(text, 8)
}

function parsePax (data: Buffer): Map<string, string> {
  const records = new Map<string, string>()
  let at = 0
  while (at < data.length) {
    const space = data.indexOf(0x20, at)
    const length = Number(data.subarray(at, space).toString('ascii'))
    if (space === -1 || !Number.isSafeInteger(length) || length <= 0 || at + length > data.length) throw new TarFormatError('a pax header is malformed')
    const record = data.subarray(space + 1, at + length - 1).toString('utf8')
    const equals = record.indexOf('=')
    if (equals === -1) throw new TarFormatError('a pax header is malformed')
    records.set(record.slice(0, equals), record.slice(equals + 1))
    at += length
  }
  return records
}

export interface TarEntry extends TarEntryHeader {
  /** The file's bytes; must be read to the end before the next entry is asked for. */
  body: AsyncIterable<Buffer>
}

/**
 * The entries of a tar stream, in order. Anything but a directory or a
 * regular file, a header whose checksum does not add up, or a stream that
 * ends early is a TarFormatError naming where it happened.
 */
/** A pax header holds a few records (a long name, a size): read whole into memory, so refused past this. */
const PAX_HEADER_MOST = 64 * 1024

export async function * readTar (source: AsyncIterable<Buffer>): AsyncGenerator<TarEntry> {
  const bytes = new ByteSource(source)
  let pax = new Map<string, string>()
  let previous = 'the start of the archive'
  while (true) {
    const block = await bytes.exactly(BLOCK, `the header after ${previous}`)
    if (block.every((byte) => byte === 0)) return
    const stored = readOctal(block, 148, 8, 'checksum')
    let sum = 0
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i]
    if (sum !== stored) throw new TarFormatError(`the header after ${previous} is damaged (its checksum does not match)`)
    const type = String.fromCharCode(block[156])
    let size = readOctal(block, 124, 12, 'size')
    // A pax `size` record is the next file's; a pax header's own size is its header's, and it is read whole, so bounded.
    if (pax.has('size') && type !== 'x') size = Number(pax.get('size'))
    if (!Number.isSafeInteger(size) || size < 0) throw new TarFormatError(`the header after ${previous} has a bad size`)
    if (type === 'x') {
      if (size > PAX_HEADER_MOST) throw new TarFormatError(`the pax header after ${previous} claims ${size} bytes, more than a header holds`)
      pax = parsePax(await bytes.exactly(size + (BLOCK - (size % BLOCK)) % BLOCK, 'a pax header').then((data) => data.subarray(0, size)))
      continue
    }
    const prefix = readText(block, 345, 155)
    const name = pax.get('path') ?? (prefix === '' ? readText(block, 0, 100) : `${prefix}/${readText(block, 0, 100)}`)
    pax = new Map()
    if (type !== '0' && type !== '\0' && type !== '5') throw new TarFormatError(`${name} is neither a file nor a directory`)
    const entry = {
      path: name.replace(/\/+$/, ''),
      type: type === '5' ? 'directory' as const : 'file' as const,
      size: type === '5' ? 0 : size,
      mode: readOctal(block, 100, 8, 'mode'),
      mtime: readOctal(block, 136, 12, 'mtime') * 1000
    }
    let left = entry.size
    let consumed = false
    const body = async function * (): AsyncGenerator<Buffer> {
      consumed = true
      while (left > 0) {
        const part = await bytes.take(left)
        if (part.length === 0) throw new TarFormatError(`the archive ends in the middle of ${entry.path}`)
        left -= part.length
        yield part
      }
    }
    yield { ...entry, body: body() }
    if (!consumed) for await (const part of body()) void part
    if (left !== 0) throw new TarFormatError(`${entry.path} was not read to its end`)
    const rest = entry.size % BLOCK
    if (rest !== 0) await bytes.exactly(BLOCK - rest, `the padding of ${entry.path}`)
    previous = entry.path
  }
}
