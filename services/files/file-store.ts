import { createHash } from 'node:crypto'
import { Readable } from 'node:stream'
import type { AppError } from '../platform/errors.js'
import { fileErrors } from './errors.js'

/**
 * The FileStore port: flat objects addressed by keys that the
 * services build from validated ids, never from user text, e.g.
 * `files/<projectId>/<fileId>` or `uploads/<sessionId>`.
 * Engines: local disk under DATA_DIR (embedded default) and GridFS (MongoDB),
 * held to the same answers by test/services/files/conformance.
 *
 * Every write is atomic: a reader sees the old object or the whole new one,
 * and a failed or crashed write leaves no visible object behind.
 */

/** Inclusive byte offsets, as in `fs.createReadStream`. `end` omitted: to the end of the object. */
export interface ByteRange { start: number, end?: number }

/** What a write or a seal produced. */
export interface ObjectInfo { size: number, sha256: string }

/** An object as `list` finds it: its key and when its current bytes were written (a seal counts as a write). */
export interface ListedObject { key: string, writtenAt: Date }

export type FileStoreEngineName = 'local' | 'gridfs'

export interface FileStore {
  readonly engine: FileStoreEngineName
  /** Creates or replaces the object atomically and returns its size and SHA-256 (hex). */
  write (key: string, body: Buffer | Readable): Promise<ObjectInfo>
  /**
   * A stream of the object's bytes, or of a range of them: a range running
   * past the end stops at the end, one starting at or past it is empty.
   * Throws fileErrors.fileNotFound (404) when there is no such object.
   */
  read (key: string, range?: ByteRange): Promise<Readable>
  stat (key: string): Promise<{ size: number } | null>
  /** Idempotent: deleting a missing object is not an error. */
  delete (key: string): Promise<void>
  /** Deletes the object named `prefix` and every object under `prefix/` (whole segments: `a/b` never touches `a/bc`). */
  deletePrefix (prefix: string): Promise<void>
  /**
   * The object named `prefix` and every object under `prefix/`, each once,
   * in no promised order, for sweeps. Staged bytes are not objects; an
   * object written or deleted during the walk may or may not be listed.
   */
  list (prefix: string): AsyncIterable<ListedObject>
  /**
   * Writes `body` at byte `offset` of the bytes staged under `key`, in any
   * order and again, for resumable uploads; durable once it resolves. A write
   * that fails may leave some of its bytes written: the caller keeps track of
   * which parts are whole. Staged bytes are not an object: read and stat
   * never see them, `seal` makes one of them, deletePrefix(key) drops them.
   */
  writePart (key: string, offset: number, body: Buffer): Promise<void>
  /**
   * Atomically makes `target` hold the bytes staged under `key` (an empty
   * object when none were) and reports their size and SHA-256. A caller that
   * hashed the parts as it wrote them passes `sha256`, and an engine that
   * would only read the bytes back to hash them trusts it. The staged bytes
   * stay until deletePrefix(key), so a caller whose next step fails can
   * delete `target` and seal again.
   */
  seal (key: string, target: string, sha256?: string): Promise<ObjectInfo>
}

const KEY = /^[A-Za-z0-9_-]+(?:\/[A-Za-z0-9_-]+)*$/
const MAX_KEY_LENGTH = 512

/** Keys only ever hold these characters, so no key can climb out of its root or name a temp file. */
function isValidKey (key: unknown): key is string {
  return typeof key === 'string' && key.length <= MAX_KEY_LENGTH && KEY.test(key)
}

export function assertKey (key: unknown): asserts key is string {
  if (!isValidKey(key)) {
    throw fileErrors.invalidFileKey()
  }
}

/** One segment of a key, e.g. an id that goes into one. */
export function isValidKeySegment (segment: unknown): segment is string {
  return typeof segment === 'string' && segment.length <= 128 && /^[A-Za-z0-9_-]+$/.test(segment)
}

export function fileNotFound (key: string): AppError {
  return fileErrors.fileNotFound()
}

export function assertOffset (offset: unknown): asserts offset is number {
  if (!Number.isSafeInteger(offset) || (offset as number) < 0) throw new RangeError('A part offset is a whole number of bytes')
}

/** Checks a range and returns it clamped to an object of `size` bytes, or null when it selects no byte. */
export function clampRange (range: ByteRange | undefined, size: number): { start: number, end: number } | null {
  if (range === undefined) return size === 0 ? null : { start: 0, end: size - 1 }
  const { start, end } = range
  if (!Number.isSafeInteger(start) || start < 0 || (end !== undefined && (!Number.isSafeInteger(end) || end < start))) {
    throw new RangeError('A byte range needs whole offsets with 0 <= start <= end')
  }
  if (start >= size) return null
  return { start, end: Math.min(end ?? size - 1, size - 1) }
}

/** The body as Buffers, whatever it was given as. */
export async function * bodyChunks (body: Buffer | Readable): AsyncGenerator<Buffer> {
  if (Buffer.isBuffer(body)) {
    yield body
    return
  }
  for await (const chunk of body) yield typeof chunk === 'string' ? Buffer.from(chunk) : chunk as Buffer
}

/** A pass-through that hashes and counts what flows, for engines to report an ObjectInfo without a second read. */
export function digesting (body: Buffer | Readable): { chunks: AsyncGenerator<Buffer>, result: () => ObjectInfo } {
  const hash = createHash('sha256')
  let size = 0
  async function * chunks (): AsyncGenerator<Buffer> {
    for await (const chunk of bodyChunks(body)) {
      hash.update(chunk)
      size += chunk.length
      yield chunk
    }
  }
  return { chunks: chunks(), result: () => ({ size, sha256: hash.digest('hex') }) }
}

export const emptyStream = (): Readable => Readable.from([], { objectMode: false })
