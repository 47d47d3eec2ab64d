import t from 'tap'
import {
  BSONRegExp, MongoBulkWriteError, MongoNetworkError, MongoNetworkTimeoutError, MongoNotConnectedError, MongoServerError, MongoServerSelectionError,
  MongoTopologyClosedError, type Collection
} from 'mongodb'
import {
  DuplicateKeyError, IndexConflictError, IndexNotFoundError, InvalidDocumentError, InvalidIndexError, InvalidUpdateError, QueryError, QueryTimeoutError,
  StoreUnavailableError
} from '../../../services/store/errors.js'
import { translate } from '../../../services/store/mongo/translate.js'
import { portableQuery } from '../../../services/store/mongo/portable.js'
import { clientOptions, deploymentProblem } from '../../../services/store/mongo/deployment.js'
import { MongoStoreCollection, type Transact } from '../../../services/store/mongo/collection.js'
import type { Document } from '../../../services/store/types.js'

/**
 * The MongoDB engine's own code, without a server: how driver and server
 * errors become the Store's typed errors, how patterns are sent, what the
 * deployment check refuses, and that the engine runs the shared validators
 * and transactions before (and around) every driver call. The engine's
 * answers against a real server are the conformance suite's (mongodb.test.ts).
 */

const caught = (run: () => unknown): unknown => {
  try { run() } catch (error) { return error }
  return null
}

t.test('driver and server errors become the Store\'s typed errors', async (t) => {
  const errmsg = 'E11000 duplicate key error collection: plinth.users index: email_1 dup key: { email: "a@x" }'
  const single = caught(() => translate(new MongoServerError({ code: 11000, errmsg, keyValue: { email: 'a@x' } }), 'users')) as DuplicateKeyError
  t.ok(single instanceof DuplicateKeyError)
  t.same([single.collection, single.index, single.keyValue, single.status, single.code], ['users', 'email_1', { email: 'a@x' }, 409, 'APP_DUPLICATE_KEY'])

  // insertMany's error: the keyValue lives on the first write error, not on the error itself.
  const writeError = { code: 11000, index: 1, errmsg, err: { code: 11000, index: 1, errmsg, keyValue: { email: 'a@x' } } }
  const bulk = new MongoBulkWriteError({ message: errmsg, code: 11000, writeErrors: [writeError] } as never, {} as never)
  const fromBulk = caught(() => translate(bulk, 'users')) as DuplicateKeyError
  t.ok(fromBulk instanceof DuplicateKeyError, 'a bulk write duplicate')
  t.same([fromBulk.index, fromBulk.keyValue], ['email_1', { email: 'a@x' }], 'keeps the index and keyValue')

  const unavailable: Array<[string, Error]> = [
    ['a network error', new MongoNetworkError('connection reset')],
    ['a network timeout', new MongoNetworkTimeoutError('timed out')],
    ['no server selectable', new MongoServerSelectionError('Server selection timed out after 30000 ms', {} as never)],
    ['a closed client', new MongoNotConnectedError('not connected')],
    ['a closed topology', new MongoTopologyClosedError()],
    ['a primary stepping down', new MongoServerError({ code: 11602, errmsg: 'InterruptedDueToReplStateChange' })],
    ['not primary', new MongoServerError({ code: 10107, errmsg: 'not primary' })],
    ['a retryable write error', new MongoServerError({ code: 1, errmsg: 'x', errorLabels: ['RetryableWriteError'] })],
    ['a transaction that kept conflicting', new MongoServerError({ code: 112, errmsg: 'WriteConflict', errorLabels: ['TransientTransactionError'] })]
  ]
  for (const [name, error] of unavailable) {
    const mapped = caught(() => translate(error, 'c'))
    t.ok(mapped instanceof StoreUnavailableError, name)
    t.same([(mapped as StoreUnavailableError).status, (mapped as StoreUnavailableError).code, (mapped as StoreUnavailableError).details], [503, 'APP_STORE_UNAVAILABLE', { retryAfterSeconds: 5 }], `${name}: 503 with Retry-After`)
    t.equal((mapped as Error).cause, error, `${name}: the driver's error is kept as the cause, for the log`)
  }

  const typed: Array<[string, MongoServerError, abstract new (...args: any[]) => Error, string]> = [
    ['IndexNotFound', new MongoServerError({ code: 27, errmsg: 'index not found with name [by_code]' }), IndexNotFoundError, 'APP_INDEX_NOT_FOUND'],
    ['IndexOptionsConflict', new MongoServerError({ code: 85, errmsg: 'Index already exists with a different name' }), IndexConflictError, 'APP_INDEX_CONFLICT'],
    ['IndexKeySpecsConflict', new MongoServerError({ code: 86, errmsg: 'An existing index has the same name' }), IndexConflictError, 'APP_INDEX_CONFLICT'],
    ['CannotCreateIndex', new MongoServerError({ code: 67, errmsg: 'add index fails, too many indexes for plinth.c' }), InvalidIndexError, 'APP_INVALID_INDEX'],
    ['CannotIndexParallelArrays', new MongoServerError({ code: 171, errmsg: 'cannot index parallel arrays [b] [a]' }), InvalidDocumentError, 'APP_INVALID_DOCUMENT'],
    ['TypeMismatch in an update', new MongoServerError({ code: 14, errmsg: 'Cannot apply $inc to a value of non-numeric type' }), InvalidUpdateError, 'APP_INVALID_UPDATE'],
    ['MaxTimeMSExpired', new MongoServerError({ code: 50, errmsg: 'operation exceeded time limit' }), QueryTimeoutError, 'APP_QUERY_TIMEOUT']
  ]
  for (const [name, error, type, code] of typed) {
    const mapped = caught(() => translate(error, 'c')) as { code?: string, message?: string }
    t.ok(mapped instanceof type, `${name} is a ${type.name}`)
    t.equal(mapped.code, code, name)
    t.notMatch(mapped.message ?? '', /plinth\./, `${name}: the server's namespace is not told`)
  }
  t.match((caught(() => translate(new MongoServerError({ code: 27, errmsg: 'index not found with name [by_code]' }), 'c')) as Error).message, /'by_code'/)

  const bug = new TypeError('a bug')
  t.equal(caught(() => translate(bug, 'c')), bug, 'anything else passes through, to be a 500 with its stack in the log')
  const other = new MongoServerError({ code: 13, errmsg: 'Unauthorized' })
  t.equal(caught(() => translate(other, 'c')), other, 'an unmapped server error passes through')
})

t.test('patterns reach the server in their portable form, as BSON regular expressions', async (t) => {
  const filter = {
    name: /^a$/i,
    code: { $regex: 'x # comment\n y$', $options: 'x' },
    tags: { $in: ['plain', /\s/] },
    $or: [{ body: { $not: /b$/ } }, { items: { $elemMatch: { label: { $regex: /^c/, $options: '' } } } }],
    untouched: { nested: [1, 2] }
  }
  const sent = portableQuery(filter) as any
  t.ok(sent.name instanceof BSONRegExp)
  t.same([sent.name.pattern, sent.name.options], ['^a\\z', 'i'], '$ without m is end of text')
  t.same([sent.code.$regex.pattern, sent.code.$regex.options, sent.code.$options], ['xy\\z', '', undefined], 'x is applied here and dropped')
  t.same([sent.tags.$in[0], sent.tags.$in[1].pattern], ['plain', '[\\t\\n\\f\\r ]'], '\\s is spelled out')
  t.equal(sent.$or[0].body.$not.pattern, 'b\\z')
  t.equal(sent.$or[1].items.$elemMatch.label.$regex.pattern, '^c')
  t.equal(sent.untouched, filter.untouched, 'a branch without patterns is passed as it came')
  t.same(filter.name, /^a$/i, "the caller's filter is not changed")
  const plain = { a: 1, b: { $in: [1, 2] } }
  t.equal(portableQuery(plain), plain, 'a filter without patterns is not copied')
  t.same((portableQuery({ $set: { a: 1 }, $pull: { tags: /x$/m } }, 'update') as any).$pull.tags.pattern, 'x$', 'with m, $ is left to mean end of line')
  const lines = (portableQuery({ s: { $regex: '^$|[^a]', $options: 'm' } }) as any).s.$regex
  t.same([lines.pattern, lines.options], ['(?:^|(?<=\\n)\\z)$|[^a]', 'm'], "with m, PCRE is told that ^ also matches after a final newline, as RE2's does (a class's ^ is left alone)")
})

t.test('the deployment check and the client options', async (t) => {
  t.match(deploymentProblem({ maxWireVersion: 21 }), /standalone MongoDB server; Plinth needs a replica set or a sharded cluster/)
  t.match(deploymentProblem({ maxWireVersion: 21 }), /--replSet/, 'and says how to make one for development')
  t.equal(deploymentProblem({ setName: 'rs0', maxWireVersion: 21 }), null, 'a replica set')
  t.equal(deploymentProblem({ msg: 'isdbgrid', maxWireVersion: 21 }), null, 'a mongos')
  t.match(deploymentProblem({ setName: 'rs0', maxWireVersion: 9 }), /MongoDB 5\.0 or newer/, 'MongoDB 4.4 is too old')
  t.same(clientOptions('mongodb://db/plinth'), { ignoreUndefined: true, serverSelectionTimeoutMS: 30_000, retryWrites: true, retryReads: true })
  t.same(clientOptions('mongodb://a,b/?replicaSet=rs0&serverSelectionTimeoutMS=60000&retryWrites=false'), { ignoreUndefined: true, retryReads: true }, 'what MONGODB_URL sets wins')
})

/** A stand-in for the driver's Collection: records what reaches it and answers from `answers`. */
function fakeDriver (answers: Record<string, (...args: any[]) => unknown> = {}) {
  const calls: Array<{ method: string, args: unknown[] }> = []
  const transactions: string[] = []
  const handler = (method: string) => async (...args: unknown[]) => {
    calls.push({ method, args })
    return await (answers[method]?.(...args) ?? { acknowledged: true, matchedCount: 0, modifiedCount: 0, upsertedCount: 0, upsertedId: null, deletedCount: 0 })
  }
  const raw = {
    collectionName: 'things',
    db: { listCollections: () => ({ toArray: async () => (answers.listCollections?.() ?? []) }) },
    listIndexes: () => ({ toArray: async () => (answers.listIndexes?.() ?? [{ name: '_id_', key: { _id: 1 } }]) }),
    find: (...args: unknown[]) => {
      calls.push({ method: 'find', args })
      return {
        toArray: async () => await answers.find?.(),
        async * [Symbol.asyncIterator] () { yield * (await answers.find?.() ?? []) as unknown[] }
      }
    },
    ...Object.fromEntries(['insertOne', 'insertMany', 'findOne', 'countDocuments', 'updateOne', 'updateMany', 'findOneAndUpdate', 'findOneAndDelete', 'deleteOne', 'deleteMany', 'createIndex', 'dropIndex', 'drop']
      .map((method) => [method, handler(method)]))
  }
  let open = ''
  const transact: Transact = async (work) => {
    open = 'open'
    try {
      return await work({ id: 'session' } as never)
    } finally {
      transactions.push(calls.at(-1)?.method ?? 'none')
      open = ''
    }
  }
  const collection = new MongoStoreCollection<Document>(raw as unknown as Collection, () => 'new-id', transact, 5000)
  return { collection, calls, transactions, inTransaction: () => open !== '' }
}

t.test('the engine validates before the driver sees anything', async (t) => {
  const { collection, calls } = fakeDriver()
  const refused: Array<[string, () => Promise<unknown>]> = [
    ['a $-prefixed name', async () => await collection.insertOne({ a: { $where: 1 } })],
    ['a dotted name deep down', async () => await collection.insertMany([{ ok: 1 }, { list: [{ 'a.b': 1 }] }])],
    ['NUL in a name', async () => await collection.insertOne({ 'a\0b': 1 })],
    ['NaN', async () => await collection.insertOne({ n: Number.NaN })],
    ['Infinity in $set', async () => await collection.updateOne({ _id: 'x' }, { $set: { n: Infinity } })],
    ['a Buffer in $push', async () => await collection.updateMany({}, { $push: { files: Buffer.from('x') } })],
    ['a Uint8Array via $addToSet $each', async () => await collection.updateOne({}, { $addToSet: { files: { $each: [new Uint8Array(1)] } } })],
    ['a numeric _id', async () => await collection.insertOne({ _id: 5 as unknown as string })],
    ['a numeric _id from an upsert filter', async () => await collection.updateOne({ _id: 5 }, { $set: { a: 1 } }, { upsert: true })],
    ['NaN from an upsert filter', async () => await collection.findOneAndUpdate({ n: Number.NaN }, { $set: { a: 1 } }, { upsert: true })]
  ]
  for (const [name, run] of refused) {
    const error = await run().then(() => null, (error: unknown) => error)
    t.ok(error instanceof InvalidDocumentError, `${name}: InvalidDocumentError`)
  }
  const patterns = await (async () => await collection.find({ a: { $regex: 'x\\Z' } }).toArray())().then(() => null, (error: unknown) => error)
  t.ok(patterns instanceof QueryError, 'a pattern PCRE and RE2 read differently')
  t.ok(await (async () => await collection.find({}, { limit: -1 }).toArray())().then(() => null, (error: unknown) => error) instanceof QueryError, 'a negative limit (one batch, to MongoDB)')
  t.ok(await collection.createIndex({ 'a.0': 1 }).then(() => null, (error: unknown) => error) instanceof InvalidIndexError, 'an index key the embedded engine cannot build')
  t.ok(await collection.dropIndex('_id_').then(() => null, (error: unknown) => error) instanceof InvalidIndexError, 'dropping _id_')
  t.same(calls, [], 'the driver was never called')
})

t.test('multi-document writes run in a transaction; single-document writes do not', async (t) => {
  const { collection, calls, transactions, inTransaction } = fakeDriver({
    insertMany: () => { t.ok(inTransaction(), 'insertMany inside the transaction') },
    updateMany: () => { t.ok(inTransaction(), 'updateMany inside the transaction'); return { matchedCount: 2, modifiedCount: 2, upsertedCount: 0, upsertedId: null } },
    deleteMany: () => { t.ok(inTransaction(), 'deleteMany inside the transaction'); return { deletedCount: 3 } },
    updateOne: () => { t.notOk(inTransaction(), 'updateOne on its own'); return { matchedCount: 1, modifiedCount: 1, upsertedCount: 0, upsertedId: null } }
  })
  t.same(await collection.insertMany([{ a: 1 }, { _id: 'b', a: 2 }]), { acknowledged: true, insertedCount: 2, insertedIds: { 0: 'new-id', 1: 'b' } })
  t.same((calls[0].args[1] as { session?: unknown }).session, { id: 'session' }, 'with the session')
  t.same(await collection.updateMany({ a: { $gt: 0 } }, { $inc: { a: 1 } }), { acknowledged: true, matchedCount: 2, modifiedCount: 2, upsertedCount: 0, upsertedId: null })
  t.same(await collection.deleteMany({ a: 1 }), { acknowledged: true, deletedCount: 3 })
  await collection.updateOne({ _id: 'b' }, { $set: { a: 3 } })
  t.same(transactions, ['insertMany', 'updateMany', 'deleteMany'])
})

t.test('contract edges are normalized before the driver', async (t) => {
  const { collection, calls } = fakeDriver({ countDocuments: () => 7 })
  t.same(await collection.insertMany([]), { acknowledged: true, insertedCount: 0, insertedIds: {} }, 'an empty insertMany is acknowledged')
  t.equal(calls.length, 0, 'without calling the driver, which refuses an empty batch')
  t.equal(await collection.countDocuments({}, { limit: 0, skip: 0 }), 7)
  t.same(calls[0].args[1], { maxTimeMS: 5000 }, 'limit 0 means no limit (the count pipeline refuses $limit: 0)')
  await collection.countDocuments({}, { limit: 2, skip: 1 })
  t.same(calls[1].args[1], { skip: 1, limit: 2, maxTimeMS: 5000 })
  t.equal(await collection.drop(), false, 'dropping a missing collection is no error')
  t.equal(calls.length, 2, 'and sends no drop')
  await collection.updateOne({ n: 1 }, { $set: { a: 1 } }, { upsert: true })
  t.same(calls[2].args[1], { $set: { a: 1 }, $setOnInsert: { _id: 'new-id' } }, 'an upsert gets our id, not an ObjectId')
})

t.test('index rules are decided before the driver', async (t) => {
  const existing: Array<{ name: string, key: Record<string, number>, unique?: boolean }> = [{ name: '_id_', key: { _id: 1 } }, { name: 'a_1', key: { a: 1 }, unique: true }]
  const { collection, calls } = fakeDriver({ listIndexes: () => existing, createIndex: (_key: unknown, options: { name: string }) => options.name })
  t.equal(await collection.createIndex({ a: 1 }, { unique: true }), 'a_1', 'the same index again is a no-op')
  t.equal(await collection.createIndex({ _id: 1 }), '_id_')
  t.ok(await collection.createIndex({ b: 1 }, { name: 'a_1' }).then(() => null, (error: unknown) => error) instanceof IndexConflictError, 'a name taken by another key')
  t.ok(await collection.createIndex({ a: 1 }, { name: 'other' }).then(() => null, (error: unknown) => error) instanceof IndexConflictError, 'a key taken under another name')
  t.equal(calls.length, 0)
  t.equal(await collection.createIndex({ b: -1 }), 'b_-1')
  t.same(calls[0].args, [{ b: -1 }, { unique: false, name: 'b_-1' }])
  existing.push(...Array.from({ length: 62 }, (_, i) => ({ name: `f${i}_1`, key: { [`f${i}`]: 1 } })))
  t.ok(await collection.createIndex({ z: 1 }).then(() => null, (error: unknown) => error) instanceof InvalidIndexError, 'a 65th index')
  t.equal(calls.length, 1)

  const parallel = fakeDriver({ createIndex: () => { throw new MongoServerError({ code: 171, errmsg: 'cannot index parallel arrays [b] [a]' }) } }).collection
  t.ok(await parallel.createIndex({ a: 1, b: 1 }).then(() => null, (error: unknown) => error) instanceof InvalidIndexError, 'parallel arrays met while building an index refuse the index, as on the embedded engine')
})

t.test('errors from cursors and writes are translated too', async (t) => {
  const { collection } = fakeDriver({
    find: () => { throw new MongoNetworkError('reset') },
    insertMany: () => {
      const errmsg = 'E11000 duplicate key error collection: db.things index: _id_ dup key: { _id: "b" }'
      throw new MongoBulkWriteError({ message: errmsg, code: 11000, writeErrors: [{ code: 11000, errmsg, err: { errmsg, keyValue: { _id: 'b' } } }] } as never, {} as never)
    }
  })
  t.ok(await collection.find({}).toArray().then(() => null, (error: unknown) => error) instanceof StoreUnavailableError, 'toArray')
  const iterated = await (async () => { for await (const doc of collection.find({})) t.fail(String(doc)) })().then(() => null, (error: unknown) => error)
  t.ok(iterated instanceof StoreUnavailableError, 'async iteration')
  const duplicate = await collection.insertMany([{ _id: 'a' }, { _id: 'b' }]).then(() => null, (error: unknown) => error) as DuplicateKeyError
  t.same([duplicate instanceof DuplicateKeyError, duplicate.index, duplicate.keyValue], [true, '_id_', { _id: 'b' }])
})

t.test('every operation that evaluates a filter carries the server-side time limit', async (t) => {
  const { collection, calls } = fakeDriver({ find: () => [], countDocuments: () => 0 })
  await collection.find({ a: { $regex: '(a+)+$' } }).toArray()
  await collection.findOne({ a: 1 })
  await collection.countDocuments({ a: 1 })
  await collection.updateOne({ a: 1 }, { $set: { b: 1 } })
  await collection.updateMany({ a: 1 }, { $set: { b: 1 } })
  await collection.findOneAndUpdate({ a: 1 }, { $set: { b: 1 } })
  await collection.findOneAndDelete({ a: 1 })
  await collection.deleteOne({ a: 1 })
  await collection.deleteMany({ a: 1 })
  t.equal(calls.length, 9)
  for (const call of calls) {
    const options = call.args.find((arg, i) => i > 0 && arg !== null && typeof arg === 'object' && 'maxTimeMS' in arg) as { maxTimeMS?: number } | undefined
    t.equal(options?.maxTimeMS, 5000, `${call.method} is limited`)
  }
})
