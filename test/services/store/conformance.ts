import type { Test } from 'tap'
import { newId } from '../../../services/platform/ids.js'
import { DuplicateKeyError, IndexConflictError, InvalidIndexError, InvalidUpdateError, QueryError } from '../../../services/store/errors.js'
import type { Document, Filter, FindOptions, Store, StoreCollection } from '../../../services/store/types.js'
import { parityConformance } from './conformance-parity.js'
import { boundsConformance } from './conformance-bounds.js'

/**
 * Engine-agnostic Store cases: every engine must give these answers, which are
 * MongoDB's. Each case works in a collection of its own, so the suite can run
 * against a shared database.
 */
export async function storeConformance (t: Test, openStore: () => Promise<Store>): Promise<void> {
  const fresh = async <T extends Document = Document>(): Promise<StoreCollection<T>> => (await openStore()).collection<T>(`conf_${newId()}`)
  const ids = (docs: Document[]): string[] => docs.map((doc) => doc._id as string).sort()
  // tap's rejects() matches classes by name, and these errors are all named AppError.
  const rejects = async (t: Test, run: Promise<unknown>, type: abstract new (...args: any[]) => Error, message: string): Promise<void> => {
    const error = await run.then(() => null, (error: unknown) => error)
    t.ok(error instanceof type, `${message}: ${type.name}`)
  }

  t.test('insert, read, update and delete', async (t) => {
    const users = await fresh()
    const input = { name: 'Ada', age: 36 }
    const { insertedId } = await users.insertOne(input)
    t.type(insertedId, 'string')
    t.same(input, { name: 'Ada', age: 36 }, "the caller's object is not mutated")
    t.same(await users.findOne({ _id: insertedId }), { _id: insertedId, name: 'Ada', age: 36 })
    t.equal(await users.findOne({ _id: 'nope' }), null)
    t.same((await users.insertOne({ _id: 'given', name: 'Bob' })).insertedId, 'given')
    const many = await users.insertMany([{ name: 'C' }, { _id: 'd', name: 'D' }])
    t.equal(many.insertedCount, 2)
    t.equal(many.insertedIds[1], 'd')
    t.type(many.insertedIds[0], 'string')
    t.equal(await users.countDocuments(), 4)
    t.same(await users.updateOne({ _id: 'given' }, { $set: { age: 40 } }), { acknowledged: true, matchedCount: 1, modifiedCount: 1, upsertedCount: 0, upsertedId: null })
    t.same(await users.findOne({ name: 'Bob' }, { projection: { _id: 0 } }), { name: 'Bob', age: 40 })
    t.same(await users.deleteOne({ name: 'C' }), { acknowledged: true, deletedCount: 1 })
    t.same(await users.deleteMany({ age: { $gte: 36 } }), { acknowledged: true, deletedCount: 2 })
    t.same(ids(await users.find().toArray()), ['d'])
    const all: Document[] = []
    for await (const doc of users.find({})) all.push(doc)
    t.same(all, [{ _id: 'd', name: 'D' }], 'cursors are async iterable')
    await rejects(t, users.insertOne({ _id: 'd', name: 'again' }), DuplicateKeyError, 'a duplicate')
    const error = await users.insertOne({ _id: 'd' }).catch((error: unknown) => error) as DuplicateKeyError
    t.equal(error.index, '_id_')
    t.same(error.keyValue, { _id: 'd' })
    t.equal(await users.countDocuments(), 1, 'the duplicate changed nothing')
  })

  const day = (iso: string): Date => new Date(`${iso}T00:00:00.000Z`)
  const sample: Document[] = [
    { _id: 'a', n: 1, s: 'apple', b: true, tags: ['red', 'green'], nested: { x: 1, y: 'q' }, arr: [{ k: 1, v: 'a' }, { k: 2, v: 'b' }], nul: null, d: day('2024-01-01') },
    { _id: 'b', n: 2, s: 'banana', b: false, tags: ['green'], nested: { x: 2 }, arr: [{ k: 3, v: 'c' }], d: day('2024-06-01') },
    { _id: 'c', n: 3.5, s: 'cherry', tags: [], nested: { x: 3, y: 'r' }, nul: 5 },
    { _id: 'd', n: '4', s: 'Date', tags: 'red', nested: 'flat' },
    { _id: 'e', n: null, s: 10, tags: [['red']], nested: { x: [1, 5] } },
    { _id: 'f' }
  ]
  const filterCases: Array<[string, Filter, string[]]> = [
    ['implicit $eq', { n: 1 }, ['a']],
    ['$eq on a float', { n: { $eq: 3.5 } }, ['c']],
    ['$ne includes missing', { n: { $ne: 1 } }, ['b', 'c', 'd', 'e', 'f']],
    ['$gt compares numbers only', { n: { $gt: 1 } }, ['b', 'c']],
    ['$gte and $lt', { n: { $gte: 2, $lt: 4 } }, ['b', 'c']],
    ['$lte', { n: { $lte: 2 } }, ['a', 'b']],
    ['string ranges skip numbers', { n: { $gte: '0' } }, ['d']],
    ['null matches null and missing', { n: null }, ['e', 'f']],
    ['$exists false', { n: { $exists: false } }, ['f']],
    ['$exists true', { n: { $exists: true } }, ['a', 'b', 'c', 'd', 'e']],
    ['$in mixes types', { n: { $in: [1, '4'] } }, ['a', 'd']],
    ['$in with null', { n: { $in: [null] } }, ['e', 'f']],
    ['$in with a regex', { n: { $in: [/^4/] } }, ['d']],
    ['$nin', { n: { $nin: [1, 2] } }, ['c', 'd', 'e', 'f']],
    ['a scalar matches array elements', { tags: 'red' }, ['a', 'd']],
    ['an array matches an equal element', { tags: ['red'] }, ['e']],
    ['an array matches an equal array', { tags: ['red', 'green'] }, ['a']],
    ['$all', { tags: { $all: ['green', 'red'] } }, ['a']],
    ['$size 0', { tags: { $size: 0 } }, ['c']],
    ['$size 1', { tags: { $size: 1 } }, ['b', 'e']],
    ['$elemMatch with operators', { tags: { $elemMatch: { $eq: 'green' } } }, ['a', 'b']],
    ['$in over arrays', { tags: { $in: ['green', 'zzz'] } }, ['a', 'b']],
    ['$nin over arrays', { tags: { $nin: ['red'] } }, ['b', 'c', 'e', 'f']],
    ['dotted path', { 'nested.x': 1 }, ['a', 'e']],
    ['dotted range reaches array elements', { 'nested.x': { $gt: 2 } }, ['c', 'e']],
    ['dotted $exists', { 'nested.y': { $exists: true } }, ['a', 'c']],
    ['dotted null', { 'nested.y': null }, ['b', 'd', 'e', 'f']],
    ['path through an array of objects', { 'arr.k': 2 }, ['a']],
    ['range through an array of objects', { 'arr.k': { $gte: 3 } }, ['b']],
    ['$elemMatch on one element', { arr: { $elemMatch: { k: { $gt: 1 }, v: 'b' } } }, ['a']],
    ['$elemMatch needs one element to satisfy all', { arr: { $elemMatch: { k: 1, v: 'b' } } }, []],
    ['two paths may match different elements', { 'arr.k': 1, 'arr.v': 'b' }, ['a']],
    ['$regex', { s: { $regex: '^b' } }, ['b']],
    ['RegExp value', { s: /^c/ }, ['c']],
    ['$regex with $options', { s: { $regex: 'A', $options: 'i' } }, ['a', 'b', 'd']],
    ['$not with a regex', { s: { $not: /^a/ } }, ['b', 'c', 'd', 'e', 'f']],
    ['$not with operators', { n: { $not: { $gt: 1 } } }, ['a', 'd', 'e', 'f']],
    ['$or', { $or: [{ n: 1 }, { s: 'banana' }] }, ['a', 'b']],
    ['$and', { $and: [{ n: { $gte: 1 } }, { n: { $lt: 3 } }] }, ['a', 'b']],
    ['$nor', { $nor: [{ n: 1 }, { tags: 'green' }] }, ['c', 'd', 'e', 'f']],
    ['boolean true', { b: true }, ['a']],
    ['boolean false is not 0', { b: false }, ['b']],
    ['$ne true', { b: { $ne: true } }, ['b', 'c', 'd', 'e', 'f']],
    ['number 1 is not true', { b: 1 }, []],
    ['date equality', { d: day('2024-01-01') }, ['a']],
    ['date range', { d: { $gt: day('2024-03-01') } }, ['b']],
    ['explicit null field', { nul: null }, ['a', 'b', 'd', 'e', 'f']],
    ['_id $in', { _id: { $in: ['a', 'c', 'zz'] } }, ['a', 'c']],
    ['_id range', { _id: { $gt: 'd' } }, ['e', 'f']],
    ['whole-object equality', { nested: { x: 2 } }, ['b']],
    ['object equality needs every field', { nested: { x: 1 } }, []],
    ['empty filter', {}, ['a', 'b', 'c', 'd', 'e', 'f']],
    ['$exists with $not $size', { tags: { $exists: true, $not: { $size: 0 } } }, ['a', 'b', 'd', 'e']]
  ]

  t.test('filter operators', async (t) => {
    const things = await fresh()
    await things.insertMany(sample)
    for (const [name, filter, expected] of filterCases) {
      t.same(ids(await things.find(filter).toArray()), expected, name)
      t.equal(await things.countDocuments(filter), expected.length, `${name} (count)`)
    }
  })

  t.test('filter operators on indexed fields', async (t) => {
    const things = await fresh()
    for (const key of ['n', 's', 'b', 'tags', 'nested.x', 'nested.y', 'arr.k', 'd', 'nul']) await things.createIndex({ [key]: 1 })
    await things.createIndex({ n: 1, s: -1 })
    await things.insertMany(sample)
    for (const [name, filter, expected] of filterCases) t.same(ids(await things.find(filter).toArray()), expected, name)
  })

  t.test('update operators', async (t) => {
    const docs = await fresh()
    await docs.insertOne({ _id: 'u', n: 1, list: [1, 2, 3, 2], set: ['a'], nested: { keep: true }, arr: [{ v: 'x' }], gone: 1 })
    const cases: Array<[string, Document, Document]> = [
      ['$set a nested path creates objects', { $set: { 'deep.er.path': 5 } }, { deep: { er: { path: 5 } } }],
      ['$set into an array element', { $set: { 'arr.0.v': 'y' } }, { arr: [{ v: 'y' }] }],
      ['$unset', { $unset: { gone: '' } }, { gone: undefined }],
      ['$inc existing', { $inc: { n: 2 } }, { n: 3 }],
      ['$inc missing', { $inc: { counter: -1.5 } }, { counter: -1.5 }],
      ['$push', { $push: { list: 9 } }, { list: [1, 2, 3, 2, 9] }],
      ['$push $each', { $push: { list: { $each: [7, 8] } } }, { list: [1, 2, 3, 2, 9, 7, 8] }],
      ['$pull a value', { $pull: { list: 2 } }, { list: [1, 3, 9, 7, 8] }],
      ['$pull a condition', { $pull: { list: { $gte: 8 } } }, { list: [1, 3, 7] }],
      ['$addToSet new', { $addToSet: { set: 'b' } }, { set: ['a', 'b'] }],
      ['$addToSet $each', { $addToSet: { set: { $each: ['b', 'c'] } } }, { set: ['a', 'b', 'c'] }],
      ['$setOnInsert ignored on update', { $setOnInsert: { only: 'insert' }, $set: { nested: { keep: false } } }, { only: undefined, nested: { keep: false } }]
    ]
    for (const [name, update, expected] of cases) {
      const result = await docs.updateOne({ _id: 'u' }, update)
      t.equal(result.modifiedCount, 1, `${name} modifies`)
      const doc = await docs.findOne({ _id: 'u' }) as Document
      for (const [field, value] of Object.entries(expected)) t.same(doc[field], value, name)
    }
    t.same((await docs.updateOne({ _id: 'u' }, { $set: { n: 3 } })).modifiedCount, 0, 'a no-op $set modifies nothing')
    t.same((await docs.updateOne({ _id: 'u' }, { $addToSet: { set: 'a' } })).modifiedCount, 0, 'a present $addToSet modifies nothing')
    await rejects(t, docs.updateOne({ _id: 'u' }, { $inc: { 'nested.keep': 1 } }), InvalidUpdateError, '$inc on a boolean')
    await docs.insertMany([{ _id: 'm1', flag: true }, { _id: 'm2', flag: false }, { _id: 'm3' }])
    t.same(await docs.updateMany({ _id: { $in: ['m1', 'm2', 'm3'] } }, { $set: { flag: true } }),
      { acknowledged: true, matchedCount: 3, modifiedCount: 2, upsertedCount: 0, upsertedId: null }, 'modifiedCount counts changed documents only')
  })

  t.test('sort over mixed types, skip, limit and count', async (t) => {
    const docs = await fresh()
    await docs.insertMany([
      { _id: '1', v: 'b' }, { _id: '2', v: 1 }, { _id: '3', v: null }, { _id: '4' }, { _id: '5', v: true },
      { _id: '6', v: new Date(0) }, { _id: '7', v: { a: 1 } }, { _id: '8', v: [3, 0.5] }, { _id: '9', v: 'a' }
    ])
    const order = async (sort: Record<string, 1 | -1>): Promise<string[]> => (await docs.find({}, { sort }).toArray()).map((doc) => doc._id)
    t.same(await order({ v: 1, _id: 1 }), ['3', '4', '8', '2', '9', '1', '7', '5', '6'], 'BSON order; an array sorts by its smallest element')
    t.same(await order({ v: -1, _id: 1 }), ['6', '5', '7', '1', '9', '8', '2', '3', '4'], 'descending; an array sorts by its largest element')
    t.same(await order({ _id: -1 }), ['9', '8', '7', '6', '5', '4', '3', '2', '1'])
    const numbers = await fresh()
    await numbers.insertMany(Array.from({ length: 10 }, (_, n) => ({ _id: `n${n}`, n, odd: n % 2 === 1 })))
    const page = await numbers.find({}, { sort: { n: -1 }, skip: 3, limit: 4 }).toArray()
    t.same(page.map((doc) => doc.n), [6, 5, 4, 3])
    t.same((await numbers.find({ odd: true }, { sort: { n: 1 }, skip: 1, limit: 2 }).toArray()).map((doc) => doc.n), [3, 5])
    t.same((await numbers.find({}, { sort: { n: 1 }, limit: 0 }).toArray()).length, 10, 'limit 0 means no limit')
    t.same((await numbers.find({}, { sort: { odd: 1, n: -1 }, limit: 3 }).toArray()).map((doc) => doc.n), [8, 6, 4], 'compound sort')
    t.equal(await numbers.countDocuments({}, { skip: 8 }), 2)
    t.equal(await numbers.countDocuments({ n: { $gte: 5 } }, { limit: 2 }), 2)
    t.equal(await numbers.countDocuments({ n: { $gte: 5 } }, { skip: 4, limit: 2 }), 1)
  })

  t.test('shared reads (the Store extension) answer exactly what private reads do', async (t) => {
    const store = await openStore()
    const docs = store.collection(`conf_${newId()}`)
    const shared = store.extensions.shared(docs.collectionName)
    await docs.insertMany(Array.from({ length: 6 }, (_, n) => ({ _id: `s${n}`, n, at: new Date(n), tags: [n, { deep: n }] })))
    const variants: FindOptions[] = [{ sort: { _id: 1 }, limit: 4 }, { sort: { n: -1 }, skip: 1, limit: 3 }, {}]
    for (const options of variants) {
      t.same(await shared.find({ n: { $gte: 1 } }, options).toArray(), await docs.find({ n: { $gte: 1 } }, options).toArray(), JSON.stringify(options))
    }
    t.same(await shared.findOne({ _id: 's2' }), { _id: 's2', n: 2, at: new Date(2), tags: [2, { deep: 2 }] })
    t.same(await shared.findOne({ n: 3 }), await docs.findOne({ n: 3 }))
  })

  t.test('projection', async (t) => {
    const docs = await fresh()
    await docs.insertOne({ _id: 'p', name: 'n', secret: 's', a: { b: 1, c: 2 }, list: [{ x: 1, y: 2 }] })
    t.same(await docs.findOne({}, { projection: { name: 1 } }), { _id: 'p', name: 'n' })
    t.same(await docs.findOne({}, { projection: { name: 1, _id: 0 } }), { name: 'n' })
    t.same(await docs.findOne({}, { projection: { secret: 0, list: 0 } }), { _id: 'p', name: 'n', a: { b: 1, c: 2 } })
    t.same(await docs.findOne({}, { projection: { 'a.b': 1, 'list.y': 1 } }), { _id: 'p', a: { b: 1 }, list: [{ y: 2 }] })
    t.same(await docs.find({ _id: 'p' }, { projection: { 'a.c': 0, name: 0, secret: 0, list: 0 } }).toArray(), [{ _id: 'p', a: { b: 1 } }])
  })

  t.test('unique indexes', async (t) => {
    const users = await fresh()
    t.equal(await users.createIndex({ email: 1 }, { unique: true }), 'email_1')
    t.equal(await users.createIndex({ email: 1 }, { unique: true }), 'email_1', 'idempotent')
    await users.insertOne({ _id: 'u1', email: 'a@x' })
    const error = await users.insertOne({ _id: 'u2', email: 'a@x' }).catch((error: unknown) => error) as DuplicateKeyError
    t.ok(error instanceof DuplicateKeyError)
    t.equal(error.index, 'email_1')
    t.same(error.keyValue, { email: 'a@x' })
    await users.insertOne({ _id: 'u3', email: 'b@x' })
    await rejects(t, users.updateOne({ _id: 'u3' }, { $set: { email: 'a@x' } }), DuplicateKeyError, 'an update into a taken key')
    t.same(await users.findOne({ _id: 'u3' }), { _id: 'u3', email: 'b@x' }, 'the failed update changed nothing')
    await rejects(t, users.updateOne({ email: 'c@x' }, { $set: { email: 'a@x' } }, { upsert: true }), DuplicateKeyError, 'an upsert into a taken key')
    await rejects(t, users.insertMany([{ _id: 'u4', email: 'd@x' }, { _id: 'u5', email: 'b@x' }]), DuplicateKeyError, 'a duplicate')
    t.equal(await users.countDocuments({ email: 'b@x' }), 1)
    await users.insertOne({ _id: 'n1' })
    await rejects(t, users.insertOne({ _id: 'n2', email: null }), DuplicateKeyError, 'missing and null are the same key')
    t.same(ids(await users.find({ _id: { $in: ['u2', 'n2', 'u5'] } }).toArray()), [])

    const pairs = await fresh()
    t.equal(await pairs.createIndex({ a: 1, b: -1 }, { unique: true }), 'a_1_b_-1')
    await pairs.insertMany([{ a: 1, b: 1 }, { a: 1, b: 2 }, { a: 2, b: 1 }])
    await rejects(t, pairs.insertOne({ a: 1, b: 2 }), DuplicateKeyError, 'compound key')

    const tagged = await fresh()
    await tagged.createIndex({ tags: 1 }, { unique: true })
    await tagged.insertOne({ _id: 't1', tags: ['a', 'b'] })
    await rejects(t, tagged.insertOne({ _id: 't2', tags: ['c', 'b'] }), DuplicateKeyError, 'array elements are keys')
    await rejects(t, tagged.insertOne({ _id: 't3', tags: 'a' }), DuplicateKeyError, 'a scalar equal to an element')
    await tagged.insertOne({ _id: 't4', tags: ['c', 'c'] })
    t.equal(await tagged.countDocuments(), 2, 'an array may repeat its own key')

    const existing = await fresh()
    await existing.insertMany([{ _id: 'e1', code: 'x' }, { _id: 'e2', code: 'x' }, { _id: 'e3', code: 'y' }])
    const creation = await existing.createIndex({ code: 1 }, { unique: true }).catch((error: unknown) => error) as DuplicateKeyError
    t.ok(creation instanceof DuplicateKeyError, 'a unique index over duplicates is refused')
    t.same((await existing.listIndexes()).map((index) => index.name), ['_id_'], 'and not created')
    await existing.createIndex({ code: 1 }, { name: 'by_code' })
    t.same(await existing.listIndexes(), [{ name: '_id_', key: { _id: 1 }, unique: true }, { name: 'by_code', key: { code: 1 }, unique: false }])
    await existing.dropIndex('by_code')
    t.same((await existing.listIndexes()).map((index) => index.name), ['_id_'])
  })

  t.test('partial indexes: the key fields named hold strings', async (t) => {
    const items = await fresh()
    const partial = { cycleId: { $gte: '' } }
    t.equal(await items.createIndex({ lp: 1, cycleId: 1, seq: 1 }, { partialFilterExpression: partial }), 'lp_1_cycleId_1_seq_1')
    t.equal(await items.createIndex({ lp: 1, cycleId: 1, seq: 1 }, { partialFilterExpression: { cycleId: { $gte: '' } } }), 'lp_1_cycleId_1_seq_1', 'idempotent')
    t.same((await items.listIndexes())[1], { name: 'lp_1_cycleId_1_seq_1', key: { lp: 1, cycleId: 1, seq: 1 }, unique: false, partialFilterExpression: partial })
    await rejects(t, items.createIndex({ lp: 1, cycleId: 1, seq: 1 }), IndexConflictError, 'the same name and key without the filter')
    await rejects(t, items.createIndex({ lp: 1, cycleId: 1, seq: 1 }, { name: 'other', partialFilterExpression: partial }), IndexConflictError, 'the same key under another name')
    const docs = [
      { _id: 'a', lp: 'p', cycleId: 'c1', seq: 1 }, { _id: 'b', lp: 'p', cycleId: null, seq: 2 }, { _id: 'c', lp: 'p', seq: 3 },
      { _id: 'd', lp: 'p', cycleId: 'c2', seq: 4 }, { _id: 'e', lp: 'p', cycleId: 'c1', seq: 5 }, { _id: 'f', lp: 'q', cycleId: 'c1', seq: 6 },
      { _id: 'g', lp: 'p', cycleId: 7, seq: 7 }, { _id: 'h', lp: 'p', cycleId: '', seq: 8 }
    ]
    await items.insertMany(docs)
    await items.updateOne({ _id: 'b' }, { $set: { cycleId: 'c2' } })
    await items.updateOne({ _id: 'd' }, { $set: { cycleId: null } })
    // Every answer is the one without the index: documents outside it are still found by filters the index cannot serve.
    const cases: Array<[Filter, FindOptions, string[], number?]> = [
      [{ lp: 'p', cycleId: 'c1' }, { sort: { seq: -1 }, limit: 5 }, ['e', 'a']],
      [{ lp: 'p', cycleId: { $in: ['c1', 'c2'] } }, { sort: { seq: 1 } }, ['a', 'b', 'e']],
      [{ lp: 'p', cycleId: null }, { sort: { seq: -1 }, limit: 5 }, ['d', 'c']],
      [{ lp: 'p', cycleId: 7 }, { sort: { seq: -1 }, limit: 5 }, ['g']],
      [{ lp: 'p', cycleId: '' }, { sort: { seq: -1 }, limit: 5 }, ['h']],
      [{ lp: 'p', cycleId: { $gte: '' } }, { sort: { seq: 1 } }, ['a', 'b', 'e', 'h']],
      [{ lp: 'p' }, { sort: { seq: -1 }, limit: 3 }, ['h', 'g', 'e'], 7]
    ]
    for (const [filter, options, expected, count] of cases) {
      t.same((await items.find(filter, options).toArray()).map((doc) => doc._id), expected, JSON.stringify(filter))
      t.equal(await items.countDocuments(filter), count ?? expected.length, `count ${JSON.stringify(filter)}`)
    }
    await items.dropIndex('lp_1_cycleId_1_seq_1')
    t.same((await items.listIndexes()).map((index) => index.name), ['_id_'])

    const refused: Array<[string, unknown, boolean?]> = [
      ['an empty filter', {}],
      ['a field outside the key', { other: { $gte: '' } }],
      ['_id', { _id: { $gte: '' } }],
      ['another operator', { cycleId: { $exists: true } }],
      ['another bound', { cycleId: { $gte: 'a' } }],
      ['two operators', { cycleId: { $gte: '', $lt: 'z' } }],
      ['a plain value', { cycleId: 'x' }],
      ['not an object', 'cycleId'],
      ['with unique', { cycleId: { $gte: '' } }, true]
    ]
    for (const [what, filter, unique] of refused) {
      await rejects(t, items.createIndex({ cycleId: 1, _id: 1 }, { partialFilterExpression: filter as Filter, unique }), InvalidIndexError, what)
    }
    t.same((await items.listIndexes()).map((index) => index.name), ['_id_'], 'nothing built by a refusal')
  })

  t.test('upsert', async (t) => {
    const pages = await fresh()
    const first = await pages.updateOne({ slug: 'home', views: { $gt: 5 } }, { $set: { title: 'Home' }, $setOnInsert: { created: 1 } }, { upsert: true })
    t.equal(first.upsertedCount, 1)
    t.type(first.upsertedId, 'string')
    t.same(await pages.findOne({ slug: 'home' }, { projection: { _id: 0 } }), { slug: 'home', title: 'Home', created: 1 }, 'equality fields seed the new document')
    const second = await pages.updateOne({ slug: 'home' }, { $set: { title: 'Home 2' }, $setOnInsert: { created: 2 } }, { upsert: true })
    t.same(second, { acknowledged: true, matchedCount: 1, modifiedCount: 1, upsertedCount: 0, upsertedId: null })
    t.equal((await pages.findOne({ slug: 'home' }))?.created, 1, '$setOnInsert only on insert')
    const byId = await pages.updateMany({ _id: 'chosen' }, { $inc: { n: 1 } }, { upsert: true })
    t.equal(byId.upsertedId, 'chosen')
    t.same(await pages.findOne({ _id: 'chosen' }), { _id: 'chosen', n: 1 })
  })

  t.test('findOneAndUpdate and findOneAndDelete', async (t) => {
    const jobs = await fresh()
    await jobs.insertMany([{ _id: 'j1', p: 2, state: 'ready' }, { _id: 'j2', p: 5, state: 'ready' }, { _id: 'j3', p: 1, state: 'done' }])
    const before = await jobs.findOneAndUpdate({ state: 'ready' }, { $set: { state: 'running' } }, { sort: { p: -1 } })
    t.same(before, { _id: 'j2', p: 5, state: 'ready' }, 'returns the document before the update by default, chosen by sort')
    const after = await jobs.findOneAndUpdate({ state: 'ready' }, { $set: { state: 'running' } }, { returnDocument: 'after', projection: { state: 1, _id: 0 } })
    t.same(after, { state: 'running' })
    t.equal(await jobs.findOneAndUpdate({ state: 'ready' }, { $set: { state: 'x' } }), null)
    t.equal(await jobs.findOneAndUpdate({ _id: 'new' }, { $set: { p: 0 } }, { upsert: true }), null, "an upsert returns null with 'before'")
    t.same(await jobs.findOneAndUpdate({ _id: 'new2' }, { $set: { p: 0 } }, { upsert: true, returnDocument: 'after' }), { _id: 'new2', p: 0 })
    t.same(await jobs.findOneAndDelete({ state: 'running' }, { sort: { p: 1 } }), { _id: 'j1', p: 2, state: 'running' })
    t.equal(await jobs.findOneAndDelete({ state: 'gone' }), null)
    t.equal(await jobs.countDocuments(), 4)

    const counters = await fresh()
    await counters.insertOne({ _id: 'c', n: 0 })
    const values = await Promise.all(Array.from({ length: 200 }, async () =>
      (await counters.findOneAndUpdate({ _id: 'c' }, { $inc: { n: 1 } }, { returnDocument: 'after' }))?.n as number))
    t.equal(new Set(values).size, 200, 'every caller saw its own value')
    t.same([...values].sort((a, b) => a - b), Array.from({ length: 200 }, (_, i) => i + 1))
    t.equal((await counters.findOne({ _id: 'c' }))?.n, 200)
  })

  t.test('dates round-trip, compare and sort', async (t) => {
    const events = await fresh()
    const at = new Date('2025-03-04T05:06:07.089Z')
    await events.insertOne({ _id: 'e1', at, list: [at], nested: { at } })
    await events.insertOne({ _id: 'e0', at: new Date('1969-12-31T00:00:00Z') })
    const doc = await events.findOne({ _id: 'e1' }) as Document
    t.ok(doc.at instanceof Date && (doc.list as Date[])[0] instanceof Date && (doc.nested as Document).at instanceof Date)
    t.equal((doc.at as Date).getTime(), at.getTime())
    t.same(ids(await events.find({ at: { $lt: at } }).toArray()), ['e0'])
    t.same(ids(await events.find({ 'nested.at': at }).toArray()), ['e1'])
    t.same(ids(await events.find({ at: { $gte: new Date(0) } }).toArray()), ['e1'])
    t.same((await events.find({}, { sort: { at: -1 } }).toArray()).map((event) => event._id), ['e1', 'e0'])
    t.equal(await events.countDocuments({ at: at.toISOString() }), 0, 'a date is not its ISO string')
  })

  t.test('invalid filters and updates are QueryErrors with a path', async (t) => {
    const docs = await fresh()
    await docs.insertOne({ _id: 'x', n: 1 })
    const refusals: Array<[string, () => Promise<unknown>, string]> = [
      ['unknown operator', async () => await docs.find({ n: { $foo: 1 } }).toArray(), '$foo'],
      ['unsupported top-level operator', async () => await docs.findOne({ $where: 'true' }), '$where'],
      ['$in needs an array', async () => await docs.countDocuments({ n: { $in: 1 } }), '$in'],
      ['$or needs an array', async () => await docs.deleteMany({ $or: { n: 1 } }), '$or'],
      ['a replacement document', async () => await docs.updateOne({ _id: 'x' }, { n: 2 }), 'update'],
      ['unsupported update operator', async () => await docs.updateMany({}, { $rename: { n: 'm' } }), '$rename'],
      ['conflicting update paths', async () => await docs.updateOne({}, { $set: { a: 1, 'a.b': 2 } }), 'a'],
      ['bad sort direction', async () => await docs.find({}, { sort: { n: 2 as 1 } }).toArray(), 'n']
    ]
    for (const [name, run, fragment] of refusals) {
      const error = await run().then(() => null, (error: unknown) => error)
      t.ok(error instanceof QueryError, `${name} is a QueryError`)
      if (error instanceof QueryError) t.ok(error.path.includes(fragment), `${name}: path ${error.path} names ${fragment}`)
    }
    t.same(await docs.findOne({ _id: 'x' }), { _id: 'x', n: 1 }, 'nothing changed')
  })

  t.test('collections are listed and dropped', async (t) => {
    const store = await openStore()
    const name = `conf_${newId()}`
    await store.collection(name).insertOne({ a: 1 })
    t.ok((await store.listCollections()).includes(name))
    t.equal(await store.dropCollection(name), true)
    t.notOk((await store.listCollections()).includes(name))
    t.equal(await store.collection(name).countDocuments(), 0)
    t.equal(await store.collection(name).findOne({ _id: 'x' }), null)
    await store.ping()
  })

  await parityConformance(t, openStore)
  await boundsConformance(t, openStore)
}
