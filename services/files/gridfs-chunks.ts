import { Binary, type Collection, type Db } from 'mongodb'
import { translate } from '../store/mongo/translate.js'

/**
 * Where the GridFS engine keeps its bytes: GridFS chunk documents
 * (`{ files_id, n, data }`, unique on files_id and n) in `<bucket>.chunks`.
 * Everything else the engine keeps (files documents, its version counter)
 * goes through the Store port; binary values are not Store values, so the
 * chunks have this port of their own. Reads take a bounded range of chunk
 * numbers and end: no cursor lives across a slow reader's pauses.
 */
export interface GridFsChunk { n: number, data: Buffer }

export interface ChunkStore {
  /** The unique (files_id, n) index GridFS prescribes; also what `range` and `nextFilesId` walk. */
  init (): Promise<void>
  insert (filesId: string, n: number, data: Buffer): Promise<void>
  /** Chunks `from`..`to` (inclusive) of one file, by n; missing ones are simply absent. */
  range (filesId: string, from: number, to: number): Promise<GridFsChunk[]>
  deleteFiles (filesIds: string[]): Promise<void>
  /** The smallest files_id above `after` (from the first when null) that has chunks, or null past the last. */
  nextFilesId (after: string | null): Promise<string | null>
}

type ChunkDocument = { files_id: string, n: number, data: Binary | Buffer | Uint8Array }

/** The bytes of a chunk as the driver hands them back (a BSON Binary unless promoted), without a copy. */
export function chunkBytes (data: ChunkDocument['data']): Buffer {
  if (Buffer.isBuffer(data)) return data
  const bytes = data instanceof Binary ? data.buffer.subarray(0, data.position) : data
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
}

/**
 * The chunks on MongoDB, through the driver: each call one short query or
 * write, its errors translated as the Store's are (an election is a 503 with
 * Retry-After, not a 500).
 */
export class MongoChunks implements ChunkStore {
  private readonly chunks: Collection<ChunkDocument>

  constructor (db: Db, bucketName: string) {
    this.chunks = db.collection<ChunkDocument>(`${bucketName}.chunks`)
  }

  async init (): Promise<void> {
    try {
      await this.chunks.createIndex({ files_id: 1, n: 1 }, { unique: true })
    } catch (error) { translate(error, this.chunks.collectionName) }
  }

  async insert (filesId: string, n: number, data: Buffer): Promise<void> {
    try {
      await this.chunks.insertOne({ files_id: filesId, n, data: new Binary(data) })
    } catch (error) { translate(error, this.chunks.collectionName) }
  }

  async range (filesId: string, from: number, to: number): Promise<GridFsChunk[]> {
    try {
      const found = await this.chunks.find({ files_id: filesId, n: { $gte: from, $lte: to } }, { sort: { n: 1 }, projection: { _id: 0, n: 1, data: 1 } }).toArray()
      return found.map((chunk) => ({ n: chunk.n, data: chunkBytes(chunk.data) }))
    } catch (error) { translate(error, this.chunks.collectionName, 'query') }
  }

  async deleteFiles (filesIds: string[]): Promise<void> {
    if (filesIds.length === 0) return
    try {
      await this.chunks.deleteMany({ files_id: { $in: filesIds } })
    } catch (error) { translate(error, this.chunks.collectionName, 'query') }
  }

  async nextFilesId (after: string | null): Promise<string | null> {
    try {
      const next = await this.chunks.findOne(after === null ? {} : { files_id: { $gt: after } }, { sort: { files_id: 1 }, projection: { _id: 0, files_id: 1 } })
      return next?.files_id ?? null
    } catch (error) { translate(error, this.chunks.collectionName, 'query') }
  }
}
