import t from 'tap'
import { openSqliteStore } from '../../../services/store/sqlite/index.js'
import { planOrder, whereOf } from '../../../services/store/sqlite/query.js'
import { quoteIdentifier } from '../../../services/store/sqlite/names.js'
import { cachedShapeCount } from '../../../services/store/sqlite/plans.js'
import { pageKey } from '../../../services/store/sqlite/page-reads.js'
import { compileFilter, compileSort, compareValues } from '../../../services/store/semantics/index.js'
import type { CollectionMeta } from '../../../services/store/sqlite/connection.js'
import type { Document, Filter, Sort, Store, WithId } from '../../../services/store/types.js'

/**
 * A limited, sorted read walks an index whose leading fields the filter pins
 * and whose next field is the sort's (services/store/sqlite/access-path.ts).
 * The pages must be the ones the semantics give — the same with and without
 * such an index, across keyset cursors — and ties must still go to `_id`.
 */

type Item = Document & { lp: string, rank: number, group: string, n: number, at: Date, gone: boolean, tags: string[] }

const GROUPS = ['a', 'b', 'c', 'd', 'e']
const T0 = Date.UTC(2026, 0, 1)

function items (count: number): Array<WithId<Item>> {
  const made: Array<WithId<Item>> = []
  for (let n = 1; n <= count; n++) {
    // Two projects; `n` is unique within each (as a tracker key's number is); `tie` repeats for the tie-break tests.
    for (const lp of ['p1', 'p2']) made.push({ _id: `${lp}-${String(n).padStart(4, '0')}`, lp, rank: Math.floor(n / 7) % 5, group: GROUPS[n % 5], n, at: new Date(T0 + (n % 60) * 86_400_000), gone: n % 11 === 0, tags: n % 3 === 0 ? ['me'] : ['other'] })
  }
  return made
}

async function open (indexes: Array<{ key: Record<string, 1 | -1>, unique?: boolean }>): Promise<{ store: Store, meta: () => CollectionMeta }> {
  const store = openSqliteStore({ file: ':memory:' })
  const collection = store.collection<Item>('things')
  for (const index of indexes) await collection.createIndex(index.key, { unique: index.unique ?? false })
  await collection.insertMany(items(400))
  // The engine's catalogue, as the planner reads it (the connection is the engine's own).
  const connection = (store as unknown as { connection: { collection: (name: string) => CollectionMeta } }).connection
  return { store, meta: () => connection.collection('things') }
}

/** Every page of `filter` in `sort`, each page after the last document of the one before (a keyset cursor on `n`). */
async function pages (store: Store, filter: Filter, sort: Sort, limit: number): Promise<string[][]> {
  const collection = store.collection<Item>('things')
  const [field] = Object.keys(sort)
  const found: string[][] = []
  let after: WithId<Item> | null = null
  for (;;) {
    const range: Filter = after === null ? {} : { [field]: { [sort[field] === -1 ? '$lt' : '$gt']: after[field as keyof Item] } }
    const page = await collection.find({ $and: [filter, range] }, { sort, limit }).toArray()
    if (page.length === 0) return found
    found.push(page.map((doc) => doc._id))
    after = page[page.length - 1]
  }
}

function expected (filter: Filter, sort: Sort, limit: number): string[][] {
  const test = compileFilter(filter)
  const compare = compileSort(sort)
  const ids = items(400).filter((doc) => test(doc)).sort((a, b) => compare(a, b) || compareValues(a._id, b._id)).map((doc) => doc._id)
  const out: string[][] = []
  for (let i = 0; i < ids.length; i += limit) out.push(ids.slice(i, i + limit))
  return out
}

const LIST: Filter = { $and: [{ lp: 'p1', gone: false }, { $and: [{ group: { $in: ['b', 'c'] } }, { rank: 1 }, { at: { $gt: new Date(T0 + 30 * 86_400_000) } }] }, { $or: [{ tags: 'me' }, { n: { $lt: 50 } }] }] }

t.test('a list pinned on (lp, rank) newest first walks (lp, rank, n); its pages are the semantics\' with and without that index', async (t) => {
  const base = [{ key: { lp: 1, n: 1 } as Record<string, 1 | -1>, unique: true }, { key: { lp: 1, at: 1, _id: 1 } as Record<string, 1 | -1> }]
  const withIndex = await open([...base, { key: { lp: 1, rank: 1, n: 1 } }])
  const without = await open(base)
  t.teardown(async () => { await withIndex.store.close(); await without.store.close() })

  const plan = planOrder(withIndex.meta(), { n: -1 }, LIST, 5)
  t.equal(plan?.index, withIndex.meta().indexes.find((index) => index.name === 'lp_1_rank_1_n_1')?.sqlName, 'the index pinning most fields and giving the order is named')
  t.notOk(plan?.sql.endsWith('id'), '(lp, n) is unique and lp is pinned: no ties, so no _id term the index lacks')
  t.equal(planOrder(withIndex.meta(), { n: -1 }, LIST, 0)?.index, null, 'without a limit SQLite chooses')
  t.equal(planOrder(without.meta(), { n: -1 }, LIST, 5)?.index, without.meta().indexes.find((index) => index.name === 'lp_1_n_1')?.sqlName, 'without it, (lp, n) gives the order')

  for (const sort of [{ n: -1 }, { n: 1 }] as Sort[]) {
    for (const limit of [1, 5, 50]) {
      const want = expected(LIST, sort, limit)
      t.ok(want.length > 1 || limit === 50, 'the filter spans pages')
      t.same(await pages(withIndex.store, LIST, sort, limit), want, `walking the index, ${JSON.stringify(sort)} by ${limit}`)
      t.same(await pages(without.store, LIST, sort, limit), want, `without the index, ${JSON.stringify(sort)} by ${limit}`)
    }
  }
})

t.test('ties on the sort still go to _id: an index without _id is not named where ties can happen', async (t) => {
  const plain = await open([{ key: { lp: 1, rank: 1 } }])
  const withId = await open([{ key: { lp: 1, rank: 1, _id: 1 } }])
  t.teardown(async () => { await plain.store.close(); await withId.store.close() })
  const filter: Filter = { lp: 'p2', gone: false }
  t.equal(planOrder(plain.meta(), { rank: 1 }, filter, 10)?.index, null, 'rank ties; the index cannot order them by _id')
  t.ok(planOrder(plain.meta(), { rank: 1 }, filter, 10)?.sql.endsWith('id'), 'the _id tie-break stays')
  t.equal(planOrder(withId.meta(), { rank: 1 }, filter, 10)?.index, withId.meta().indexes[0].sqlName, 'an index holding _id after the sort field gives the whole order')
  t.equal(planOrder(withId.meta(), { rank: -1 }, filter, 10)?.index, null, 'not for a descending sort whose ties go to _id ascending')
  t.equal(planOrder(withId.meta(), { rank: -1, _id: -1 }, filter, 10)?.index, withId.meta().indexes[0].sqlName, 'but for one whose ties go to _id descending (a backward walk)')
  for (const store of [plain.store, withId.store]) {
    for (const sort of [{ rank: 1 }, { rank: -1 }, { rank: -1, _id: -1 }] as Sort[]) {
      const got = await store.collection<Item>('things').find(filter, { sort, limit: 60 }).toArray()
      t.same(got.map((doc) => doc._id), expected(filter, sort, 60)[0], `${JSON.stringify(sort)}: ties by _id`)
    }
  }
})

t.test('only equalities on array-free indexed paths pin a field', async (t) => {
  const { store, meta } = await open([{ key: { lp: 1, n: 1 }, unique: true }, { key: { tags: 1, n: 1 } }])
  t.teardown(async () => { await store.close() })
  t.equal(planOrder(meta(), { n: 1 }, { tags: 'me' }, 10)?.index, null, 'tags holds arrays: an equality there matches an element, no pinned prefix')
  t.equal(planOrder(meta(), { n: 1 }, { lp: { $in: ['p1', 'p2'] } }, 10)?.index, null, '$in pins nothing')
  t.equal(planOrder(meta(), { n: 1 }, { $or: [{ lp: 'p1' }] }, 10)?.index, null, 'nor does an equality under $or')
  t.ok(planOrder(meta(), { n: 1 }, { lp: { $eq: 'p1' } }, 10)?.index, '$eq does')
  const got = await store.collection<Item>('things').find({ lp: { $eq: 'p1' }, tags: 'me' }, { sort: { n: 1 }, limit: 7 }).toArray()
  t.same(got.map((doc) => doc._id), expected({ lp: 'p1', tags: 'me' }, { n: 1 }, 7)[0])
})

t.test('a conjunction of plain parts is read as one filter: its shape is cached and its page comes from the document cache', async (t) => {
  const { store, meta } = await open([{ key: { lp: 1, n: 1 }, unique: true }, { key: { lp: 1, rank: 1, n: 1 } }])
  t.teardown(async () => { await store.close() })
  const things = store.collection<Item>('things')
  // The tracker's list: the caller's conditions, then the project and defaults, each its own object.
  const list = (rank: number): Filter => ({ $and: [{ $and: [{ group: { $in: ['b', 'c'] } }, { rank }] }, { lp: 'p1', gone: false }] })
  const before = cachedShapeCount(meta())
  for (const rank of [1, 2, 1]) {
    const got = await things.find(list(rank), { sort: { n: -1 }, limit: 9 }).toArray()
    t.same(got.map((doc) => doc._id), expected(list(rank), { n: -1 }, 9)[0], `rank ${rank}: the semantics' page`)
  }
  t.equal(cachedShapeCount(meta()) - before, 1, 'one shape for the three reads: they are compiled once')
  // Two parts naming one field, or a part holding an operator, stay a conjunction (and still answer rightly).
  const split: Filter = { $and: [{ n: { $gt: 10 } }, { n: { $lt: 20 } }, { lp: 'p1' }] }
  t.same((await things.find(split, { sort: { n: -1 }, limit: 5 }).toArray()).map((doc) => doc._id), expected(split, { n: -1 }, 5)[0])

  // A page sorted on a field (ranked in SQL: it could hold objects) is read as row numbers, its documents from the cache.
  const shared = store.extensions.shared<Item>('things')
  const first = await shared.find(list(1), { sort: { n: -1 }, limit: 9 }).toArray()
  const again = await shared.find(list(1), { sort: { n: -1 }, limit: 9 }).toArray()
  t.ok(first.length === 9 && first.every((doc, i) => doc === again[i] && Object.isFrozen(doc)), 'the same frozen instances, not decoded again')
  // An object under the sort field is ordered by the semantics, not as JSON text.
  await things.insertMany([{ _id: 'p1-objb', lp: 'p1', rank: 1, group: 'b', n: { b: 1 } as unknown as number, at: new Date(T0), gone: false, tags: [] }, { _id: 'p1-obja', lp: 'p1', rank: 1, group: 'b', n: { a: 2 } as unknown as number, at: new Date(T0), gone: false, tags: [] }])
  const withObjects = await shared.find(list(1), { sort: { n: -1 }, limit: 3 }).toArray()
  const test = compileFilter(list(1))
  const compare = compileSort({ n: -1 })
  const want = (await things.find({}).toArray()).filter((doc) => test(doc)).sort((a, b) => compare(a, b) || compareValues(a._id, b._id)).slice(0, 3)
  t.same(withObjects.map((doc) => doc._id), want.map((doc) => doc._id), 'the page the semantics give')
  t.same(withObjects.slice(0, 2).map((doc) => doc._id).sort(), ['p1-obja', 'p1-objb'], 'the objects first, newest first')
})

t.test('a shared page through a named index walks the index on its own fields and lets the matcher pick from the cache', async (t) => {
  const { store, meta } = await open([{ key: { lp: 1, n: 1 }, unique: true }, { key: { lp: 1, rank: 1, n: 1 } }])
  t.teardown(async () => { await store.close() })
  const connection = (store as unknown as { connection: { statement: (sql: string) => unknown } }).connection
  const statement = connection.statement.bind(connection)
  const run: string[] = []
  connection.statement = (sql: string) => { run.push(sql); return statement(sql) }
  const shared = store.extensions.shared<Item>('things')
  for (const sort of [{ n: -1 }, { n: 1 }] as Sort[]) {
    for (const limit of [1, 7, 50]) {
      // Each page is asked twice: first with some of its window not cached (perhaps more than a walk reads), then cached.
      for (const pass of ['first', 'again']) {
        const collection = { find: shared.find.bind(shared) } as unknown as Store
        const got = await pages({ collection: () => collection } as unknown as Store, LIST, sort, limit)
        t.same(got, expected(LIST, sort, limit), `${JSON.stringify(sort)} by ${limit}, ${pass}`)
      }
    }
  }
  run.length = 0
  const page = await shared.find(LIST, { sort: { n: -1 }, limit: 5 }).toArray()
  t.same(page.map((doc) => doc._id), expected(LIST, { n: -1 }, 5)[0])
  t.ok(run.length > 0, 'the walk ran SQL')
  t.notOk(run.some((sql) => sql.includes('"group"') || sql.includes('"at"')), 'no statement evaluated the conditions the index does not hold: the matcher decided them')
  // LIST holds an $or, so only the walk's own clause (lp, rank and the cursor's range on n) can have a shape.
  t.ok(cachedShapeCount(meta()) > 0, 'the walk\'s clause has a shape: compiled once per shape, not on every page')
})

t.test('a range on the sort field (a keyset page) is walked in the index\'s order, not sorted whole', async (t) => {
  const { store, meta } = await open([{ key: { at: -1, _id: 1 } }])
  t.teardown(async () => { await store.close() })
  const connection = (store as unknown as { connection: { db: { prepare: (sql: string) => { all: (...params: unknown[]) => Array<{ detail: string }> } } } }).connection
  const bound = new Date(T0 + 30 * 86_400_000)
  const sort: Sort = { at: -1, _id: 1 }
  const plan = (filter: Filter): string => {
    const order = planOrder(meta(), sort, filter, 10)
    const where = whereOf(meta(), filter)
    return connection.db.prepare(`EXPLAIN QUERY PLAN SELECT seq FROM ${quoteIdentifier(meta().table)} WHERE ${where.sql} ORDER BY ${order?.sql ?? ''} LIMIT 10`).all(...where.params).map((row) => row.detail).join('\n')
  }
  // SQLite does not see that an expression column compared by equality is constant: the type rank, or a tied value.
  for (const filter of [{ at: { $lt: bound } }, { at: bound, _id: { $gt: 'p1-0100' } }, { at: { $gte: bound, $lt: new Date(T0 + 40 * 86_400_000) } }] as Filter[]) {
    t.notMatch(plan(filter), /TEMP B-TREE/, `${JSON.stringify(filter)}: the index gives the order`)
    t.match(plan(filter), /USING (COVERING )?INDEX/, 'through the index')
    for (const [direction, limit] of [[sort, 10], [{ at: 1, _id: -1 }, 7], [{ at: 1, _id: 1 }, 300]] as Array<[Sort, number]>) {
      const got = await store.collection<Item>('things').find(filter, { sort: direction, limit }).toArray()
      t.same(got.map((doc) => doc._id), expected(filter, direction, limit)[0] ?? [], `${JSON.stringify(direction)}: the semantics' page`)
    }
  }
  t.match(planOrder(meta(), sort, { at: { $ne: null } }, 10)?.sql, /^\(CASE/, 'a clause that admits several types keeps the rank term')
  t.match(planOrder(meta(), sort, { $or: [{ at: { $lt: bound } }] }, 10)?.sql, /^\(CASE/, 'as does one under $or')
})

t.test('a remembered page is named by its cached clause\'s short name, one name per SQL; a clause not cached by its text', async (t) => {
  const { store, meta } = await open([{ key: { lp: 1, n: 1 } }])
  t.teardown(async () => { await store.close() })
  const order = planOrder(meta(), { n: -1 }, { lp: 'p1' }, 3)
  if (order === null) throw new Error('no order plan')
  const byLp = whereOf(meta(), { lp: 'p1', gone: false })
  const byGroup = whereOf(meta(), { group: 'p1', gone: false })
  const named = pageKey(byLp, order, 0, 3)
  t.ok(named !== null && !named.includes(byLp.sql), 'the key holds the name, not the clause\'s text')
  t.equal(pageKey(whereOf(meta(), { lp: 'p1', gone: false }), order, 0, 3), named, 'the same shape asked again: the same key')
  t.not(pageKey(byGroup, order, 0, 3), named, 'another shape with the same values: another key')
  t.not(byLp.sql, byGroup.sql)
  const unnamed = { sql: byLp.sql, params: byLp.params, exact: true }
  t.ok(pageKey(unnamed, order, 0, 3)?.includes(byLp.sql), 'a clause compiled on its own is keyed by its SQL')
  // Four pages over one collection, each its own rows (a wrong shared key would answer one with another's).
  const things = store.extensions.shared<Item>('things')
  const page = async (filter: Filter): Promise<number[]> => (await things.find(filter, { sort: { n: -1 }, limit: 3 }).toArray()).map((doc) => doc.n)
  for (let i = 0; i < 2; i++) {
    t.same(await page({ lp: 'p1', gone: false }), [400, 399, 398])
    t.same(await page({ lp: 'p2', gone: true }), [396, 385, 374])
    t.same(await page({ group: 'p1', gone: false }), [])
  }
})
