import { createHash } from 'node:crypto'
import { Readable } from 'node:stream'
import { newId as defaultNewId, type IdGenerator } from '../platform/ids.js'
import type { Filter, Store, StoreCollection } from '../store/types.js'
import { retryUpsertRace } from '../platform/upsert-race.js'
import type { ChunkStore } from './gridfs-chunks.js'
import {
  assertKey, assertOffset, clampRange, digesting, emptyStream, fileNotFound,
  type ByteRange, type FileStore, type ListedObject, type ObjectInfo
} from './file-store.js'

/**
 * The MongoDB engine: GridFS on the Store's database, so every API node sees
 * the same files. Files documents go through the Store port and chunks through
 * a ChunkStore, so the logic below runs unchanged on the embedded store in
 * tests. Each write is a new files document, `pending` until its last chunk is
 * in, then made visible by one update that gives it a version from the
 * bucket's counter: the highest version of a key is the object, whatever the
 * nodes' clocks say. A replaced or deleted version is only `retired`: a reader
 * that looked it up keeps reading it by id, and the sweep (a recurring job)
 * removes its chunks once the grace period has passed. Staged parts are files
 * documents of their own; sealing them writes one document listing them, no
 * byte is copied.
 */
export const GRIDFS_BUCKET = 'plinth_files'
/** The job type whose handler calls `sweep()`. */
export const GRIDFS_SWEEP_JOB = 'files.sweep'
const DEFAULT_CHUNK_SIZE = 255 * 1024
// A range read asks for about this many bytes of chunks at a time: one short query, no cursor held open between them.
const READ_BATCH_BYTES = 2 * 1024 * 1024
const DEFAULT_GRACE_MS = 60 * 60_000
const DEFAULT_PENDING_MS = 24 * 60 * 60_000
const SWEEP_BATCH = 200
const ORPHAN_SCAN_FILES = 1000

type FileState = 'pending' | 'live' | 'staged' | 'retired'
/** A run of chunks: those of the files document `id`. */
interface Segment { id: string, length: number, chunkSize: number }

/** GridFS's files document, plus the state this engine keeps. */
export type GridFsFileDoc = {
  filename: string
  length: number
  chunkSize: number
  uploadDate: Date
  state: FileState
  /** From the bucket's counter when the document became visible; null while pending. */
  version: number | null
  /** When the state last changed, by the Store's clock: what the sweep measures age by. */
  since: Date
  /** A staged part: where it starts in the bytes staged under `filename`. */
  offset?: number
  /** A sealed object: the staged parts whose chunks hold its bytes, in order; it has no chunks of its own. */
  parts?: Segment[]
}
type Counter = { value?: number, after?: string | null }

/** The rest of a generator whose first result was taken already. */
async function * continued (first: IteratorResult<Buffer>, rest: AsyncGenerator<Buffer>): AsyncGenerator<Buffer> {
  if (first.done === true) return
  yield first.value
  yield * rest
}

/** A plain object is one segment, its own chunks; a sealed one is its parts'. */
function segmentsOf (file: GridFsFileDoc & { _id: string }): Segment[] {
  return file.parts ?? [{ id: file._id, length: file.length, chunkSize: file.chunkSize }]
}

export interface GridFsOptions {
  bucketName?: string
  newId?: IdGenerator
  chunkSize?: number
  /** How long a replaced or deleted version stays readable for those already reading it. */
  graceMs?: number
  /** A write still pending after this long belongs to a writer that died. */
  pendingMs?: number
}

export class GridFsFileStore implements FileStore {
  readonly engine = 'gridfs' as const
  readonly files: StoreCollection<GridFsFileDoc>
  private readonly counters: StoreCollection<Counter>
  private readonly newId: IdGenerator
  private readonly chunkSize: number
  private readonly graceMs: number
  private readonly pendingMs: number

  constructor (private readonly store: Store, readonly chunks: ChunkStore, options: GridFsOptions = {}) {
    const bucketName = options.bucketName ?? GRIDFS_BUCKET
    this.files = store.collection<GridFsFileDoc>(`${bucketName}.files`)
    this.counters = store.collection<Counter>(`${bucketName}.counters`)
    this.newId = options.newId ?? defaultNewId
    this.chunkSize = options.chunkSize ?? DEFAULT_CHUNK_SIZE
    this.graceMs = options.graceMs ?? DEFAULT_GRACE_MS
    this.pendingMs = options.pendingMs ?? DEFAULT_PENDING_MS
  }

  async init (): Promise<void> {
    await this.chunks.init()
    await this.files.createIndex({ filename: 1, state: 1, version: -1 })
    await this.files.createIndex({ state: 1, _id: 1, since: 1 })
    await this.files.createIndex({ 'parts.id': 1 })
  }

  async write (key: string, body: Buffer | Readable): Promise<ObjectInfo> {
    assertKey(key)
    const id = await this.begin(key)
    let info: ObjectInfo
    try {
      info = await this.writeChunks(id, body)
    } catch (error) {
      await this.discard([id]).catch(() => {})
      throw error
    }
    await this.publish(id, { length: info.size }, { filename: key, state: 'live' })
    return info
  }

  async read (key: string, range?: ByteRange): Promise<Readable> {
    const file = await this.newest(key)
    if (file === null) throw fileNotFound(key)
    const bounds = clampRange(range, file.length)
    if (bounds === null) return emptyStream()
    // Pinned to this document: a replace or delete racing the read retires it, and its chunks outlive the read.
    const bytes = this.bytes(key, segmentsOf(file), bounds.start, bounds.end)
    // The first chunk is read before the stream is handed over (a query of its own, so a reader still reads the
    // rest as it goes), and a store that does not answer fails the request (a 503 with Retry-After) rather than a
    // response already under way.
    const first = await bytes.next()
    return Readable.from(continued(first, bytes), { objectMode: false })
  }

  async stat (key: string): Promise<{ size: number } | null> {
    const file = await this.newest(key)
    return file === null ? null : { size: file.length }
  }

  async delete (key: string): Promise<void> {
    assertKey(key)
    await this.retire({ filename: key, state: 'live' })
  }

  async deletePrefix (prefix: string): Promise<void> {
    assertKey(prefix)
    // '0' follows '/' in code-point order: this range is every key under prefix/, and an index serves it.
    await this.retire({
      $or: [{ filename: prefix }, { filename: { $gte: `${prefix}/`, $lt: `${prefix}0` } }],
      state: { $in: ['live', 'staged'] }
    })
  }

  async * list (prefix: string): AsyncGenerator<ListedObject> {
    assertKey(prefix)
    const itself = await this.newest(prefix)
    if (itself !== null) yield { key: prefix, writtenAt: itself.uploadDate }
    // Pages in filename order, each key's newest version first: a key with two live versions (a publish
    // not yet retiring the other) is listed once, with the time of the version readers get.
    // No key is `prefix/` itself, so every key under it sorts after that.
    let after = `${prefix}/`
    for (;;) {
      const page = await this.files.find(
        { filename: { $gt: after, $lt: `${prefix}0` }, state: 'live' },
        { sort: { filename: 1, version: -1 }, limit: SWEEP_BATCH, projection: { filename: 1, uploadDate: 1 } }
      ).toArray()
      for (const [i, file] of page.entries()) {
        if (i === 0 || page[i - 1].filename !== file.filename) yield { key: file.filename, writtenAt: file.uploadDate }
      }
      if (page.length < SWEEP_BATCH) return
      after = page[page.length - 1].filename
    }
  }

  async writePart (key: string, offset: number, body: Buffer): Promise<void> {
    assertKey(key)
    assertOffset(offset)
    const id = await this.begin(key, offset)
    try {
      await this.writeChunks(id, body)
    } catch (error) {
      await this.discard([id]).catch(() => {})
      throw error
    }
    await this.publish(id, { length: body.length }, { filename: key, state: 'staged', offset })
  }

  /** One new files document listing the newest part at each offset; the parts must leave no gap. */
  async seal (key: string, target: string, sha256?: string): Promise<ObjectInfo> {
    assertKey(key)
    assertKey(target)
    const staged = await this.files.find({ filename: key, state: 'staged' }, { sort: { version: -1 } }).toArray()
    const newestAt = new Map<number, GridFsFileDoc & { _id: string }>()
    for (const part of staged) if (!newestAt.has(part.offset ?? 0)) newestAt.set(part.offset ?? 0, part)
    const parts: Segment[] = []
    let length = 0
    for (const [offset, part] of [...newestAt.entries()].sort(([a], [b]) => a - b)) {
      if (offset !== length) throw new Error(`The parts staged under ${key} leave a gap at byte ${length}`)
      parts.push({ id: part._id, length: part.length, chunkSize: part.chunkSize })
      length += part.length
    }
    const digest = sha256 ?? await this.hash(target, parts, length)
    const id = await this.begin(target, undefined, parts)
    await this.publish(id, { length }, { filename: target, state: 'live' })
    return { size: length, sha256: digest }
  }

  /**
   * Removes what no reader can need any more: writes pending past
   * `pendingMs` (their writer died), versions retired past the grace period
   * and not part of a sealed object, and a page of chunks whose files
   * document is gone (the walk resumes where the last sweep stopped).
   */
  async sweep (): Promise<{ removed: number, orphaned: number }> {
    const now = (await this.now()).getTime()
    let removed = await this.sweepState('pending', new Date(now - this.pendingMs))
    removed += await this.sweepState('retired', new Date(now - this.graceMs))
    return { removed, orphaned: await this.sweepOrphans() }
  }

  private async now (): Promise<Date> {
    return await this.store.extensions.now()
  }

  private async newest (key: string): Promise<(GridFsFileDoc & { _id: string }) | null> {
    assertKey(key)
    return await this.files.findOne({ filename: key, state: 'live' }, { sort: { version: -1 } })
  }

  /** The files document first, so the sweep knows every chunk's owner; invisible until published. */
  private async begin (filename: string, offset?: number, parts?: Segment[]): Promise<string> {
    const now = await this.now()
    const id = this.newId()
    await this.files.insertOne({
      _id: id,
      filename,
      length: 0,
      chunkSize: this.chunkSize,
      uploadDate: now,
      state: 'pending',
      version: null,
      since: now,
      ...(offset === undefined ? {} : { offset }),
      ...(parts === undefined ? {} : { parts })
    })
    return id
  }

  /** Cuts the body into chunks of `chunkSize`, each stored before the next is cut. */
  private async writeChunks (id: string, body: Buffer | Readable): Promise<ObjectInfo> {
    const digest = digesting(body)
    let held: Buffer[] = []
    let heldBytes = 0
    let n = 0
    for await (const piece of digest.chunks) {
      for (let at = 0; at < piece.length;) {
        const take = Math.min(piece.length - at, this.chunkSize - heldBytes)
        held.push(piece.subarray(at, at + take))
        heldBytes += take
        at += take
        if (heldBytes === this.chunkSize) {
          await this.chunks.insert(id, n++, Buffer.concat(held))
          held = []
          heldBytes = 0
        }
      }
    }
    if (heldBytes > 0) await this.chunks.insert(id, n, Buffer.concat(held))
    return digest.result()
  }

  /** Makes a pending document visible with one update, then retires what it replaces. */
  private async publish (id: string, changes: { length: number }, as: { filename: string, state: 'live' | 'staged', offset?: number }): Promise<void> {
    const version = await this.nextVersion()
    const now = await this.now()
    const made = await this.files.updateOne({ _id: id, state: 'pending' }, { $set: { ...changes, state: as.state, version, uploadDate: now, since: now } })
    if (made.matchedCount === 0) {
      await this.discard([id]).catch(() => {})
      throw new Error(`The write of ${as.filename} outlived its pending time and was swept`)
    }
    // Every writer retires all but the newest after publishing, so whichever publishes last leaves exactly one.
    const same: Filter = { filename: as.filename, state: as.state, ...(as.offset === undefined ? {} : { offset: as.offset }) }
    const versions = await this.files.find(same, { sort: { version: -1 }, projection: { _id: 1 } }).toArray()
    if (versions.length > 1) await this.retire({ ...same, _id: { $in: versions.slice(1).map((file) => file._id) } }, now)
  }

  private async nextVersion (): Promise<number> {
    const counter = await retryUpsertRace(async () => await this.counters.findOneAndUpdate(
      { _id: 'version' }, { $inc: { value: 1 } }, { upsert: true, returnDocument: 'after' }
    ))
    if (typeof counter?.value !== 'number') throw new Error('The version counter returned no value')
    return counter.value
  }

  private async retire (filter: Filter, now?: Date): Promise<void> {
    await this.files.updateMany(filter, { $set: { state: 'retired', since: now ?? await this.now() } })
  }

  /** Chunks first: a files document is never gone while its chunks remain, so no chunk loses its owner. */
  private async discard (ids: string[]): Promise<void> {
    await this.chunks.deleteFiles(ids)
    await this.files.deleteMany({ _id: { $in: ids } })
  }

  private async * bytes (filename: string, segments: Segment[], start: number, end: number): AsyncGenerator<Buffer> {
    let segmentStart = 0
    let opening = true
    for (const segment of segments) {
      const segmentEnd = segmentStart + segment.length - 1
      if (segment.length > 0 && segmentEnd >= start && segmentStart <= end) {
        yield * this.segmentBytes(filename, segment, Math.max(start, segmentStart) - segmentStart, Math.min(end, segmentEnd) - segmentStart, opening)
        opening = false
      }
      segmentStart += segment.length
    }
  }

  /**
   * Bytes `from`..`to` of one segment, read a bounded run of chunks at a
   * time (the read's opening query a single chunk); a missing chunk fails the stream.
   */
  private async * segmentBytes (filename: string, segment: Segment, from: number, to: number, opening: boolean): AsyncGenerator<Buffer> {
    const { chunkSize } = segment
    const first = Math.floor(from / chunkSize)
    const last = Math.floor(to / chunkSize)
    const finalChunk = Math.floor((segment.length - 1) / chunkSize)
    const perQuery = Math.max(1, Math.floor(READ_BATCH_BYTES / chunkSize))
    for (let n = first, batch = opening ? 1 : perQuery; n <= last; n += batch, batch = perQuery) {
      const upTo = Math.min(last, n + batch - 1)
      const found = await this.chunks.range(segment.id, n, upTo)
      for (let i = n; i <= upTo; i++) {
        const chunk = found[i - n]
        const size = i === finalChunk ? segment.length - i * chunkSize : chunkSize
        if (chunk?.n !== i || chunk.data.length !== size) throw new Error(`Chunk ${i} of ${filename} is missing: the version was removed while being read`)
        yield chunk.data.subarray(i === first ? from - i * chunkSize : 0, i === last ? to - i * chunkSize + 1 : size)
      }
    }
  }

  private async hash (filename: string, segments: Segment[], length: number): Promise<string> {
    const hash = createHash('sha256')
    if (length > 0) for await (const chunk of this.bytes(filename, segments, 0, length - 1)) hash.update(chunk)
    return hash.digest('hex')
  }

  private async sweepState (state: 'pending' | 'retired', before: Date): Promise<number> {
    let removed = 0
    let after = ''
    for (;;) {
      const due = await this.files.find({ state, since: { $lt: before }, _id: { $gt: after } }, { sort: { _id: 1 }, limit: SWEEP_BATCH, projection: { _id: 1 } }).toArray()
      const free: string[] = []
      for (const { _id } of due) {
        // A sealed object reads its parts' chunks: a part goes only after every object listing it has gone.
        if (state === 'pending' || await this.files.findOne({ 'parts.id': _id }, { projection: { _id: 1 } }) === null) free.push(_id)
      }
      await this.discard(free)
      removed += free.length
      if (due.length < SWEEP_BATCH) return removed
      after = due[due.length - 1]._id
    }
  }

  private async sweepOrphans (): Promise<number> {
    const cursor = await this.counters.findOne({ _id: 'orphan-scan' })
    let after = cursor?.after ?? null
    const seen: string[] = []
    for (let id = await this.chunks.nextFilesId(after); id !== null && seen.length < ORPHAN_SCAN_FILES; id = await this.chunks.nextFilesId(id)) seen.push(id)
    // Seen fewer than a page: the walk reached the end and starts over next time.
    after = seen.length < ORPHAN_SCAN_FILES ? null : seen[seen.length - 1]
    const owned = new Set((await this.files.find({ _id: { $in: seen } }, { projection: { _id: 1 } }).toArray()).map((file) => file._id))
    const orphans = seen.filter((id) => !owned.has(id))
    await this.chunks.deleteFiles(orphans)
    await retryUpsertRace(async () => await this.counters.updateOne({ _id: 'orphan-scan' }, { $set: { after } }, { upsert: true }))
    return orphans.length
  }
}
