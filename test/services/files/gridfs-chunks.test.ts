import t from 'tap'
import { Binary, type Db } from 'mongodb'
import { MongoChunks } from '../../../services/files/gridfs-chunks.js'

/**
 * What MongoChunks asks the driver, without a server: a collection that
 * records each call and answers like the server would (Binary chunk data).
 * The queries themselves run on MongoDB in gridfs.test.ts when MONGODB_URL is set.
 */
function recordingDb () {
  const calls: Array<[string, ...unknown[]]> = []
  const stored = [{ files_id: 'f1', n: 0, data: new Binary(Buffer.from('abc')) }, { files_id: 'f1', n: 1, data: new Binary(Buffer.from('de')) }]
  const collection = {
    createIndex: async (...args: unknown[]) => { calls.push(['createIndex', ...args]); return 'files_id_1_n_1' },
    insertOne: async (...args: unknown[]) => { calls.push(['insertOne', ...args]); return { acknowledged: true } },
    find: (...args: unknown[]) => { calls.push(['find', ...args]); return { toArray: async () => stored } },
    deleteMany: async (...args: unknown[]) => { calls.push(['deleteMany', ...args]); return { deletedCount: 2 } },
    findOne: async (...args: unknown[]) => { calls.push(['findOne', ...args]); return { files_id: 'f2' } }
  }
  const names: string[] = []
  const db = { collection: (name: string) => { names.push(name); return collection } } as unknown as Db
  return { db, calls, names }
}

t.test('MongoChunks: GridFS chunk documents, each read a bounded query by files_id and n', async (t) => {
  const { db, calls, names } = recordingDb()
  const chunks = new MongoChunks(db, 'plinth_files')
  t.same(names, ['plinth_files.chunks'])
  await chunks.init()
  t.same(calls.pop(), ['createIndex', { files_id: 1, n: 1 }, { unique: true }], 'the index GridFS prescribes')

  await chunks.insert('f1', 3, Buffer.from('xyz'))
  const [, inserted] = calls.pop() as [string, { files_id: string, n: number, data: Binary }]
  t.match(inserted, { files_id: 'f1', n: 3 })
  t.ok(inserted.data instanceof Binary && Buffer.from(inserted.data.buffer).equals(Buffer.from('xyz')), 'data stored as BSON binary')

  const got = await chunks.range('f1', 0, 7)
  t.same(calls.pop(), ['find', { files_id: 'f1', n: { $gte: 0, $lte: 7 } }, { sort: { n: 1 }, projection: { _id: 0, n: 1, data: 1 } }], 'one short query, exhausted by toArray')
  t.same(got.map((chunk) => [chunk.n, chunk.data.toString()]), [[0, 'abc'], [1, 'de']], 'Binary back to Buffers')

  await chunks.deleteFiles([])
  t.equal(calls.length, 0, 'nothing to delete asks nothing')
  await chunks.deleteFiles(['f1', 'f2'])
  t.same(calls.pop(), ['deleteMany', { files_id: { $in: ['f1', 'f2'] } }])

  t.equal(await chunks.nextFilesId('f1'), 'f2')
  t.same(calls.pop(), ['findOne', { files_id: { $gt: 'f1' } }, { sort: { files_id: 1 }, projection: { _id: 0, files_id: 1 } }], 'an index seek past the last one seen')
  await chunks.nextFilesId(null)
  t.same(calls.pop(), ['findOne', {}, { sort: { files_id: 1 }, projection: { _id: 0, files_id: 1 } }])
})
