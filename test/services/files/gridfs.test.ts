import t from 'tap'
import { randomBytes } from 'node:crypto'
import { GRIDFS_BUCKET, GridFsFileStore } from '../../../services/files/gridfs-file-store.js'
import { newId } from '../../../services/ids.js'
import { mongoDatabase, openMongoStore } from '../../../services/store/mongodb.js'
import { openSqliteStore } from '../../../services/store/sqlite/index.js'
import { collect, failingStream, fileStoreConformance } from './conformance.js'

t.test('mongoDatabase is null for the embedded engine, so GridFS is chosen only with MongoDB', async (t) => {
  const embedded = openSqliteStore({ file: ':memory:' })
  t.equal(mongoDatabase(embedded), null)
  await embedded.close()
})

// The GridFS half of the conformance suite runs wherever MONGODB_URL points at a real server.
const url = process.env.MONGODB_URL
if (url === undefined || url.trim() === '') {
  t.test('GridFS conformance', { skip: 'MONGODB_URL is not set: only the local FileStore was checked' }, async () => {})
} else {
  // A database of its own per run, dropped afterwards; GridFS shares the Store's connection.
  const store = await openMongoStore({ url, db: `plinth_files_${newId()}` })
  const db = mongoDatabase(store)
  if (db === null) throw new Error('the MongoDB engine exposes its database')
  t.teardown(async () => {
    await db.dropDatabase()
    await store.close()
  })
  const files = new GridFsFileStore(db)
  const versions = async (key: string): Promise<number> => await db.collection(`${GRIDFS_BUCKET}.files`).countDocuments({ filename: key })
  const chunksOf = async (): Promise<number> => await db.collection(`${GRIDFS_BUCKET}.chunks`).countDocuments({})

  await fileStoreConformance(t, async () => files)

  t.test('a replace leaves exactly one version', async (t) => {
    const key = `gridfs/${newId()}`
    await files.write(key, randomBytes(300_000))
    await files.write(key, Buffer.from('new'))
    t.equal(await versions(key), 1)
    t.equal((await collect(await files.read(key))).toString(), 'new')
  })

  t.test('a failed write leaves no files document and no chunks', async (t) => {
    const key = `gridfs/${newId()}`
    const before = await chunksOf()
    await t.rejects(files.write(key, failingStream(randomBytes(600_000))))
    t.equal(await versions(key), 0)
    t.equal(await chunksOf(), before, 'the chunks written before the failure were removed')
  })

  t.test('delete and deletePrefix remove chunks too', async (t) => {
    const base = `gridfs/${newId()}`
    const before = await chunksOf()
    await files.write(`${base}/a`, randomBytes(300_000))
    await files.write(`${base}/a/b`, randomBytes(10))
    await files.write(`${base}/c`, randomBytes(10))
    await files.delete(`${base}/c`)
    await files.deletePrefix(`${base}/a`)
    t.equal(await chunksOf(), before)
  })
}
