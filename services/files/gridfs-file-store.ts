import { Readable } from 'node:stream'
import { GridFSBucket, type Collection, type Db, type Filter as MongoFilter, type GridFSChunk, type GridFSFile, type ObjectId } from 'mongodb'
import {
  assertKey, assertOffset, bodyChunks, clampRange, digesting, emptyStream, fileNotFound,
  type ByteRange, type FileStore, type ObjectInfo
} from './file-store.js'

/**
 * The MongoDB engine: GridFS on the Store's own database, so every API node
 * sees the same files. The filename is the key. GridFS writes its
 * files document only after the last chunk, so an unfinished upload is never
 * visible; a replace writes a new version and then removes the older ones,
 * keeping only the newest, which also settles two concurrent writers.
 * Staged parts are files named `<key>/.part.<offset>`: no key holds a dot,
 * so no read can name one, and deletePrefix(key) takes them along.
 */
export const GRIDFS_BUCKET = 'plinth_files'
const DELETE_BATCH = 500

export class GridFsFileStore implements FileStore {
  readonly engine = 'gridfs' as const
  private readonly bucket: GridFSBucket
  private readonly files: Collection<GridFSFile>
  private readonly chunks: Collection<GridFSChunk>

  constructor (db: Db, options: { bucketName?: string } = {}) {
    const bucketName = options.bucketName ?? GRIDFS_BUCKET
    this.bucket = new GridFSBucket(db, { bucketName })
    this.files = db.collection<GridFSFile>(`${bucketName}.files`)
    this.chunks = db.collection<GridFSChunk>(`${bucketName}.chunks`)
  }

  /** Newest first; uploadDate is stamped when a version is complete. */
  private async versions (filter: MongoFilter<GridFSFile>): Promise<GridFSFile[]> {
    return await this.files.find(filter, { sort: { uploadDate: -1, _id: -1 } }).toArray()
  }

  private async newest (key: string): Promise<GridFSFile | null> {
    assertKey(key)
    return await this.files.findOne({ filename: key }, { sort: { uploadDate: -1, _id: -1 } })
  }

  /** Files document first, so a version disappears at once and only then loses its chunks. */
  private async remove (ids: ObjectId[]): Promise<void> {
    for (let i = 0; i < ids.length; i += DELETE_BATCH) {
      const batch = ids.slice(i, i + DELETE_BATCH)
      await this.files.deleteMany({ _id: { $in: batch } })
      await this.chunks.deleteMany({ files_id: { $in: batch } })
    }
  }

  async write (key: string, body: Buffer | Readable): Promise<ObjectInfo> {
    assertKey(key)
    return await this.writeFile(key, body)
  }

  /** Any filename, so staged parts can carry names no key can. */
  private async writeFile (filename: string, body: Buffer | Readable): Promise<ObjectInfo> {
    const digest = digesting(body)
    const upload = this.bucket.openUploadStream(filename)
    // Errors arrive through the callbacks below; an unheard 'error' event would crash the process.
    upload.on('error', () => {})
    const settled = (run: (done: (error?: Error | null) => void) => void): Promise<void> =>
      new Promise((resolve, reject) => { run((error) => { if (error == null) resolve(); else reject(error) }) })
    try {
      // One chunk at a time, each acknowledged before the next: when the body fails, no chunk insert is still in flight.
      for await (const chunk of digest.chunks) await settled((done) => upload.write(chunk, done))
      await settled((done) => upload.end(done))
    } catch (error) {
      // Chunks written so far have no files document, so nobody sees them; abort() removes them.
      await upload.abort().catch(() => {})
      throw error
    }
    const older = (await this.versions({ filename })).slice(1)
    await this.remove(older.map((version) => version._id))
    return digest.result()
  }

  async read (key: string, range?: ByteRange): Promise<Readable> {
    const file = await this.newest(key)
    if (file === null) throw fileNotFound(key)
    const bounds = clampRange(range, file.length)
    if (bounds === null) return emptyStream()
    if (range === undefined) return this.bucket.openDownloadStream(file._id)
    // GridFS's `end` is exclusive, ours inclusive.
    return this.bucket.openDownloadStream(file._id, { start: bounds.start, end: bounds.end + 1 })
  }

  async stat (key: string): Promise<{ size: number } | null> {
    const file = await this.newest(key)
    return file === null ? null : { size: file.length }
  }

  async delete (key: string): Promise<void> {
    assertKey(key)
    await this.remove((await this.versions({ filename: key })).map((version) => version._id))
  }

  async deletePrefix (prefix: string): Promise<void> {
    assertKey(prefix)
    // Key characters need no escaping in a regex, and an anchored prefix regex uses the filename index.
    const matching = await this.files.find(
      { $or: [{ filename: prefix }, { filename: { $regex: `^${prefix}/` } }] },
      { projection: { _id: 1 } }
    ).toArray()
    await this.remove(matching.map((file) => file._id))
  }

  async writePart (key: string, offset: number, body: Buffer): Promise<void> {
    assertKey(key)
    assertOffset(offset)
    await this.writeFile(`${key}/.part.${offset}`, body)
  }

  /** Joins the newest version of each part in offset order into the target; parts must leave no gap. */
  async seal (key: string, target: string): Promise<ObjectInfo> {
    assertKey(key)
    assertKey(target)
    const staged = await this.versions({ filename: { $regex: `^${key}/\\.part\\.[0-9]+$` } })
    const parts = new Map<number, GridFSFile>()
    for (const file of staged) {
      const offset = Number(file.filename.slice(file.filename.lastIndexOf('.') + 1))
      if (!parts.has(offset)) parts.set(offset, file)
    }
    const ordered = [...parts.entries()].sort(([a], [b]) => a - b)
    let end = 0
    for (const [offset, file] of ordered) {
      if (offset !== end) throw new Error(`The parts staged under ${key} leave a gap at byte ${end}`)
      end += file.length
    }
    const bucket = this.bucket
    async function * joined (): AsyncGenerator<Buffer> {
      for (const [, file] of ordered) yield * bodyChunks(bucket.openDownloadStream(file._id))
    }
    return await this.writeFile(target, Readable.from(joined(), { objectMode: false }))
  }
}
