import t from 'tap'
import { deepStrictEqual } from 'node:assert/strict'
import fc from 'fast-check'
import { compileFilter } from '../../../services/store/semantics/index.js'
import { openSqliteStore } from '../../../services/store/sqlite/index.js'
import { Connection } from '../../../services/store/sqlite/connection.js'
import { whereOf } from '../../../services/store/sqlite/query.js'
import { compileSqlFilter } from '../../../services/store/sqlite/sql-filter.js'
import { filterContext } from '../../../services/store/sqlite/indexes.js'
import type { Document, Filter } from '../../../services/store/types.js'

/**
 * String equality on an unindexed path is narrowed by a substring search for
 * the string's JSON token in the stored text before SQLite parses the row.
 * That is only sound if the token appears exactly as the stored text spells
 * the string, so the strings here are the ones JSON escapes: quotes,
 * backslashes, control characters, line separators, astral characters, and
 * strings that are themselves another string's token. (Lone surrogates never
 * reach the stored text: both engines refuse them.)
 */
const tricky = fc.constantFrom('rare', '', '"', '\\', '"rare"', 'ra"re', 'a\\"b', '\n', '\u0001', '\u2028', '\u007f', 'x\u{1F600}y', '😀', 'Grüße', 'ab', 'a')
const value: fc.Arbitrary<unknown> = fc.oneof(
  { arbitrary: tricky, weight: 4 },
  fc.integer({ min: 0, max: 3 }),
  fc.constant(null),
  fc.array(tricky, { maxLength: 3 }),
  fc.record({ b: tricky }, { requiredKeys: [] }),
  fc.array(fc.record({ b: tricky }), { maxLength: 2 })
)
const doc = fc.record({ a: value, c: value }, { requiredKeys: [] })
const path = fc.constantFrom('a', 'c', 'a.b')
const clause: fc.Arbitrary<Filter> = fc.oneof(
  fc.tuple(path, tricky).map(([at, operand]) => ({ [at]: operand })),
  fc.tuple(path, fc.constantFrom('$eq', '$ne'), tricky).map(([at, op, operand]) => ({ [at]: { [op]: operand } })),
  fc.tuple(path, fc.constantFrom('$in', '$nin', '$all'), fc.array(tricky, { minLength: 1, maxLength: 3 })).map(([at, op, members]) => ({ [at]: { [op]: members } })),
  fc.tuple(path, tricky).map(([at, operand]) => ({ [at]: { $not: { $eq: operand } } }))
)
const filter: fc.Arbitrary<Filter> = fc.oneof(clause, fc.tuple(clause, clause).map(([x, y]) => ({ $or: [x, y] })), fc.tuple(clause, clause).map(([x, y]) => ({ $and: [x, y] })))

t.test('string equality through the stored-text search gives the semantics\' answer', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  let run = 0
  let matched = 0
  await fc.assert(fc.asyncProperty(fc.array(doc, { maxLength: 8 }), filter, async (docs, query) => {
    const records = store.collection(`texts_${run++}`)
    const stored = docs.map((one, i) => ({ ...one, _id: `d${i}` })) as Document[]
    if (stored.length > 0) await records.insertMany(stored)
    const test = compileFilter(query)
    const expected = stored.filter((one) => test(one)).map((one) => one._id)
    matched += expected.length
    deepStrictEqual((await records.find(query, { sort: { _id: 1 } }).toArray()).map((one) => one._id), expected, JSON.stringify(query))
    deepStrictEqual(await records.countDocuments(query), expected.length, 'count')
    await records.drop()
  }), { numRuns: 400 })
  t.ok(matched > 0, `some documents matched (${matched})`)
})

t.test('a cached plan binds each string\'s own token, even beside a string equal to another\'s token', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  const records = store.collection('tokens')
  await records.insertMany([{ _id: '1', a: 'x' }, { _id: '2', a: '"x"' }, { _id: '3', a: ['y', 'x'] }, { _id: '4', a: 'z' }])
  const cases: Array<[Filter, string[]]> = [
    [{ a: 'x' }, ['1', '3']],
    [{ a: '"x"' }, ['2']],
    [{ a: { $in: ['x', '"x"'] } }, ['1', '2', '3']],
    [{ a: { $in: ['"x"', 'z'] } }, ['2', '4']],
    [{ a: { $ne: 'x' } }, ['2', '4']]
  ]
  for (const [query, ids] of cases) {
    for (let round = 0; round < 2; round++) {
      t.same((await records.find(query, { sort: { _id: 1 } }).toArray()).map((one) => one._id), ids, `${JSON.stringify(query)}, round ${round}`)
    }
  }
  const connection = (store as unknown as { connection: Connection }).connection
  connection.read(() => {
    const meta = connection.collection('tokens')
    if (meta === undefined) throw new Error('no such collection')
    for (const [query] of cases) {
      const fresh = compileSqlFilter(query, filterContext(meta))
      t.same({ ...whereOf(meta, query), texts: undefined, name: undefined }, { ...fresh, texts: undefined, name: undefined }, `${JSON.stringify(query)} compiles as fresh`)
      t.match(fresh.sql, /instr\(doc, \?\)/, 'with the stored-text search')
    }
  })
})

t.test('an indexed path is read through its index, without the stored-text search', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  const records = store.collection('keyed')
  await records.createIndex({ a: 1 })
  await records.insertOne({ a: 'x' })
  const connection = (store as unknown as { connection: Connection }).connection
  connection.read(() => {
    const meta = connection.collection('keyed')
    if (meta === undefined) throw new Error('no such collection')
    t.notMatch(compileSqlFilter({ a: 'x' }, filterContext(meta)).sql, /instr/)
  })
})
