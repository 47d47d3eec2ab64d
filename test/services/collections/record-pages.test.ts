import t from 'tap'
import { openSqliteStore } from '../../../services/store/sqlite/index.js'
import { compileFilter, compileSort, compareValues } from '../../../services/store/semantics/index.js'
import type { Document, Sort } from '../../../services/store/types.js'
import { keysetSegments, readPage, withoutRepeats } from '../../../services/collections/record-pages.js'
import { afterFilter, parseSort, type SortPlan } from '../../../services/collections/query.js'
import { fieldMap } from '../../../services/collections/record-fields.js'
import { NO_FIELDS, type Access } from '../../../services/collections/access.js'
import type { FieldDefinitionT } from '../../../schemas/collections.js'

/**
 * A page after a cursor is read as ranges one after the other (record-pages.ts):
 * together they must be exactly the records afterFilter selects, in the list's
 * order, whatever the cursor's value (tied with others, null, missing) and
 * direction, and a page must run on from one range into the next.
 */
const fields = fieldMap([{ name: 'n', type: 'number' }, { name: 'title', type: 'text' }] as FieldDefinitionT[])
const T0 = Date.UTC(2026, 0, 1)
// Ties on n (i % 7), nulls and missing values, dates with ties too (i % 5).
const DOCS: Document[] = Array.from({ length: 60 }, (_, i) => {
  const doc: Document = { _id: `r${String(i).padStart(2, '0')}`, title: `t${i % 4}`, createdAt: new Date(T0 + (i % 5) * 1000) }
  if (i % 9 === 3) doc.n = null
  else if (i % 9 !== 4) doc.n = i % 7
  return doc
})
const OPEN: Access = { filter: null, check: null, owner: null, userId: null, deny: NO_FIELDS, readonly: NO_FIELDS }

function ordered (docs: Document[], sort: Sort): Document[] {
  const compare = compileSort(sort)
  return [...docs].sort((a, b) => compare(a, b) || compareValues(a._id, b._id))
}

const valuesOf = (doc: Document, plan: SortPlan): unknown[] => plan.keys.map(([key]) => Object.hasOwn(doc, key) ? doc[key] ?? null : null)

t.test('the ranges after a cursor are afterFilter\'s records, in order', async (t) => {
  for (const spec of ['n', '-n', '-createdAt', 'createdAt', 'title,-n', 'id', '-id']) {
    const plan = parseSort(spec, fields)
    const all = ordered(DOCS, plan.sort)
    for (const cursor of all) {
      const after = valuesOf(cursor, plan)
      const want = all.filter(compileFilter(afterFilter(plan.keys, after))).map((doc) => doc._id)
      const got = keysetSegments(plan.keys, after).flatMap((segment) => ordered(DOCS.filter(compileFilter(segment)), plan.sort)).map((doc) => doc._id)
      if (JSON.stringify(got) !== JSON.stringify(want)) t.fail(`${spec} after ${cursor._id as string}: ${JSON.stringify(got)} != ${JSON.stringify(want)}`)
    }
    t.pass(`${spec}: after each of ${all.length} records`)
  }
  t.equal(keysetSegments(parseSort('-n', fields).keys, [3, 'r10']).length, 3, 'descending past a value: the ties, the lower values, then nulls last')
  t.equal(keysetSegments(parseSort('-n', fields).keys, [null, 'r10']).length, 1, 'descending past null: only the tied nulls are left')
  t.equal(keysetSegments(parseSort('title,-n', fields).keys, ['t1', 2, 'r10']).length, 1, 'a sort of two fields keeps one filter')
})

t.test('pages read through the Store, each after the last one\'s cursor, are the whole order', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  await store.collection('items').createIndex({ createdAt: -1, _id: 1 })
  await store.collection('items').insertMany(DOCS.map((doc) => ({ ...doc })))
  const reads = store.extensions.shared('items')
  for (const spec of ['n', '-n', '-createdAt', 'createdAt']) {
    const plan = parseSort(spec, fields)
    for (const limit of [1, 4, 13]) {
      const seen: string[] = []
      let after: unknown[] | null = null
      for (let turn = 0; turn < 100; turn++) {
        const { docs } = await readPage(reads, { filter: {}, access: OPEN, order: plan, after, offset: 0, limit: limit + 1, scanned: false })
        seen.push(...docs.slice(0, limit).map((doc) => doc._id))
        if (docs.length <= limit) break
        after = valuesOf(docs[limit - 1], plan)
      }
      t.same(seen, ordered(DOCS, plan.sort).map((doc) => doc._id), `${spec} by ${limit}`)
    }
  }
})

t.test('a record read by two ranges of one page stays where it was read first', async (t) => {
  t.same(withoutRepeats([{ _id: 'a' }, { _id: 'b' }, { _id: 'a', n: 1 }, { _id: 'c' }, { _id: 'b' }]), [{ _id: 'a' }, { _id: 'b' }, { _id: 'c' }])
  t.same(withoutRepeats([]), [])

  // On MongoDB a write can land between two ranges' reads: here r10 (n 3) moves down to n 0 after the ties are read.
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  await store.collection('items').insertMany(DOCS.map((doc) => ({ ...doc })))
  const shared = store.extensions.shared('items')
  let reads = 0
  const moving: typeof shared = Object.create(shared)
  moving.find = (filter, options) => {
    const cursor = shared.find(filter, options)
    return Object.assign(Object.create(cursor), {
      toArray: async () => {
        const docs = await cursor.toArray()
        if (reads++ === 0) await store.collection('items').updateOne({ _id: 'r10' }, { $set: { n: 0 } })
        return docs
      }
    })
  }
  const plan = parseSort('-n', fields)
  const { docs } = await readPage(moving, { filter: {}, access: OPEN, order: plan, after: [3, 'r03'], offset: 0, limit: 31, scanned: false })
  const ids = docs.map((doc) => doc._id)
  t.equal(new Set(ids).size, ids.length, 'no record twice on the page')
  t.equal(ids.length, 31, 'the page is still full')
  t.equal(ids.indexOf('r10'), 0, 'r10 where the first range read it')
})
