import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { Binary } from 'mongodb'
import { chunkBytes, type ChunkStore } from '../../../services/files/gridfs-chunks.js'
import { GridFsFileStore, type GridFsOptions } from '../../../services/files/gridfs-file-store.js'
import { newId } from '../../../services/platform/ids.js'
import { mongoDatabase } from '../../../services/store/mongodb.js'
import { openSqliteStore } from '../../../services/store/sqlite/index.js'
import { collect, failingStream, fileStoreConformance, sha256, streamOf } from './conformance.js'
import { gridFsOnEmbedded, gridFsOnMongo, mongoUrl, type GridFsHarness } from './engines.js'

const GRACE = 60_000
const PENDING = 120_000
const options: GridFsOptions = { graceMs: GRACE, pendingMs: PENDING }

t.test('mongoDatabase is null for the embedded engine, so the app picks GridFS only with MongoDB', async (t) => {
  const embedded = openSqliteStore({ file: ':memory:' })
  t.equal(mongoDatabase(embedded), null)
  await embedded.close()
})

t.test('chunk bytes come back from the driver\'s Binary without a copy', async (t) => {
  const data = randomBytes(1000)
  const binary = new Binary(data)
  t.ok(chunkBytes(binary).equals(data))
  t.equal(chunkBytes(data), data, 'a promoted Buffer is used as is')
  const view = new Uint8Array(data.buffer, data.byteOffset + 10, 20)
  t.ok(chunkBytes(view).equals(data.subarray(10, 30)), 'a Uint8Array view keeps its window')
  const grown = new Binary(Buffer.alloc(0))
  grown.write(Buffer.from('abc'), 0)
  t.equal(chunkBytes(grown).toString(), 'abc', 'only the written part of a Binary\'s buffer')
})

/** The same store seen by another engine instance (another node) whose chunk calls go through `wrap`. */
function otherNode (h: GridFsHarness, wrap: (inner: ChunkStore) => ChunkStore): GridFsFileStore {
  return new GridFsFileStore(h.store, wrap(h.chunks), options)
}

function counting (inner: ChunkStore): ChunkStore & { inserts: number, ranges: Array<[number, number]> } {
  const counted = Object.assign(Object.create(inner) as ChunkStore, { inserts: 0, ranges: [] as Array<[number, number]> })
  counted.insert = async (id, n, data) => { counted.inserts++; await inner.insert(id, n, data) }
  counted.range = async (id, from, to) => { counted.ranges.push([from, to]); return await inner.range(id, from, to) }
  return counted
}

async function gridFsCases (t: Test, make: (t: Test) => Promise<GridFsHarness>): Promise<void> {
  await fileStoreConformance(t, async () => (await make(t)).files)

  t.test('the newest version is the last one published, not the one with the latest clock', async (t) => {
    const h = await make(t)
    const key = `gridfs/${newId()}`
    await h.files.write(key, randomBytes(300_000))
    h.clock?.advance(-24 * 60 * 60_000)
    await h.files.write(key, Buffer.from('second, written by a node whose clock is a day behind'))
    t.match((await collect(await h.files.read(key))).toString(), /^second/)
    t.equal(await h.files.files.countDocuments({ filename: key, state: 'live' }), 1, 'one live version')

    let release: () => void = () => {}
    const held = new Promise<void>((resolve) => { release = resolve })
    const slow = otherNode(h, (inner) => Object.assign(Object.create(inner) as ChunkStore, { insert: async (id: string, n: number, data: Buffer) => { await held; await inner.insert(id, n, data) } }))
    const started = slow.write(key, Buffer.from('slow node, published last'))
    await h.files.write(key, Buffer.from('fast node, published first'))
    release()
    await started
    t.equal((await collect(await h.files.read(key))).toString(), 'slow node, published last', 'a write that started first but finished last wins, as a rename would')
    t.equal(await h.files.files.countDocuments({ filename: key, state: 'live' }), 1)
  })

  t.test('a reader keeps the version it opened across a replace and a delete, until the grace period ends', async (t) => {
    const h = await make(t)
    const key = `gridfs/${newId()}`
    const old = randomBytes(600_000)
    await h.files.write(key, old)
    const first = await h.files.read(key)
    await h.files.write(key, Buffer.from('new'))
    const second = await h.files.read(key)
    await h.files.delete(key)
    t.equal(await h.files.stat(key), null, 'deleted for everyone who looks it up now')
    t.same(await h.files.sweep(), { removed: 0, orphaned: 0 }, 'within the grace period nothing goes')
    t.ok((await collect(first)).equals(old), 'the reader opened before the replace got the old bytes in full')
    t.equal((await collect(second)).toString(), 'new')

    await h.files.write(key, randomBytes(600_000))
    const late = await h.files.read(key)
    await h.files.delete(key)
    await h.wait(GRACE + 1)
    t.equal((await h.files.sweep()).removed, 3, 'three retired versions')
    await t.rejects(collect(late), /missing: the version was removed while being read/, 'a reader slower than the grace period fails, never gets a mix')
  })

  t.test('reads go a bounded run of chunks at a time', async (t) => {
    const h = await make(t)
    const key = `gridfs/${newId()}`
    const data = randomBytes(5 * 1024 * 1024 + 3)
    await h.files.write(key, streamOf(data, 1024 * 1024))
    const node = counting(h.chunks)
    const files = otherNode(h, () => node)
    t.ok((await collect(await files.read(key))).equals(data))
    t.same(node.ranges, [[0, 0], [1, 8], [9, 16], [17, 20]], '21 chunks of 255 KiB: the first read when the file is opened, the rest in queries of at most 2 MiB')
    node.ranges.length = 0
    const opened = await files.read(key, { start: 3 * 261_120 - 1, end: 12 * 261_120 })
    t.same(node.ranges, [[2, 2]], 'opening a read queries its first chunk, so a store that does not answer fails the open, not the stream')
    const reader = opened[Symbol.asyncIterator]()
    await reader.next()
    await reader.next()
    t.same(node.ranges, [[2, 2], [3, 10]], 'a paused reader holds nothing open: the next run is a new query')
    for (let next = await reader.next(); next.done !== true; next = await reader.next());
    t.same(node.ranges, [[2, 2], [3, 10], [11, 12]])
  })

  t.test('sealing writes no chunk: the object lists the staged parts, which outlive their deletion while it exists', async (t) => {
    const h = await make(t)
    const base = `gridfs/${newId()}`
    const parts = [randomBytes(300_000), randomBytes(300_000), randomBytes(1_000)]
    for (const [i, part] of parts.entries()) await h.files.writePart(`${base}/staged`, i * 300_000, part)
    const node = counting(h.chunks)
    const whole = Buffer.concat(parts)
    t.same(await otherNode(h, () => node).seal(`${base}/staged`, `${base}/object`), { size: whole.length, sha256: sha256(whole) })
    t.equal(node.inserts, 0, 'no byte copied')
    const chunks = await h.countChunks()
    t.equal(chunks, 5, 'two chunks for each 300 kB part, one for the last')

    await h.files.deletePrefix(`${base}/staged`)
    await h.wait(GRACE + 1)
    t.equal((await h.files.sweep()).removed, 0, 'the parts are retired but the object still reads them')
    t.ok((await collect(await h.files.read(`${base}/object`))).equals(whole))
    t.equal(await h.countChunks(), chunks)

    await h.files.delete(`${base}/object`)
    await h.wait(GRACE + 1)
    await h.files.sweep()
    await h.files.sweep()
    t.equal(await h.countChunks(), 0, 'once the object is gone, so are its parts\' chunks')
    t.equal(await h.files.files.countDocuments({ filename: { $in: [`${base}/staged`, `${base}/object`] } }), 0)
  })

  t.test('the sweep removes dead writes and chunks whose files document is gone', async (t) => {
    const h = await make(t)
    const before = await h.countChunks()
    const dead = newId()
    const now = await h.store.extensions.now()
    await h.files.files.insertOne({ _id: dead, filename: `gridfs/${newId()}`, length: 0, chunkSize: 261_120, uploadDate: now, state: 'pending', version: null, since: now })
    await h.chunks.insert(dead, 0, randomBytes(10))
    const ghost = newId()
    await h.chunks.insert(ghost, 0, randomBytes(10))
    await h.chunks.insert(ghost, 1, randomBytes(10))
    t.same(await h.files.sweep(), { removed: 0, orphaned: 1 }, 'chunks of no file go at once; a young pending write stays')
    await h.wait(PENDING + 1)
    t.same(await h.files.sweep(), { removed: 1, orphaned: 0 }, 'a write pending past its time is a dead writer\'s')
    t.equal(await h.countChunks(), before)

    await t.rejects(h.files.write(`gridfs/${newId()}`, failingStream(randomBytes(600_000))))
    t.equal(await h.countChunks(), before, 'a failed write removes its own chunks')
    t.equal(await h.files.files.countDocuments({ state: 'pending' }), 0)
  })
}

t.test('GridFS on the embedded store (the engine\'s logic; MongoChunks\' driver calls excepted)', async (t) => {
  await gridFsCases(t, async (t) => await gridFsOnEmbedded(t, options))
})

const url = mongoUrl()
if (url === null) {
  t.test('GridFS on MongoDB', { skip: 'MONGODB_URL is not set: the GridFS engine ran on the embedded store only' }, async () => {})
} else {
  t.test('GridFS on MongoDB', async (t) => { await gridFsCases(t, async (t) => await gridFsOnMongo(t, url, options)) })
}
