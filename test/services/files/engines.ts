import { existsSync, readdirSync } from 'node:fs'
import { join } from 'node:path'
import type { Test } from 'tap'
import { ManualClock } from '../../../services/platform/clock.js'
import type { FileStore } from '../../../services/files/file-store.js'
import { MongoChunks, type ChunkStore, type GridFsChunk } from '../../../services/files/gridfs-chunks.js'
import { GRIDFS_BUCKET, GridFsFileStore, type GridFsOptions } from '../../../services/files/gridfs-file-store.js'
import { LocalFileStore } from '../../../services/files/local-file-store.js'
import { createIdGenerator, newId } from '../../../services/platform/ids.js'
import { mongoDatabase, openMongoStore } from '../../../services/store/mongodb.js'
import { openSqliteStore } from '../../../services/store/sqlite/index.js'
import type { Store, StoreCollection } from '../../../services/store/types.js'
import { tempDir } from '../../helper.js'

/**
 * The FileStore engines the files tests run on. MONGODB_URL set: GridFS on
 * that server (a database of its own, dropped after); otherwise local disk.
 * `gridFsOnEmbedded` runs the GridFS engine's own logic on the embedded
 * Store, with chunks kept as base64 text in a Store collection: only the
 * driver calls of MongoChunks are left out.
 */

export const mongoUrl = (): string | null => {
  const url = process.env.MONGODB_URL
  return url === undefined || url.trim() === '' ? null : url
}

/** Chunks in a Store collection, base64-encoded, the way MongoChunks keeps them in `<bucket>.chunks`. */
export class StoreChunks implements ChunkStore {
  readonly chunks: StoreCollection<{ files_id: string, n: number, data: string }>
  constructor (store: Store) { this.chunks = store.collection(`${GRIDFS_BUCKET}.chunks`) }

  async init (): Promise<void> { await this.chunks.createIndex({ files_id: 1, n: 1 }, { unique: true }) }

  async insert (filesId: string, n: number, data: Buffer): Promise<void> {
    await this.chunks.insertOne({ files_id: filesId, n, data: data.toString('base64') })
  }

  async range (filesId: string, from: number, to: number): Promise<GridFsChunk[]> {
    const found = await this.chunks.find({ files_id: filesId, n: { $gte: from, $lte: to } }, { sort: { n: 1 } }).toArray()
    return found.map((chunk) => ({ n: chunk.n, data: Buffer.from(chunk.data, 'base64') }))
  }

  async deleteFiles (filesIds: string[]): Promise<void> {
    if (filesIds.length > 0) await this.chunks.deleteMany({ files_id: { $in: filesIds } })
  }

  async nextFilesId (after: string | null): Promise<string | null> {
    const next = await this.chunks.findOne(after === null ? {} : { files_id: { $gt: after } }, { sort: { files_id: 1 } })
    return next?.files_id ?? null
  }
}

export interface GridFsHarness {
  files: GridFsFileStore
  store: Store
  chunks: ChunkStore
  countChunks: () => Promise<number>
  /** Lets `ms` pass on the Store's clock: the manual clock moves, a real server's needs a real wait. */
  wait: (ms: number) => Promise<void>
  clock: ManualClock | null
}

/** The GridFS engine on the embedded Store, its clock in the test's hands. */
export async function gridFsOnEmbedded (t: Test, options: GridFsOptions = {}): Promise<GridFsHarness> {
  const clock = new ManualClock()
  const ids = createIdGenerator(() => clock.nowMs())
  const store = openSqliteStore({ file: join(tempDir(t, 'plinth-gridfs-'), 'plinth.db'), newId: ids, clock })
  t.teardown(async () => { await store.close() })
  const chunks = new StoreChunks(store)
  const files = new GridFsFileStore(store, chunks, { newId: ids, ...options })
  await files.init()
  return { files, store, clock, chunks, countChunks: async () => await chunks.chunks.countDocuments({}), wait: async (ms) => { clock.advance(ms) } }
}

/** The GridFS engine on the MongoDB server at MONGODB_URL, in a database dropped when the test ends. */
export async function gridFsOnMongo (t: Test, url: string, options: GridFsOptions = {}): Promise<GridFsHarness> {
  const store = await openMongoStore({ url, db: `plinth_files_${newId()}` })
  const db = mongoDatabase(store)
  if (db === null) throw new Error('the MongoDB engine exposes its database')
  t.teardown(async () => {
    await db.dropDatabase()
    await store.close()
  })
  const chunks = new MongoChunks(db, GRIDFS_BUCKET)
  const files = new GridFsFileStore(store, chunks, options)
  await files.init()
  return {
    files,
    store,
    clock: null,
    chunks,
    countChunks: async () => await db.collection(`${GRIDFS_BUCKET}.chunks`).countDocuments({}),
    wait: async (ms) => { await new Promise((resolve) => setTimeout(resolve, ms)) }
  }
}

/**
 * The engine the environment names: GridFS on MONGODB_URL, else local disk
 * under a temp directory. PLINTH_TEST_FILES=gridfs-embedded runs the same
 * tests on the GridFS engine over the embedded store, without a server.
 */
export async function fileStoreFromEnv (t: Test): Promise<FileStore> {
  const url = mongoUrl()
  if (url !== null) return (await gridFsOnMongo(t, url)).files
  if (process.env.PLINTH_TEST_FILES === 'gridfs-embedded') return (await gridFsOnEmbedded(t)).files
  return new LocalFileStore(join(tempDir(t, 'plinth-files-'), 'files'))
}

/**
 * What a FileStore holds under `prefix` ('' for everything), whatever its
 * engine: object keys, keys with staged bytes, and what is neither (local
 * temp files, GridFS writes still pending), which a finished request must
 * not leave behind.
 */
export async function storedKeys (files: FileStore, prefix: string): Promise<{ objects: string[], staged: string[], other: string[] }> {
  if (files instanceof LocalFileStore) {
    const dir = join(files.root, prefix)
    const names = existsSync(dir)
      ? readdirSync(dir, { recursive: true, withFileTypes: true }).filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name).slice(files.root.length + 1))
      : []
    const withSuffix = (suffix: string): string[] => names.filter((name) => name.endsWith(suffix)).map((name) => name.slice(0, -suffix.length)).sort()
    return { objects: withSuffix('.obj'), staged: withSuffix('.part'), other: names.filter((name) => !/\.(obj|part)$/.test(name)).sort() }
  }
  if (files instanceof GridFsFileStore) {
    const under = prefix === '' ? {} : { $or: [{ filename: prefix }, { filename: { $gte: `${prefix}/`, $lt: `${prefix}0` } }] }
    const keys = async (state: string): Promise<string[]> => [...new Set((await files.files.find({ ...under, state }).toArray()).map((file) => file.filename))].sort()
    return { objects: await keys('live'), staged: await keys('staged'), other: await keys('pending') }
  }
  throw new Error(`no listing for the ${files.engine} engine`)
}
