import t from 'tap'
import type Database from 'better-sqlite3'
import { openSqliteStore } from '../../../services/store/sqlite/index.js'
import { parseTextQuery, TEXT_RANK_WINDOW } from '../../../services/store/text-search.js'
import type { Document } from '../../../services/store/types.js'

/**
 * A scoped text index's rows per scope value (services/store/sqlite/text-objects.ts), kept by its triggers, and the
 * search that matches the words alone when the scope values asked for hold every row (text-index.ts).
 */

type Part = Document & { part?: unknown, owner: string, title: string }

interface Internals { connection: { db: Database.Database, statement: (sql: string) => unknown } }

/** The rows per scope token as the index keeps them, and as the documents say they should be. */
function scopeRows (db: Database.Database): { kept: Record<string, number>, actual: Record<string, number> } {
  const kept = Object.fromEntries((db.prepare('SELECT token, rows FROM "s|parts|scopes" WHERE rows > 0 ORDER BY token').raw().all() as Array<[string, number]>))
  const actual: Record<string, number> = {}
  for (const [doc] of db.prepare('SELECT doc FROM "c|parts"').raw().all() as Array<[string]>) {
    const part = (JSON.parse(doc) as { part?: unknown }).part
    const token = 's' + (typeof part === 'string' ? Buffer.from(part, 'utf8').toString('hex') : '')
    actual[token] = (actual[token] ?? 0) + 1
  }
  return { kept, actual: Object.fromEntries(Object.entries(actual).sort(([a], [b]) => a < b ? -1 : 1)) }
}

t.test('the rows per scope value follow inserts, updates, deletes, a rebuild and an index made before they were kept', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  const { db } = (store as unknown as Internals).connection
  const parts = store.collection<Part>('parts')
  await parts.insertMany([{ _id: 'before', part: 'a', owner: 'x', title: 'written before the index' }, { _id: 'none', owner: 'x', title: 'no scope value' }])
  const text = store.extensions.text<Part>('parts')
  const spec = { fields: { title: 1 }, scope: 'part' }
  await text.ensure(spec)
  const same = (what: string): void => { const { kept, actual } = scopeRows(db); t.same(kept, actual, what) }
  same('filled with the index')
  await parts.insertOne({ _id: 'one', part: 'a', owner: 'x', title: 'heron' })
  await parts.insertMany(Array.from({ length: 5 }, (_, i) => ({ _id: `b${i}`, part: 'b', owner: 'x', title: `heron ${i}` })))
  same('inserts')
  await parts.updateOne({ _id: 'one' }, { $set: { title: 'heron again' } })
  same('a text change keeps the scope\'s rows')
  await parts.updateOne({ _id: 'b0' }, { $set: { part: 'a' } })
  await parts.updateOne({ _id: 'none' }, { $set: { part: 'c' } })
  same('a scope change moves the row')
  await parts.updateOne({ _id: 'b1' }, { $set: { owner: 'y' } })
  await parts.deleteOne({ _id: 'b2' })
  await parts.deleteMany({ part: 'c' })
  same('deletes')
  t.equal(await text.rebuild(), 6)
  same('a rebuild')
  // A file whose index was made before the rows were kept: ensure() with the same spec makes the index again.
  db.exec('DROP TABLE "s|parts|scopes"')
  await text.ensure(spec)
  same('made again by ensure')
  t.same((await text.search(parseTextQuery('heron'), {}, { scope: ['a', 'b'] })).map((hit) => hit.doc._id).sort(), ['b0', 'b1', 'b3', 'b4', 'one'])
  await store.collection('parts').drop()
  await parts.insertOne({ _id: 'after', part: 'a', owner: 'x', title: 'heron' })
  same('a dropped collection written again')
})

t.test('scope values holding every row: the words are matched alone, one statement a window, with the scoped match\'s answers', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  const internals = (store as unknown as Internals).connection
  const parts = store.collection<Part>('parts')
  // More than two windows of matches in `a`, some in `b`, and one row of `c` without the word.
  const matches = TEXT_RANK_WINDOW * 2 + 130
  await parts.insertMany(Array.from({ length: matches }, (_, i) => ({ _id: `a${String(i).padStart(5, '0')}`, part: i % 7 === 0 ? 'b' : 'a', owner: i % 3 === 0 ? 'other' : 'mine', title: i % 5 === 0 ? 'heron heron' : `heron ${i}` })))
  await parts.insertOne({ _id: 'c', part: 'c', owner: 'mine', title: 'egret' })
  const text = store.extensions.text<Part>('parts')
  await text.ensure({ fields: { title: 1 }, scope: 'part' })
  const matched: string[] = []
  const statements: string[] = []
  const statement = internals.statement.bind(internals)
  internals.statement = (sql: string) => {
    const prepared = statement(sql) as Record<'all' | 'get' | 'iterate', (...params: unknown[]) => unknown>
    if (!sql.includes('MATCH')) return prepared
    for (const method of ['all', 'get', 'iterate'] as const) {
      const original = prepared[method].bind(prepared)
      prepared[method] = (...params: unknown[]) => { statements.push(sql); matched.push(String(params[0])); return original(...params) }
    }
    return prepared
  }
  const answers = async (scope: string[], query = 'heron'): Promise<unknown> => {
    const pages = []
    for (const [skip, cap] of [[0, 0], [TEXT_RANK_WINDOW - 10, 100], [TEXT_RANK_WINDOW * 2, 2_000]]) {
      const found = await text.searchCounted(parseTextQuery(query), { owner: 'mine' }, { scope, skip, limit: 20, cap })
      pages.push({ count: found.count, hits: found.hits.map((hit) => [hit.doc._id, hit.score]) })
    }
    return { pages, count: await text.count(parseTextQuery(query), {}, { scope }) }
  }
  for (const query of ['heron', 'her']) {
    statements.length = 0
    matched.length = 0
    const scoped = await answers(['a', 'b'], query)
    t.ok(matched.some((match) => match.includes('{sc}')), `${query}: \`c\` holds a row, so \`a\` and \`b\` are matched by their tokens`)
    statements.length = 0
    matched.length = 0
    const every = await answers(['a', 'b', 'c'], query)
    t.notOk(matched.some((match) => match.includes('{sc}')), `${query}: scope values holding every row put no token in the match`)
    t.notOk(statements.some((sql) => sql.includes('SELECT rowid FROM')), `${query}: each window found and scored by one statement`)
    t.same(every, scoped, `${query}: the same pages, scores and counts`)
  }
  t.same(await text.search(parseTextQuery('heron'), {}, { scope: ['c'] }), [], 'a scope of other rows still narrows')
  matched.length = 0
  t.same(await text.searchCounted(parseTextQuery('heron'), {}, { scope: ['unknown', 'gone'], cap: 10 }), { hits: [], count: 0 })
  t.equal(await text.count(parseTextQuery('heron'), {}, { scope: ['unknown'] }), 0)
  t.same(matched, [], 'scope values holding no row match nothing')
  t.same(await text.search(parseTextQuery('heron'), {}, { scope: [] }), [], 'no scope values, no matches')
  t.equal(await text.count(parseTextQuery('egret'), {}, { scope: ['a', 'b', 'c', 'unknown'] }), 1, 'a value without rows adds none')
})

t.test('counts gone wrong never show another scope\'s rows; triggers an older build made again are made anew by ensure', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  const { db } = (store as unknown as Internals).connection
  const parts = store.collection<Part>('parts')
  const text = store.extensions.text<Part>('parts')
  const spec = { fields: { title: 1 }, scope: 'part' }
  await text.ensure(spec)
  await parts.insertOne({ _id: 'a1', part: 'a', owner: 'x', title: 'secret plan' })
  await parts.insertOne({ _id: 'b1', part: 'b', owner: 'x', title: 'secret too' })
  // As if `b`'s row had been written while the triggers kept no count: `a` seems to hold every row.
  db.exec('UPDATE "s|parts|scopes" SET rows = 0 WHERE token <> \'s61\'')
  t.same((await text.search(parseTextQuery('secret'), {}, { scope: ['a'] })).map((hit) => hit.doc._id), ['a1'], 'only the scope\'s own rows')
  t.same(await text.searchCounted(parseTextQuery('secret'), {}, { scope: ['a'], cap: 10 }).then((found) => [found.count, found.hits.map((hit) => hit.doc._id)]), [1, ['a1']], 'and its count')
  t.equal(await text.count(parseTextQuery('secret'), {}, { scope: ['a'] }), 1)

  // An older build's objects: the table is there, the triggers do not keep it. ensure() with the same spec makes them again.
  for (const suffix of ['i', 'd', 'u']) db.exec(`DROP TRIGGER "s|parts|${suffix}"`)
  db.exec('CREATE TRIGGER "s|parts|i" AFTER INSERT ON "c|parts" BEGIN SELECT 1; END')
  await text.ensure(spec)
  const triggers = db.prepare('SELECT sql FROM sqlite_master WHERE type = \'trigger\' AND name LIKE \'s|parts|%\'').pluck().all() as string[]
  t.equal(triggers.length, 3)
  t.ok(triggers.every((sql) => sql.includes('"s|parts|scopes"')), 'the triggers keep the rows per scope again')
  t.same(db.prepare('SELECT token, rows FROM "s|parts|scopes" ORDER BY token').raw().all(), [['s61', 1], ['s62', 1]], 'counted anew')
})
