import { createHash } from 'node:crypto'
import { Readable } from 'node:stream'
import { AppError, notFound } from '../errors.js'

/**
 * The FileStore port (DESIGN §3): flat objects addressed by keys that the
 * services build from validated ids, never from user text, e.g.
 * `files/<projectId>/<fileId>` or `uploads/<sessionId>/<chunkIndex>`.
 * Engines: local disk under DATA_DIR (embedded default) and GridFS (MongoDB),
 * held to the same answers by test/services/files/conformance.
 *
 * Every write is atomic: a reader sees the old object or the whole new one,
 * and a failed or crashed write leaves no visible object behind.
 */

/** Inclusive byte offsets, as in `fs.createReadStream`. `end` omitted: to the end of the object. */
export interface ByteRange { start: number, end?: number }

/** What a write or a concatenation produced. */
export interface ObjectInfo { size: number, sha256: string }

export type FileStoreEngineName = 'local' | 'gridfs'

export interface FileStore {
  readonly engine: FileStoreEngineName
  /** Creates or replaces the object atomically and returns its size and SHA-256 (hex). */
  write (key: string, body: Buffer | Readable): Promise<ObjectInfo>
  /**
   * A stream of the object's bytes, or of a range of them: a range running
   * past the end stops at the end, one starting at or past it is empty.
   * Throws APP_FILE_NOT_FOUND (404) when there is no such object.
   */
  read (key: string, range?: ByteRange): Promise<Readable>
  stat (key: string): Promise<{ size: number } | null>
  /** Idempotent: deleting a missing object is not an error. */
  delete (key: string): Promise<void>
  /** Deletes the object named `prefix` and every object under `prefix/` (whole segments: `a/b` never touches `a/bc`). */
  deletePrefix (prefix: string): Promise<void>
  /** Writes the sources one after another into `target` in one streaming pass; a missing source fails the whole write. */
  concat (target: string, sources: readonly string[]): Promise<ObjectInfo>
}

const KEY = /^[A-Za-z0-9_-]+(?:\/[A-Za-z0-9_-]+)*$/
export const MAX_KEY_LENGTH = 512

/** Keys only ever hold these characters, so no key can climb out of its root or name a temp file. */
export function isValidKey (key: unknown): key is string {
  return typeof key === 'string' && key.length <= MAX_KEY_LENGTH && KEY.test(key)
}

export function assertKey (key: unknown): asserts key is string {
  if (!isValidKey(key)) {
    throw new AppError('APP_INVALID_FILE_KEY', 400, 'File keys are segments of letters, digits, _ or - separated by /')
  }
}

/** One segment of a key, e.g. an id that goes into one. */
export function isValidKeySegment (segment: unknown): segment is string {
  return typeof segment === 'string' && segment.length <= 128 && /^[A-Za-z0-9_-]+$/.test(segment)
}

export function fileNotFound (key: string): AppError {
  return notFound('APP_FILE_NOT_FOUND', 'File not found', { key })
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

/** The named objects one after another as one stream; each is opened only when the previous one is done. */
export function joinObjects (store: Pick<FileStore, 'read'>, keys: readonly string[]): Readable {
  for (const key of keys) assertKey(key)
  async function * joined (): AsyncGenerator<Buffer> {
    for (const key of keys) yield * bodyChunks(await store.read(key))
  }
  return Readable.from(joined(), { objectMode: false })
}

export const emptyStream = (): Readable => Readable.from([], { objectMode: false })
