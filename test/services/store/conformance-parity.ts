import type { Test } from 'tap'
import { newId } from '../../../services/platform/ids.js'
import {
  DuplicateKeyError, IndexConflictError, IndexNotFoundError, InvalidDocumentError, InvalidIndexError, InvalidUpdateError, QueryError
} from '../../../services/store/errors.js'
import type { Document, Filter, Store, StoreCollection } from '../../../services/store/types.js'

type ErrorType = abstract new (...args: any[]) => Error

/**
 * The rules that make the engines agree by construction (issue 16): one
 * semantics for multi-document writes, one document check, one set of index
 * rules, one reading of patterns, and the small edges of the driver's
 * contract. Part of the conformance suite, so every reachable engine runs it.
 */
export async function parityConformance (t: Test, openStore: () => Promise<Store>): Promise<void> {
  const fresh = async <T extends Document = Document>(): Promise<StoreCollection<T>> => (await openStore()).collection<T>(`conf_${newId()}`)
  const failure = async (run: () => Promise<unknown>): Promise<unknown> => await (async () => await run())().then(() => null, (error: unknown) => error)
  const ids = (docs: Document[]): string[] => docs.map((doc) => doc._id as string).sort()

  t.test('multi-document writes are all-or-nothing', async (t) => {
    const users = await fresh()
    await users.createIndex({ email: 1 }, { unique: true })
    await users.insertOne({ _id: 'taken', email: 'taken@x' })
    const inserted = await failure(async () => await users.insertMany([{ _id: 'm1', email: 'new@x' }, { _id: 'm2', email: 'taken@x' }, { _id: 'm3', email: 'other@x' }])) as DuplicateKeyError
    t.ok(inserted instanceof DuplicateKeyError, 'insertMany meeting a duplicate')
    t.same([inserted.index, inserted.keyValue], ['email_1', { email: 'taken@x' }], 'names the index and the key value')
    t.same(ids(await users.find({}).toArray()), ['taken'], 'and inserts none of the batch, not even the documents before the duplicate')

    await users.insertMany([{ _id: 'u1', email: 'a@x', group: 1, version: 1 }, { _id: 'u2', email: 'b@x', group: 1, version: 1 }])
    const updated = await failure(async () => await users.updateMany({ group: 1 }, { $set: { email: 'same@x' }, $inc: { version: 1 } }))
    t.ok(updated instanceof DuplicateKeyError, 'updateMany giving two documents one unique key')
    t.same(await users.find({ group: 1 }, { sort: { _id: 1 } }).toArray(), [
      { _id: 'u1', email: 'a@x', group: 1, version: 1 }, { _id: 'u2', email: 'b@x', group: 1, version: 1 }
    ], 'leaves the first document unchanged too (no version bump)')

    const mixed = await fresh()
    await mixed.insertMany([{ _id: 'a', n: 1 }, { _id: 'b', n: 'one' }])
    t.ok(await failure(async () => await mixed.updateMany({}, { $inc: { n: 1 } })) instanceof InvalidUpdateError, 'updateMany that cannot apply to the second document')
    t.same(await mixed.find({}, { sort: { _id: 1 } }).toArray(), [{ _id: 'a', n: 1 }, { _id: 'b', n: 'one' }], 'changes neither')
  })

  t.test('small contract edges', async (t) => {
    const store = await openStore()
    const docs = await fresh()
    t.same(await docs.insertMany([]), { acknowledged: true, insertedCount: 0, insertedIds: {} }, 'insertMany([]) is acknowledged with no ids')
    t.equal(await docs.drop(), false, 'dropping a collection that does not exist is no error')
    t.equal(await store.dropCollection(`conf_${newId()}`), false, 'nor through the store')
    await docs.insertMany([{ n: 1 }, { n: 2 }, { n: 3 }])
    t.equal(await docs.countDocuments({}, { limit: 0 }), 3, 'countDocuments with limit 0 counts everything, as find reads limit 0')
    t.equal(await docs.countDocuments({}, { skip: 1, limit: 0 }), 2)
    t.ok(await failure(async () => await docs.countDocuments({}, { limit: -1 })) instanceof QueryError, 'a negative limit is refused')
    t.ok(await failure(async () => await docs.find({}, { skip: 1.5 }).toArray()) instanceof QueryError, 'a fractional skip is refused')
    t.equal(await docs.drop(), true)
    t.equal(await docs.countDocuments(), 0)
  })

  t.test('documents are checked alike before either engine stores them', async (t) => {
    const docs = await fresh()
    await docs.insertOne({ _id: 'keep', n: 1, list: [1] })
    const nested = (levels: number): Document => levels <= 1 ? { leaf: 1 } : { down: nested(levels - 1) }
    const refusals: Array<[string, () => Promise<unknown>, string]> = [
      ['a $-prefixed name', async () => await docs.insertOne({ $where: 1 }), 'document.$where'],
      ['a $-prefixed name in an array element', async () => await docs.insertOne({ list: [{ ok: 1 }, { $bad: 1 }] }), 'document.list[1].$bad'],
      ['a dotted name at depth', async () => await docs.insertOne({ a: { b: { 'c.d': 1 } } }), 'document.a.b.c.d'],
      ['an empty name', async () => await docs.insertOne({ a: { '': 1 } }), 'document.a.'],
      ['NUL in a name', async () => await docs.insertOne({ 'a\0b': 1 }), 'document.a'],
      ['NaN', async () => await docs.insertOne({ n: Number.NaN }), 'document.n'],
      ['Infinity', async () => await docs.insertOne({ n: [1, Infinity] }), 'document.n[1]'],
      ['-Infinity', async () => await docs.insertOne({ n: -Infinity }), 'document.n'],
      ['an invalid Date', async () => await docs.insertOne({ at: new Date(Number.NaN) }), 'document.at'],
      ['a Buffer', async () => await docs.insertOne({ bytes: Buffer.from('x') }), 'document.bytes'],
      ['a Uint8Array', async () => await docs.insertOne({ bytes: new Uint8Array(2) }), 'document.bytes'],
      ['a RegExp', async () => await docs.insertOne({ pattern: /x/ }), 'document.pattern'],
      ['a lone surrogate', async () => await docs.insertOne({ text: 'a\ud800' }), 'document.text'],
      ['a numeric _id', async () => await docs.insertOne({ _id: 7 as unknown as string }), 'document._id'],
      ['an object _id', async () => await docs.insertOne({ _id: { k: 1 } as unknown as string }), 'document._id'],
      ['a null _id', async () => await docs.insertOne({ _id: null as unknown as string }), 'document._id'],
      ['one bad document of many', async () => await docs.insertMany([{ _id: 'fine' }, { n: Number.NaN }]), 'documents[1].n'],
      ['$set of a $-prefixed name', async () => await docs.updateOne({ _id: 'keep' }, { $set: { a: { $x: 1 } } }), 'update.$set.a.$x'],
      ['$set of a dotted name', async () => await docs.updateOne({ _id: 'keep' }, { $set: { a: [{ 'b.c': 1 }] } }), 'update.$set.a[0].b.c'],
      ['$set of NaN', async () => await docs.updateMany({}, { $set: { n: Number.NaN } }), 'update.$set.n'],
      ['$inc by Infinity', async () => await docs.updateOne({ _id: 'keep' }, { $inc: { n: Infinity } }), 'update.$inc.n'],
      ['$push of a Buffer', async () => await docs.updateOne({ _id: 'keep' }, { $push: { list: Buffer.from('x') } }), 'update.$push.list'],
      ['$addToSet $each with NaN', async () => await docs.updateOne({ _id: 'keep' }, { $addToSet: { list: { $each: [2, Number.NaN] } } }), 'update.$addToSet.list.$each[1]'],
      ['$setOnInsert of a numeric _id', async () => await docs.updateOne({ _id: 'none' }, { $setOnInsert: { _id: 5 } }, { upsert: true }), 'update.$setOnInsert._id'],
      ['an upsert seeded with a numeric _id', async () => await docs.updateOne({ _id: 5 }, { $set: { a: 1 } }, { upsert: true }), 'upsert._id'],
      ['an upsert seeded with NaN', async () => await docs.findOneAndUpdate({ n: Number.NaN }, { $set: { a: 1 } }, { upsert: true }), 'upsert.n']
    ]
    for (const [name, run, path] of refusals) {
      const error = await failure(run) as InvalidDocumentError
      t.ok(error instanceof InvalidDocumentError, `${name}: InvalidDocumentError`)
      t.same([error.status, error.code], [400, 'APP_INVALID_DOCUMENT'], `${name}: 400 APP_INVALID_DOCUMENT`)
      t.ok(error.path?.startsWith(path), `${name}: at ${path} (${error.path})`)
    }
    t.same(await docs.find({}).toArray(), [{ _id: 'keep', n: 1, list: [1] }], 'nothing was stored or changed')
    await docs.insertOne({ _id: 'loose', gone: undefined, list: [undefined, 1], deep: nested(20), text: '😀 é' })
    t.same(await docs.findOne({ _id: 'loose' }), { _id: 'loose', list: [null, 1], deep: nested(20), text: '😀 é' }, 'undefined fields are dropped, undefined elements stored as null')
    t.same(ids(await docs.find({ text: '😀 é' }).toArray()), ['loose'])
    t.ok(await failure(async () => await docs.find({ text: 'a\ud800' }).toArray()) instanceof QueryError, 'a lone surrogate in a filter is refused too, after a filter of the same shape passed')
    t.ok(await failure(async () => await docs.countDocuments({ text: { $in: ['x', '\udc00'] } })) instanceof QueryError, 'and in $in')
  })

  t.test('index rules give the same refusals', async (t) => {
    const docs = await fresh()
    t.equal(await docs.createIndex({ a: 1 }), 'a_1')
    t.equal(await docs.createIndex({ a: 1 }), 'a_1', 'the same index again is a no-op')
    t.equal(await docs.createIndex({ _id: 1 }), '_id_', 'so is the id index')
    const refusals: Array<[string, () => Promise<unknown>, ErrorType, string]> = [
      ['a name taken by another key', async () => await docs.createIndex({ b: 1 }, { name: 'a_1' }), IndexConflictError, 'APP_INDEX_CONFLICT'],
      ['a key taken under another name', async () => await docs.createIndex({ a: 1 }, { name: 'other' }), IndexConflictError, 'APP_INDEX_CONFLICT'],
      ['the same key and name, now unique', async () => await docs.createIndex({ a: 1 }, { unique: true }), IndexConflictError, 'APP_INDEX_CONFLICT'],
      ['a numeric path segment', async () => await docs.createIndex({ 'a.0': 1 }), InvalidIndexError, 'APP_INVALID_INDEX'],
      ['a $ segment', async () => await docs.createIndex({ 'a.$b': 1 }), InvalidIndexError, 'APP_INVALID_INDEX'],
      ['a direction other than 1 or -1', async () => await docs.createIndex({ a: 'text' as unknown as 1 }), InvalidIndexError, 'APP_INVALID_INDEX'],
      ['an empty key', async () => await docs.createIndex({}), InvalidIndexError, 'APP_INVALID_INDEX'],
      ['dropping _id_', async () => { await docs.dropIndex('_id_') }, InvalidIndexError, 'APP_INVALID_INDEX'],
      ['dropping an index that does not exist', async () => { await docs.dropIndex('nope') }, IndexNotFoundError, 'APP_INDEX_NOT_FOUND'],
      ['dropping an index of a collection that does not exist', async () => { await (await fresh()).dropIndex('a_1') }, IndexNotFoundError, 'APP_INDEX_NOT_FOUND']
    ]
    for (const [name, run, type, code] of refusals) {
      const error = await failure(run) as { code?: string }
      t.ok(error instanceof type, `${name}: ${type.name}`)
      t.equal(error?.code, code, name)
    }
    const pairs = await fresh()
    await pairs.createIndex({ tags: 1, refs: 1 })
    await pairs.createIndex({ 'items.x': 1, 'items.y': 1 })
    await pairs.insertMany([{ _id: 'one', tags: ['a', 'b'], refs: 'r' }, { _id: 'shared', items: [{ x: 1, y: [1, 2] }, { x: [3], y: 4 }] }])
    const parallel: Array<[string, () => Promise<unknown>]> = [
      ['an insert with two arrays in one compound index', async () => await pairs.insertOne({ tags: ['a'], refs: ['r'] })],
      ['an update making a second array', async () => await pairs.updateOne({ _id: 'one' }, { $set: { refs: ['r', 's'] } })],
      ['arrays forking inside a shared array', async () => await pairs.insertOne({ items: [{ x: [1], y: [2] }] })]
    ]
    for (const [name, run] of parallel) t.ok(await failure(run) instanceof InvalidDocumentError, `${name}: InvalidDocumentError (parallel arrays)`)
    const flat = await fresh()
    await flat.createIndex({ a: 1, b: 1 })
    await flat.insertOne({ _id: 'scalars', a: 1, b: 1 })
    t.ok(await failure(async () => await flat.insertOne({ a: [1], b: [2] })) instanceof InvalidDocumentError, 'the first arrays of a collection that held none, in two fields of one index: InvalidDocumentError')
    await flat.insertOne({ _id: 'one array', a: [1], b: 2 })
    t.equal(await flat.countDocuments(), 2, 'one array is indexed')
    t.same(await pairs.findOne({ _id: 'one' }), { _id: 'one', tags: ['a', 'b'], refs: 'r' }, 'the refused update changed nothing')
    await pairs.insertOne({ _id: 'other', tags: ['z'], other: ['y'] })
    t.ok(await failure(async () => await pairs.createIndex({ tags: 1, other: 1 })) instanceof InvalidIndexError, 'an index over parallel arrays already stored is refused at creation')
    t.notOk((await pairs.listIndexes()).some((index) => index.name === 'tags_1_other_1'), 'and not created')

    const full = await fresh()
    for (let i = 0; i < 63; i++) await full.createIndex({ [`f${i}`]: 1 })
    t.equal((await full.listIndexes()).length, 64, 'a collection holds 64 indexes, _id_ included')
    t.ok(await failure(async () => await full.createIndex({ more: 1 })) instanceof InvalidIndexError, 'and refuses a 65th')
    t.equal(await full.createIndex({ f0: 1 }), 'f0_1', 'an existing one may still be asked for')
  })

  t.test('patterns mean the same on both engines', async (t) => {
    const docs = await fresh()
    await docs.insertMany([
      { _id: 'a', s: 'a' }, { _id: 'nl', s: 'a\n' }, { _id: 'lines', s: 'line1\nline2' }, { _id: 'tab', s: 'x\ty' },
      { _id: 'vt', s: 'x\u000by' }, { _id: 'up', s: 'ABC' }
    ])
    const cases: Array<[string, Filter, string[]]> = [
      ['$ is the end of the text, not before a final newline', { s: { $regex: 'a$' } }, ['a']],
      ['\\z is the end of the text', { s: { $regex: '^a\\z' } }, ['a']],
      ['\\A is the start of the text', { s: { $regex: '\\Aline2' } }, []],
      ['with m, ^ and $ match at line breaks', { s: { $regex: '^line2$', $options: 'm' } }, ['lines']],
      ['with m, $ matches before a newline', { s: { $regex: 'a$', $options: 'm' } }, ['a', 'nl']],
      ['with m, ^ matches after a final newline too', { s: { $regex: '\\n^$', $options: 'm' } }, ['nl']],
      ['\\s is space, tab, CR, LF and FF, not VT', { s: { $regex: 'x\\sy' } }, ['tab']],
      ['a RegExp literal reads the same', { s: /a$/ }, ['a']],
      ['in $in', { s: { $in: [/^a$/, 'ABC'] } }, ['a', 'up']],
      ['in $not', { s: { $not: /a$/ } }, ['lines', 'nl', 'tab', 'up', 'vt']],
      ['x ignores spaces and comments', { s: { $regex: 'A B C # the letters', $options: 'x' } }, ['up']],
      ['i with s', { s: { $regex: 'LINE1.LINE2', $options: 'is' } }, ['lines']],
      ['inline i', { s: { $regex: '(?i)abc' } }, ['up']]
    ]
    for (const [name, filter, expected] of cases) t.same(ids(await docs.find(filter).toArray()), expected, name)
    const refused: Array<[string, Filter]> = [
      ['\\Z', { s: { $regex: 'a\\Z' } }],
      ['\\v', { s: { $regex: '\\v' } }],
      ['\\h', { s: { $regex: '\\h' } }],
      ['\\u escapes', { s: { $regex: '\\u0041' } }],
      ['inline m', { s: { $regex: '(?m)^line2$' } }],
      ['inline x', { s: { $regex: '(?x) a' } }],
      ['{,n}', { s: { $regex: 'a{,2}' } }],
      ['a backreference', { s: { $regex: '(a)\\1' } }],
      ['a lookahead', { s: { $regex: 'a(?=b)' } }],
      ['a flag other than i, m, s, x', { s: { $regex: 'a', $options: 'u' } }],
      ['a RegExp with g', { s: /a/g }]
    ]
    for (const [name, filter] of refused) t.ok(await failure(async () => await docs.find(filter).toArray()) instanceof QueryError, `${name} is refused`)
    const lists = await fresh()
    await lists.insertOne({ _id: 'l', list: ['a', 'a\n', 'b'] })
    await lists.updateOne({ _id: 'l' }, { $pull: { list: /a$/ } })
    t.same((await lists.findOne({ _id: 'l' }))?.list, ['a\n', 'b'], '$pull reads patterns the same way')
  })
}
