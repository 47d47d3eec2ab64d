import t from 'tap'
import { Binary } from 'mongodb'
import { openMongoStore, mongoDatabase } from '../../../services/store/mongodb.js'
import { MongoChunks } from '../../../services/files/gridfs-chunks.js'
import {
  DuplicateKeyError, IndexConflictError, InvalidDocumentError, InvalidIndexError, InvalidUpdateError, QueryError, StoreUnavailableError
} from '../../../services/store/errors.js'
import type { Document, Store } from '../../../services/store/types.js'
import { newId } from '../../../services/platform/ids.js'
import { storeConformance } from './conformance.js'
import { timedStore } from '../../../services/store/timed.js'
import { MongoDouble } from '../../fixtures/mongo-double/server.js'

/**
 * The MongoDB engine against the wire-level test double (no MongoDB server
 * can run where the suite runs): the official driver connects, handshakes,
 * retries and runs transactions over real sockets, so the engine's code runs
 * end to end. The whole conformance suite runs here, then what only the
 * engine's own traffic shows: nothing reaches the server before the shared
 * validators pass, which writes run in a transaction, the time limit on every
 * filtered call, and the one error translation on every driver call
 * (failures injected with MongoDB's failCommand fail point).
 */
// The whole conformance suite over sockets, 10,000-document writes included: more than the default file timeout under c8 on a busy machine.
t.setTimeout(300_000)
const double = await new MongoDouble().start()
// A short server selection, so an outage is told within the test's time (the URL's options win over the engine's).
const store = await openMongoStore({ url: double.url('serverSelectionTimeoutMS=1500'), db: 'conf', queryTimeoutMs: 5000 })
t.teardown(async () => { await store.close(); await double.stop() })

await storeConformance(t, async () => store)

const failure = async (run: () => Promise<unknown>): Promise<unknown> => await (async () => await run())().then(() => null, (error: unknown) => error)
/** The commands sent while `run` ran, sessions' housekeeping left out. */
async function sent (run: () => Promise<unknown>): Promise<Array<{ name: string, command: Document }>> {
  const from = double.received.length
  await run()
  return double.received.slice(from).filter((entry) => entry.name !== 'endSessions')
}
const fresh = (s: Store = store) => s.collection(`engine_${newId()}`)

t.test('the engine validates before the server sees anything', async (t) => {
  const collection = fresh()
  const refused: Array<[string, () => Promise<unknown>, abstract new (...args: any[]) => Error]> = [
    ['a $-prefixed name', async () => await collection.insertOne({ a: { $where: 1 } }), InvalidDocumentError],
    ['a dotted name deep down', async () => await collection.insertMany([{ ok: 1 }, { list: [{ 'a.b': 1 }] }]), InvalidDocumentError],
    ['NaN', async () => await collection.insertOne({ n: Number.NaN }), InvalidDocumentError],
    ['Infinity in $set', async () => await collection.updateOne({ _id: 'x' }, { $set: { n: Infinity } }), InvalidDocumentError],
    ['a Buffer in $push', async () => await collection.updateMany({}, { $push: { files: Buffer.from('x') } }), InvalidDocumentError],
    ['a numeric _id from an upsert filter', async () => await collection.updateOne({ _id: 5 }, { $set: { a: 1 } }, { upsert: true }), InvalidDocumentError],
    ['a contradicting $setOnInsert._id', async () => await collection.updateOne({ _id: 'a' }, { $setOnInsert: { _id: 'b' } }, { upsert: true }), InvalidUpdateError],
    ['a pattern PCRE and RE2 read differently', async () => await collection.find({ a: { $regex: 'x\\Z' } }).toArray(), QueryError],
    ['a negative limit (one batch, to MongoDB)', async () => await collection.find({}, { limit: -1 }).toArray(), QueryError],
    ['an index key the embedded engine cannot build', async () => await collection.createIndex({ 'a.0': 1 }), InvalidIndexError],
    ['dropping _id_', async () => await collection.dropIndex('_id_'), InvalidIndexError]
  ]
  const commands = await sent(async () => {
    for (const [name, run, type] of refused) t.ok(await failure(run) instanceof type, `${name}: ${type.name}`)
  })
  t.same(commands, [], 'the server was never sent a command')
})

t.test('multi-document writes run in a transaction, counted first; single-document writes do not', async (t) => {
  const collection = fresh()
  const commands = await sent(async () => {
    t.same(await collection.insertMany([{ a: 1 }, { _id: 'b', a: 2 }]), { acknowledged: true, insertedCount: 2, insertedIds: { 0: (await collection.findOne({ a: 1 }))?._id, 1: 'b' } })
    t.same(await collection.updateMany({ a: { $gt: 0 } }, { $inc: { a: 1 } }), { acknowledged: true, matchedCount: 2, modifiedCount: 2, upsertedCount: 0, upsertedId: null })
    t.same(await collection.deleteMany({ a: 2 }), { acknowledged: true, deletedCount: 1 })
    await collection.updateOne({ _id: 'b' }, { $set: { a: 3 } })
  })
  const shape = commands.map(({ name, command }) => `${name}${command.autocommit === false ? ' (in a transaction)' : ''}`)
  t.same(shape, [
    'insert (in a transaction)', 'commitTransaction (in a transaction)', 'find',
    'aggregate (in a transaction)', 'update (in a transaction)', 'commitTransaction (in a transaction)',
    'aggregate (in a transaction)', 'delete (in a transaction)', 'commitTransaction (in a transaction)',
    'update'
  ], 'each multi-document write counts what it would touch and writes inside one transaction')
  const ids = commands.filter(({ name }) => name === 'insert')[0].command.documents as Document[]
  t.type(ids[0]._id, 'string', 'an insert gets our id, not an ObjectId')
})

t.test('every call that evaluates a filter carries the server-side time limit', async (t) => {
  const collection = fresh()
  await collection.insertOne({ _id: 'x', a: 1 })
  const commands = await sent(async () => {
    await collection.find({ a: { $regex: '(a+)+$' } }).toArray()
    await collection.findOne({ a: 1 })
    await collection.countDocuments({ a: 1 })
    await collection.updateOne({ a: 1 }, { $set: { b: 1 } })
    await collection.updateMany({ a: 1 }, { $set: { b: 2 } })
    await collection.findOneAndUpdate({ a: 1 }, { $set: { b: 3 } })
    await collection.findOneAndDelete({ a: 2 })
    await collection.deleteOne({ a: 2 })
    await collection.deleteMany({ a: 2 })
  })
  const filtered = commands.filter(({ name }) => !['commitTransaction'].includes(name))
  t.ok(filtered.length >= 9)
  for (const { name, command } of filtered) t.equal(command.maxTimeMS, 5000, `${name} is limited`)
})

t.test('contract edges are settled before the server', async (t) => {
  const collection = fresh()
  const commands = await sent(async () => {
    t.same(await collection.insertMany([]), { acknowledged: true, insertedCount: 0, insertedIds: {} }, 'an empty insertMany is acknowledged')
    t.equal(await collection.drop(), false, 'dropping a missing collection is no error')
  })
  t.same(commands.map(({ name }) => name), ['listCollections'], 'no empty insert (which the server refuses) and no drop')
  await collection.insertMany([{ n: 1 }, { n: 2 }, { n: 3 }])
  const counts = await sent(async () => {
    t.equal(await collection.countDocuments({}, { limit: 0 }), 3)
    t.equal(await collection.countDocuments({}, { limit: 2, skip: 1 }), 2)
  })
  t.same(counts.map(({ command }) => (command.pipeline as Document[]).map((stage) => Object.keys(stage)[0])), [['$match', '$group'], ['$match', '$skip', '$limit', '$group']], 'limit 0 sends no $limit (the count pipeline refuses $limit: 0)')
  const upsert = await sent(async () => { await collection.updateOne({ n: 9 }, { $set: { a: 1 } }, { upsert: true }) })
  const statement = (upsert[0].command.updates as Document[])[0]
  t.type(((statement.u as Document).$setOnInsert as Document)._id, 'string', 'an upsert gets our id, not an ObjectId')
})

t.test('index rules are decided before the server', async (t) => {
  const collection = fresh()
  await collection.createIndex({ a: 1 }, { unique: true })
  const commands = await sent(async () => {
    t.equal(await collection.createIndex({ a: 1 }, { unique: true }), 'a_1', 'the same index again is a no-op')
    t.ok(await failure(async () => await collection.createIndex({ b: 1 }, { name: 'a_1' })) instanceof IndexConflictError, 'a name taken by another key')
    t.ok(await failure(async () => await collection.createIndex({ a: 1 }, { name: 'other' })) instanceof IndexConflictError, 'a key taken under another name')
  })
  t.same(commands.map(({ name }) => name), ['listIndexes', 'listIndexes', 'listIndexes'], 'only the indexes there were read')
})

t.test('transient failures are 503 with Retry-After, after the driver\'s own retry', async (t) => {
  const collection = fresh()
  await collection.insertOne({ _id: 'k', n: 1 })
  double.failCommand({ mode: { times: 1 }, data: { failCommands: ['insert'], errorCode: 10107 } })
  t.same(await collection.insertOne({ _id: 'retried' }), { acknowledged: true, insertedId: 'retried' }, 'one NotWritablePrimary is retried by the driver')
  const cases: Array<[string, string[], { errorCode?: number, closeConnection?: boolean, errorLabels?: string[] }, () => Promise<unknown>]> = [
    ['NotWritablePrimary on a write', ['insert'], { errorCode: 10107 }, async () => await collection.insertOne({ n: 2 })],
    ['a dropped connection on a read', ['find'], { closeConnection: true }, async () => await collection.findOne({ _id: 'k' })],
    ['a stepping-down primary on a count', ['aggregate'], { errorCode: 11602 }, async () => await collection.countDocuments({})],
    ['a transaction that cannot commit', ['commitTransaction'], { errorCode: 112, errorLabels: ['TransientTransactionError'] }, async () => await collection.deleteMany({ n: 5 })],
    ['a cursor\'s next batch', ['getMore'], { closeConnection: true }, async () => { await collection.insertMany(Array.from({ length: 150 }, (_, i) => ({ i }))); return await collection.find({ i: { $gte: 0 } }).toArray() }],
    ['the server\'s time (hello)', ['hello'], { errorCode: 10107 }, async () => await store.extensions.now()],
    ['a ping', ['ping'], { closeConnection: true }, async () => { await store.ping() }],
    ['listing collections', ['listCollections'], { errorCode: 91 }, async () => await store.listCollections()]
  ]
  for (const [name, commands, data, run] of cases) {
    double.failCommand({ mode: 'alwaysOn', data: { failCommands: commands, ...data } })
    const error = await failure(run) as StoreUnavailableError
    double.failCommand({ mode: 'off', data: { failCommands: [] } })
    t.same([error instanceof StoreUnavailableError, error?.status, error?.details], [true, 503, { retryAfterSeconds: 5 }], `${name}: 503 with Retry-After`)
  }
  double.failCommand({ mode: 'alwaysOn', data: { failCommands: ['find'], errorCode: 2 } })
  t.equal((await failure(async () => await collection.findOne({ _id: 'k' })) as QueryError)?.code, 'APP_INVALID_QUERY', 'BadValue on a read is the filter\'s fault')
  double.failCommand({ mode: 'alwaysOn', data: { failCommands: ['update'], errorCode: 2 } })
  t.equal((await failure(async () => await collection.updateOne({ _id: 'k' }, { $set: { n: 2 } })) as InvalidUpdateError)?.code, 'APP_INVALID_UPDATE', 'on an update, the update\'s')
  double.failCommand({ mode: 'off', data: { failCommands: [] } })
  t.same(await collection.findOne({ _id: 'k' }), { _id: 'k', n: 1 }, 'and the store answers again')
})

t.test('GridFS chunks go through the same translation', async (t) => {
  const chunks = new MongoChunks(mongoDatabase(store) as NonNullable<ReturnType<typeof mongoDatabase>>, `chunks_${newId()}`)
  await chunks.init()
  await chunks.insert('f1', 0, Buffer.from('abc'))
  await chunks.insert('f1', 1, Buffer.from('de'))
  await chunks.insert('f2', 0, Buffer.from('z'))
  t.same((await chunks.range('f1', 0, 7)).map((chunk) => [chunk.n, chunk.data.toString()]), [[0, 'abc'], [1, 'de']], 'a range of chunks, Binary back to Buffers')
  t.equal(await chunks.nextFilesId('f1'), 'f2')
  t.equal(await chunks.nextFilesId('f2'), null)
  const duplicate = await failure(async () => { await chunks.insert('f1', 0, Buffer.from('again')) })
  t.ok(duplicate instanceof DuplicateKeyError, 'the unique (files_id, n) index')
  const outages: Array<[string, string, () => Promise<unknown>]> = [
    ['a chunk write', 'insert', async () => { await chunks.insert('f3', 0, Buffer.from('x')) }],
    ['a chunk read', 'find', async () => await chunks.range('f1', 0, 1)],
    ['the orphan walk', 'find', async () => await chunks.nextFilesId(null)],
    ['a chunk delete', 'delete', async () => { await chunks.deleteFiles(['f2']) }],
    ['the index', 'createIndexes', async () => { await new MongoChunks(mongoDatabase(store) as NonNullable<ReturnType<typeof mongoDatabase>>, `chunks_${newId()}`).init() }]
  ]
  for (const [name, command, run] of outages) {
    double.failCommand({ mode: 'alwaysOn', data: { failCommands: [command], errorCode: 10107 } })
    const error = await failure(run) as StoreUnavailableError
    double.failCommand({ mode: 'off', data: { failCommands: [] } })
    t.same([error instanceof StoreUnavailableError, error?.status], [true, 503], `${name}: 503`)
  }
  await chunks.deleteFiles(['f1', 'f2'])
  t.same(await chunks.range('f1', 0, 7), [], 'deleted')
  const stored = double.documents('conf', (chunks as unknown as { chunks: { collectionName: string } }).chunks.collectionName)
  t.ok(stored.every((doc) => doc.data instanceof Binary), 'chunk data is BSON binary on the server')
})

t.test('a deployment that stops answering is 503 on every path', async (t) => {
  const gone = await new MongoDouble().start()
  const lost = await openMongoStore({ url: gone.url('serverSelectionTimeoutMS=300'), db: 'lost' })
  t.teardown(async () => { await lost.close() })
  const collection = lost.collection('things')
  await collection.insertOne({ _id: 'a' })
  await gone.stop()
  const paths: Array<[string, () => Promise<unknown>]> = [
    ['a read', async () => await collection.findOne({ _id: 'a' })],
    ['a write', async () => await collection.insertOne({ _id: 'b' })],
    ['a transaction', async () => await collection.deleteMany({ _id: 'a' })],
    ['the server\'s time', async () => await lost.extensions.now()],
    ['a sweep', async () => await lost.extensions.sweep('things').deleteMany({})]
  ]
  for (const [name, run] of paths) t.ok(await failure(run) instanceof StoreUnavailableError, `${name}: StoreUnavailableError`)
})

t.test('the server\'s clock, and a test clock in its place', async (t) => {
  double.now = () => new Date('2031-05-06T07:08:09.000Z')
  t.same(await store.extensions.now(), new Date('2031-05-06T07:08:09.000Z'), 'hello.localTime of the primary')
  double.now = () => new Date()
  const fixed = { now: () => new Date('2020-01-01T00:00:00Z'), nowMs: () => Date.UTC(2020, 0, 1) }
  const manual = await openMongoStore({ url: double.url(), db: 'clock', clock: fixed })
  t.teardown(async () => { await manual.close() })
  const commands = await sent(async () => { t.same(await manual.extensions.now(), new Date('2020-01-01T00:00:00Z')) })
  t.same(commands, [], 'a test clock is answered without asking the server')
})

t.test('the engine\'s database is reached through the timing wrapper (GridFS stays beside a timed MongoDB Store)', async (t) => {
  t.equal(mongoDatabase(timedStore(store, () => {})), mongoDatabase(store))
  t.not(mongoDatabase(store), null)
})
