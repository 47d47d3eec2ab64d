import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { openSqliteStore } from '../../../services/store/sqlite/index.js'
import { Connection } from '../../../services/store/sqlite/connection.js'
import { quoteIdentifier } from '../../../services/store/sqlite/names.js'
import { planOrder, whereOf } from '../../../services/store/sqlite/query.js'
import type { Filter, Sort } from '../../../services/store/types.js'

/**
 * The embedded engine's partial indexes (the answers are the conformance
 * suite's): what SQLite's planner makes of them, that a document outside the
 * filter costs no entry, and a file whose catalogue predates them.
 */
const dir = mkdtempSync(join(tmpdir(), 'plinth-partial-'))
t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })

function plan (connection: Connection, filter: Filter, sort: Sort, limit: number): string {
  return connection.read(() => {
    const meta = connection.collection('items')
    if (meta === undefined) throw new Error('no such collection')
    const where = whereOf(meta, filter)
    const order = planOrder(meta, sort, filter, limit)
    if (order === null) throw new Error('this sort is not pushed to SQL')
    const source = order.index === null ? quoteIdentifier(meta.table) : `${quoteIdentifier(meta.table)} INDEXED BY ${quoteIdentifier(order.index)}`
    const sql = `EXPLAIN QUERY PLAN SELECT seq, doc FROM ${source} WHERE ${where.sql} ORDER BY ${order.sql} LIMIT ${limit}`
    return (connection.db.prepare(sql).all(...where.params) as Array<{ detail: string }>).map((row) => row.detail).join(' / ')
  })
}

t.test('a string equality or $in walks the partial index; null, a number and no filter leave it, without an error', async (t) => {
  const file = join(dir, 'plan.db')
  const store = openSqliteStore({ file })
  const items = store.collection('items')
  await items.createIndex({ lp: 1, seq: 1 }, { unique: true })
  await items.createIndex({ lp: 1, cycleId: 1, seq: 1 }, { partialFilterExpression: { cycleId: { $gte: '' } } })
  await items.insertMany(Array.from({ length: 200 }, (_, i) => ({ lp: 'p', seq: i, cycleId: i % 10 === 0 ? `c${i % 3}` : null })))
  const connection = new Connection(file)
  t.teardown(async () => { await connection.close(); await store.close() })
  const newest = { seq: -1 } as Sort
  const sqlName = connection.read(() => connection.collection('items')?.indexes.find((index) => index.name === 'lp_1_cycleId_1_seq_1')?.sqlName) as string
  const partial = new RegExp(`USING INDEX ${sqlName.replace(/[|^]/g, '\\$&')} `)
  t.match(plan(connection, { lp: 'p', cycleId: 'c1' }, newest, 50), partial, 'equality on a string')
  // SQLite refuses INDEXED BY an index whose WHERE the query does not imply ("no query solution").
  const forced = (filter: Filter): number => connection.read(() => {
    const where = whereOf(connection.collection('items')!, filter)
    return connection.db.prepare(`SELECT count(*) FROM ${quoteIdentifier('c|items')} INDEXED BY ${quoteIdentifier(sqlName)} WHERE ${where.sql}`).pluck().get(...where.params) as number
  })
  t.equal(forced({ lp: 'p', cycleId: { $in: ['c1', 'c2'] } }), 13, '$in of strings implies the WHERE')
  t.equal(forced({ cycleId: { $gte: '' } }), 20, 'the index holds the 20 documents with a cycle')
  t.throws(() => forced({ lp: 'p', cycleId: null }), /no query solution/, 'null does not imply it')
  for (const filter of [{ lp: 'p', cycleId: null }, { lp: 'p', cycleId: 7 }, { lp: 'p' }] as Filter[]) {
    t.notMatch(plan(connection, filter, newest, 50), partial, `${JSON.stringify(filter)} cannot use it`)
    t.equal((await items.find(filter, { sort: newest, limit: 50 }).toArray()).length, filter.cycleId === 7 ? 0 : 50, `${JSON.stringify(filter)} is answered`)
  }
  const sql = connection.read(() => connection.db.prepare('SELECT sql FROM sqlite_schema WHERE name = ?').pluck().get(sqlName)) as string
  t.match(sql, / WHERE \(CASE json_type\(doc, '\$\."cycleId"'\).* = 3$/, 'a partial SQLite index')
})

t.test('a catalogue made before partial indexes gains its column and keeps its indexes whole', async (t) => {
  const file = join(dir, 'old.db')
  const old = new Database(file)
  old.exec(`CREATE TABLE _plinth_indexes (
    collection TEXT NOT NULL, name TEXT NOT NULL, key TEXT NOT NULL, is_unique INTEGER NOT NULL, sql_name TEXT NOT NULL, PRIMARY KEY (collection, name))`)
  old.close()
  const store = openSqliteStore({ file })
  t.teardown(async () => { await store.close() })
  const items = store.collection('items')
  await items.createIndex({ lp: 1 })
  await items.createIndex({ lp: 1, cycleId: 1 }, { partialFilterExpression: { cycleId: { $gte: '' } } })
  t.same(await items.listIndexes(), [
    { name: '_id_', key: { _id: 1 }, unique: true },
    { name: 'lp_1', key: { lp: 1 }, unique: false },
    { name: 'lp_1_cycleId_1', key: { lp: 1, cycleId: 1 }, unique: false, partialFilterExpression: { cycleId: { $gte: '' } } }
  ])
  await items.insertOne({ lp: 'p', cycleId: 'c' })
  t.equal(await items.countDocuments({ lp: 'p', cycleId: 'c' }), 1)
})
