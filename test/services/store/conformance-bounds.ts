import type { Test } from 'tap'
import { newId } from '../../../services/platform/ids.js'
import {
  DocumentTooDeepError, DocumentTooLargeError, InvalidCollectionNameError, InvalidUpdateError, TooManyDocumentsError
} from '../../../services/store/errors.js'
import type { Document, Store, StoreCollection } from '../../../services/store/types.js'

/**
 * The bounds both engines hold documents and writes to (issue 29), decided
 * before either engine is called: a document of 16 MiB or more (as BSON) is
 * 413 APP_DOCUMENT_TOO_LARGE, whether inserted or grown by an update; one
 * deeper than 100 levels is 400 APP_DOCUMENT_TOO_DEEP, a dotted path counting
 * its levels; a collection name either engine could not take is 400
 * APP_INVALID_COLLECTION_NAME; one multi-document write touches at most 10,000
 * documents; -0 is stored as 0; an upsert whose $setOnInsert._id contradicts
 * its filter is refused; long strings are matched by patterns as any others.
 * Part of the conformance suite, so every reachable engine runs it (the
 * MongoDB engine also through the wire-level test double).
 */
export async function boundsConformance (t: Test, openStore: () => Promise<Store>): Promise<void> {
  const fresh = async <T extends Document = Document>(): Promise<StoreCollection<T>> => (await openStore()).collection<T>(`conf_${newId()}`)
  const failure = async (run: () => Promise<unknown>): Promise<unknown> => await (async () => await run())().then(() => null, (error: unknown) => error)
  const nested = (levels: number): Document => levels <= 1 ? { leaf: 1 } : { down: nested(levels - 1) }
  const MiB = 1024 * 1024

  t.test('documents of 16 MiB or more are 413, whether inserted or grown', async (t) => {
    const docs = await fresh()
    // 17 MiB of text in one field; the whole document is a few bytes more.
    const big = 'x'.repeat(17 * MiB)
    const refusals: Array<[string, () => Promise<unknown>]> = [
      ['a 17 MiB insert', async () => await docs.insertOne({ _id: 'big', text: big })],
      ['a 17 MiB document among others', async () => await docs.insertMany([{ _id: 'small' }, { _id: 'big', text: big }])],
      ['exactly 16 MiB, which the driver\'s bulk writes refuse', async () => await docs.insertOne({ _id: 'edge', text: 'y'.repeat(16 * MiB - 30) })],
      ['$set of a 17 MiB value', async () => await docs.updateOne({ _id: 'grow' }, { $set: { text: big } })],
      ['an upsert seeded past 16 MiB', async () => await docs.updateOne({ _id: 'seed', text: big }, { $set: { a: 1 } }, { upsert: true })]
    ]
    await docs.insertOne({ _id: 'grow', parts: [] })
    for (const [name, run] of refusals) {
      const error = await failure(run) as DocumentTooLargeError
      t.ok(error instanceof DocumentTooLargeError, `${name}: DocumentTooLargeError`)
      t.same([error?.status, error?.code], [413, 'APP_DOCUMENT_TOO_LARGE'], `${name}: 413 APP_DOCUMENT_TOO_LARGE`)
    }
    await docs.insertOne({ _id: 'fits', text: 'z'.repeat(16 * MiB - 64) })
    t.equal((await docs.findOne({ _id: 'fits' }))?.text?.toString().length, 16 * MiB - 64, 'just under 16 MiB is stored')
    // Each $push is small; the document they build is not.
    const piece = 'p'.repeat(6 * MiB)
    await docs.updateOne({ _id: 'grow' }, { $push: { parts: piece } })
    await docs.updateOne({ _id: 'grow' }, { $push: { parts: piece } })
    const grown = await failure(async () => await docs.updateOne({ _id: 'grow' }, { $push: { parts: piece } })) as DocumentTooLargeError
    t.same([grown?.status, grown?.code], [413, 'APP_DOCUMENT_TOO_LARGE'], 'an update whose result would pass 16 MiB: 413')
    t.equal(((await docs.findOne({ _id: 'grow' }))?.parts as string[]).length, 2, 'and the document is as it was')
    t.same((await docs.find({}, { projection: { _id: 1 } }).toArray()).map((doc) => doc._id).sort(), ['fits', 'grow'], 'nothing refused was stored')
  })

  t.test('documents deeper than 100 levels are 400 APP_DOCUMENT_TOO_DEEP, dotted paths counted', async (t) => {
    const docs = await fresh()
    await docs.insertOne({ _id: 'deepest', ...nested(100) })
    t.ok(await docs.findOne({ _id: 'deepest' }), 'a document of 100 levels is stored')
    await docs.insertOne({ _id: 'd' })
    const path99 = Array.from({ length: 99 }, (_, i) => `l${i}`).join('.')
    const refusals: Array<[string, () => Promise<unknown>]> = [
      ['a 101-level document', async () => await docs.insertOne(nested(101))],
      ['101 levels in an array', async () => await docs.insertOne({ list: [nested(100)] })],
      ['a dotted $set whose value goes past 100', async () => await docs.updateOne({ _id: 'd' }, { $set: { [path99]: { a: { b: 1 } } } })],
      ['a dotted $set of 101 segments', async () => await docs.updateOne({ _id: 'd' }, { $set: { [`${path99}.x.y`]: 1 } })],
      ['an $inc 101 levels down', async () => await docs.updateOne({ _id: 'd' }, { $inc: { [`${path99}.x.y`]: 1 } })],
      ['a $push past 100 through the array', async () => await docs.updateOne({ _id: 'd' }, { $push: { [path99]: { a: 1 } } })]
    ]
    for (const [name, run] of refusals) {
      const error = await failure(run) as DocumentTooDeepError
      t.ok(error instanceof DocumentTooDeepError, `${name}: DocumentTooDeepError`)
      t.same([error?.status, error?.code], [400, 'APP_DOCUMENT_TOO_DEEP'], `${name}: 400 APP_DOCUMENT_TOO_DEEP`)
    }
    await docs.updateOne({ _id: 'd' }, { $set: { [`${path99}.x`]: 1 } })
    t.ok(await docs.findOne({ _id: 'd', [`${path99}.x`]: 1 }), 'a dotted $set of 100 segments (a value held at level 100) is stored')
  })

  t.test('collection names either engine refuses are refused by both', async (t) => {
    const store = await openStore()
    const bad = ['', 'a$b', '$cmd', 'a..b', '.a', 'a.', 'system.users', 'sqlite_master', 'a\0b', 'n'.repeat(121), 'é'.repeat(61), 'a\ud800']
    for (const name of bad) {
      for (const [how, run] of [['collection', () => store.collection(name)], ['dropCollection', async () => await store.dropCollection(name)], ['sweep', async () => await store.extensions.sweep(name).drop()]] as const) {
        const error = await failure(async () => await run()) as InvalidCollectionNameError
        t.same([error instanceof InvalidCollectionNameError, error?.status, error?.code], [true, 400, 'APP_INVALID_COLLECTION_NAME'], `${JSON.stringify(name)} through ${how}`)
      }
    }
    for (const name of ['plinth_files.files', 'p_1_things', 'é'.repeat(60), 'n'.repeat(120)]) {
      await store.collection(name).insertOne({ _id: 'ok' })
      t.equal(await store.dropCollection(name), true, `${name.slice(0, 20)} is a name both take`)
    }
  })

  t.test('one multi-document write touches at most 10,000 documents', async (t) => {
    const docs = await fresh()
    const many = Array.from({ length: 10_001 }, (_, i) => ({ _id: `d${String(i).padStart(5, '0')}`, n: i }))
    const tooMany = await failure(async () => await docs.insertMany(many)) as TooManyDocumentsError
    t.same([tooMany instanceof TooManyDocumentsError, tooMany?.status, tooMany?.code, tooMany?.details], [true, 413, 'APP_TOO_MANY_DOCUMENTS', { limit: 10_000 }], 'insertMany of 10,001')
    await docs.insertMany(many.slice(0, 10_000))
    await docs.insertOne(many[10_000])
    t.equal(await docs.countDocuments(), 10_001, '10,000 in one insertMany')
    const updated = await failure(async () => await docs.updateMany({}, { $set: { seen: true } })) as TooManyDocumentsError
    t.equal(updated?.code, 'APP_TOO_MANY_DOCUMENTS', 'updateMany over 10,001')
    t.equal(await docs.countDocuments({ seen: true }), 0, 'and nothing changed')
    const deleted = await failure(async () => await docs.deleteMany({ n: { $gte: 0 } })) as TooManyDocumentsError
    t.equal(deleted?.code, 'APP_TOO_MANY_DOCUMENTS', 'deleteMany over 10,001')
    t.equal(await docs.countDocuments(), 10_001, 'and nothing was deleted')
    t.equal((await docs.updateMany({ n: { $lt: 10_000 } }, { $set: { seen: true } })).modifiedCount, 10_000, 'exactly 10,000 may be updated at once')
    const sweep = (await openStore()).extensions.sweep(docs.collectionName)
    t.equal(await sweep.updateMany({}, { $inc: { n: 1 } }), 10_001, 'a sweep updates any number, a page at a time')
    t.equal(await sweep.deleteMany({ n: { $gt: 1 } }), 10_000, 'and deletes them')
    t.same(await docs.find({}).toArray(), [{ _id: 'd00000', n: 1, seen: true }])
    t.equal(await sweep.drop(), true, 'then drops the collection')
    t.equal(await sweep.drop(), false, 'which is gone')
  })

  t.test('-0 is stored as 0, and $set: -0 over 0 changes nothing', async (t) => {
    const docs = await fresh()
    await docs.insertOne({ _id: 'z', v: -0, list: [-0, 1], deep: { v: -0 } })
    const stored = await docs.findOne({ _id: 'z' }) as Document
    t.ok(Object.is(stored.v, 0) && Object.is((stored.list as number[])[0], 0) && Object.is((stored.deep as Document).v, 0), 'an inserted -0 reads back as 0')
    t.equal((await docs.updateOne({ _id: 'z' }, { $set: { v: -0 } })).modifiedCount, 0, '$set: -0 over 0 is no change')
    const after = await docs.findOneAndUpdate({ _id: 'z' }, { $set: { w: -0 }, $push: { list: -0 } }, { returnDocument: 'after' }) as Document
    t.ok(Object.is(after.w, 0) && Object.is((after.list as number[])[2], 0), 'values an update writes are 0 too')
    await docs.updateOne({ _id: 'seeded', v: -0 }, { $inc: { n: -0 } }, { upsert: true })
    const seeded = await docs.findOne({ _id: 'seeded' }) as Document
    t.ok(Object.is(seeded.v, 0) && Object.is(seeded.n, 0), 'an upsert seeds 0 from a filter\'s -0, and $inc by -0 makes 0')
  })

  t.test('an upsert whose $setOnInsert._id contradicts the filter is refused, matched or not', async (t) => {
    const docs = await fresh()
    await docs.insertOne({ _id: 'a', n: 1 })
    for (const filter of [{ _id: 'a' }, { _id: 'b' }]) {
      const error = await failure(async () => await docs.updateOne(filter, { $set: { n: 2 }, $setOnInsert: { _id: 'c' } }, { upsert: true })) as InvalidUpdateError
      t.same([error instanceof InvalidUpdateError, error?.status, error?.code], [true, 400, 'APP_INVALID_UPDATE'], `filter ${filter._id}`)
    }
    t.same(await docs.find({}).toArray(), [{ _id: 'a', n: 1 }], 'nothing written')
    await docs.updateOne({ _id: 'b' }, { $setOnInsert: { _id: 'b', n: 3 } }, { upsert: true })
    t.same(await docs.findOne({ _id: 'b' }), { _id: 'b', n: 3 }, 'the same _id is fine')
  })

  t.test('patterns test strings of any length', async (t) => {
    const docs = await fresh()
    await docs.insertOne({ _id: 'long', s: 'a'.repeat(2 * MiB) + 'z' })
    t.same((await docs.find({ s: { $regex: 'z$' } }, { projection: { _id: 1 } }).toArray()).map((doc) => doc._id), ['long'], 'a 2 Mi-character string is matched')
    t.equal(await docs.countDocuments({ s: /^b/ }), 0, 'and not matched where it should not be')
  })
}
