import t from 'tap'
import { openSqliteStore } from '../../../services/store/sqlite/index.js'
import { SCAN_READS, SCAN_WINDOW_MAX } from '../../../services/store/sqlite/query.js'
import { scanByQueries } from '../../../services/store/scan.js'
import { QueryError } from '../../../services/store/errors.js'
import type { Document, Filter, ScanOptions, SharedReads, Sort, Store, WithId } from '../../../services/store/types.js'

/**
 * The embedded engine answers a bounded scan from its document cache when it
 * can (selectScan) and by two queries otherwise (scanByQueries, which MongoDB
 * always runs). Both must give the same page, whatever the filter, the window
 * and what is cached; these tests compare them over random documents and
 * filters, with writes between pages.
 */

/** A small seeded generator (mulberry32), so a failure can be replayed. */
function random (seed: number): () => number {
  let state = seed
  return () => {
    state = (state + 0x6d2b79f5) | 0
    let x = Math.imul(state ^ (state >>> 15), 1 | state)
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296
  }
}

type Random = () => number
const pick = <V>(next: Random, values: readonly V[]): V => values[Math.floor(next() * values.length)]

const CATEGORIES = ['rare', 'common', 'Rare', 'rare ', '']

function randomDoc (next: Random, i: number): Document {
  const doc: Document = { _id: `d${String(Math.floor(next() * 1e6)).padStart(6, '0')}-${i}` }
  if (next() < 0.9) doc.category = pick(next, [...CATEGORIES, ['rare', 'x'], null, 3])
  if (next() < 0.8) doc.price = Math.floor(next() * 10)
  if (next() < 0.5) doc.tags = Array.from({ length: Math.floor(next() * 3) }, () => pick(next, ['a', 'b', 'rare']))
  if (next() < 0.5) doc.spec = { size: Math.floor(next() * 4), note: pick(next, ['rare', 'plain']) }
  if (next() < 0.2) doc.when = new Date(1_700_000_000_000 + Math.floor(next() * 10) * 1000)
  return doc
}

function randomClause (next: Random): Filter {
  switch (Math.floor(next() * 11)) {
    case 0: return { category: pick(next, CATEGORIES) }
    case 1: return { category: { $in: [pick(next, CATEGORIES), pick(next, CATEGORIES)] } }
    case 2: return { price: { [pick(next, ['$gt', '$gte', '$lt', '$lte', '$ne'])]: Math.floor(next() * 10) } }
    case 3: return { tags: pick(next, ['a', 'b', 'rare']) }
    case 4: return { 'spec.size': { $lte: Math.floor(next() * 4) } }
    case 5: return { category: { $exists: next() < 0.5 } }
    case 6: return { 'spec.note': { $regex: '^ra' } }
    case 7: return { $or: [randomClause(next), randomClause(next)] }
    case 8: return { category: null }
    case 9: return { when: { $gte: new Date(1_700_000_000_000 + Math.floor(next() * 10) * 1000) } }
    default: return { price: { $in: [Math.floor(next() * 10), null] } }
  }
}

function randomFilter (next: Random): Filter {
  const filter = randomClause(next)
  return next() < 0.3 ? { $and: [filter, randomClause(next)] } : filter
}

interface Scan { window: Filter, filter: Filter, options: ScanOptions<Document> }

/** A scan as the records service asks for one: after a cursor on `_id`, in either direction, with a rule in the window or not. */
function scanAfter (after: string | null, direction: 1 | -1, rule: Filter, filter: Filter, examine: number, skip: number, limit: number): Scan {
  const range = (through: string | null): Filter => {
    const bounds: Record<string, string> = {}
    if (after !== null) bounds[direction === 1 ? '$gt' : '$lt'] = after
    if (through !== null) bounds[direction === 1 ? '$lte' : '$gte'] = through
    return Object.keys(bounds).length === 0 ? {} : { _id: bounds }
  }
  return {
    window: { $and: [range(null), rule] },
    filter: { $and: [filter, rule] },
    options: { sort: { _id: direction }, examine, skip, limit, query: (last) => ({ $and: [filter, rule, range(last === null ? null : last._id as string)] }) }
  }
}

/** The collection's shared reads, counting the queries a scan falls back to. */
function counted (store: Store, name: string): { reads: SharedReads<Document>, queries: () => number } {
  const reads = store.extensions.shared(name)
  const find = reads.find
  let queries = 0
  reads.find = (filter, options) => { queries++; return find(filter, options) }
  return { reads, queries: () => queries }
}

function ids (docs: Array<WithId<Document>>): string[] {
  return docs.map((doc) => doc._id)
}

t.test('random filters and windows: the page from memory is the page the queries give, writes between pages included', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  const next = random(15)
  const collection = store.collection('items')
  await collection.insertMany(Array.from({ length: 400 }, (_, i) => randomDoc(next, i)))
  const { reads, queries } = counted(store, 'items')
  let fromMemory = 0
  for (let round = 0; round < 300; round++) {
    const all = ids(await collection.find({}, { sort: { _id: 1 } }).toArray())
    const direction = next() < 0.7 ? 1 : -1
    const after = next() < 0.3 ? null : pick(next, all)
    const rule = next() < 0.7 ? {} : randomClause(next)
    const scan = scanAfter(after, direction, rule, randomFilter(next), pick(next, [1, 7, 40, 150]), pick(next, [0, 0, 2]), pick(next, [1, 5, 21]))
    const before = queries()
    const page = await reads.scan(scan.window, scan.filter, scan.options)
    const answeredFromMemory = queries() === before
    if (answeredFromMemory) fromMemory++
    const queried = await scanByQueries(reads, scan.window, scan.options)
    t.same(ids(page.docs), ids(queried.docs), `round ${round}: the page`)
    t.equal(page.last?._id, queried.last?._id, `round ${round}: the window's last document`)
    if (answeredFromMemory) t.ok(page.docs.every((doc) => Object.isFrozen(doc)), 'from memory: the cache\'s shared instances, frozen')
    // Writes between pages: changed, new and removed documents, none of them cached until read again.
    if (round % 10 === 9) {
      await collection.updateMany({ price: Math.floor(next() * 10) }, { $set: { category: pick(next, CATEGORIES) } })
      await collection.insertOne(randomDoc(next, 1000 + round))
      await collection.deleteOne({ _id: pick(next, all) })
    }
  }
  t.ok(fromMemory > 100, `most scans came from memory (${fromMemory} of 300)`)
})

t.test('a window mostly not cached is queried, caching part of it, until it can be answered from memory', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  const collection = store.collection('items')
  await collection.insertMany(Array.from({ length: 3 * SCAN_READS }, (_, i) => ({ _id: `i${String(i).padStart(4, '0')}`, category: i % 10 === 3 ? 'rare' : 'common' })))
  const { reads, queries } = counted(store, 'items')
  const scan = scanAfter(null, 1, {}, { category: 'rare' }, 2 * SCAN_READS + 1, 0, 21)
  const expected = await scanByQueries(reads, scan.window, scan.options)
  t.equal(expected.last?._id, `i${String(2 * SCAN_READS).padStart(4, '0')}`)
  const started = queries()
  // The queries above cached only what they returned: the matches and the window's last document.
  const first = await reads.scan(scan.window, scan.filter, scan.options)
  t.equal(queries() - started, 2, 'queried')
  t.same(ids(first.docs), ids(expected.docs))
  const second = await reads.scan(scan.window, scan.filter, scan.options)
  t.equal(queries() - started, 2, 'the window is cached now: no query')
  t.same(ids(second.docs), ids(expected.docs))
  t.equal(second.last, first.last, 'the same shared instance of the last document')
  await collection.insertOne({ _id: 'i0000a', category: 'rare' })
  const afterInsert = await reads.scan(scan.window, scan.filter, scan.options)
  t.equal(queries() - started, 2, 'a new document is read, the rest stays cached')
  t.same(ids(afterInsert.docs), ids((await scanByQueries(reads, scan.window, scan.options)).docs))
  t.equal(afterInsert.docs[0]._id, 'i0000a')
})

t.test('scans the cache cannot answer, and scans refused', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  const collection = store.collection('items')
  const { reads, queries } = counted(store, 'items')
  const sorted = scanAfter(null, 1, {}, { category: 'rare' }, 10, 0, 5)
  t.same(await reads.scan(sorted.window, sorted.filter, sorted.options), { docs: [], last: null }, 'a collection not created yet holds nothing')
  await collection.insertMany([{ _id: 'a', price: 2, category: 'rare' }, { _id: 'b', price: 1, category: 'rare' }, { _id: 'c', category: 'common' }])
  const bySort = { ...sorted.options, sort: { price: 1, _id: 1 } as Sort, query: () => ({ category: 'rare' }) }
  const before = queries()
  t.same(ids((await reads.scan({}, { category: 'rare' }, bySort)).docs), ['b', 'a'], 'a field order SQL cannot give exactly is queried')
  t.equal(queries() - before, 2)
  const large = await reads.scan({}, { category: 'rare' }, { ...sorted.options, examine: SCAN_WINDOW_MAX + 1, query: () => ({ category: 'rare' }) })
  t.same(ids(large.docs), ['a', 'b'], 'a window too large to cache is queried')
  t.equal(queries() - before, 4)
  const never = scanAfter(null, 1, { _id: { $in: [] } }, { category: 'rare' }, 10, 0, 5)
  t.same(await reads.scan(never.window, never.filter, never.options), { docs: [], last: null }, 'a window nothing can match')
  const loose = await reads.scan({ 'tags.0': { $exists: false } }, { category: 'rare' }, { ...sorted.options, query: () => ({ category: 'rare', 'tags.0': { $exists: false } }) })
  t.same(ids(loose.docs), ['a', 'b'], 'a window SQL selects only loosely is queried')
  const everything = await reads.scan({}, {}, { ...sorted.options, limit: 0, examine: 2 })
  t.same([ids(everything.docs), everything.last?._id], [['a', 'b'], 'b'], 'limit 0 is no limit, as for find')
  const refused = async (scan: Promise<unknown>, path: string, message: string): Promise<void> => {
    const error = await scan.then(() => null, (error: unknown) => error)
    t.ok(error instanceof QueryError, message)
    t.equal((error as QueryError).path, path)
  }
  await refused(reads.scan({}, {}, { ...sorted.options, examine: 0 }), 'options.examine', 'a scan examines at least one document')
  await refused(reads.scan({}, { price: { $bad: 1 } }, sorted.options), 'filter.price.$bad', 'the filter is validated')
  await refused(reads.scan({ price: { $bad: 1 } }, {}, sorted.options), 'filter.price.$bad', 'and the window')
  await refused(reads.scan({}, {}, { ...sorted.options, skip: -1 }), 'options.skip', 'and the counts')
})
