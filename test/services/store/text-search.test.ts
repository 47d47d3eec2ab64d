import t from 'tap'
import { deepStrictEqual } from 'node:assert/strict'
import fc from 'fast-check'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { openSqliteStore } from '../../../services/store/sqlite/index.js'
import { parseTextQuery, TEXT_RANK_WINDOW } from '../../../services/store/text-search.js'
import { compileFilter } from '../../../services/store/semantics/index.js'
import type { Document, Filter } from '../../../services/store/types.js'

/**
 * The embedded engine's text index (services/store/sqlite/text-index.ts):
 * kept in step by every write, searched under a filter inside the query,
 * never reading the user's text as FTS5 syntax.
 */

type Note = Document & { owner: string, title: string, body?: string, tags?: string[] }

t.test('the text index follows inserts, updates and deletes, and filters inside the query', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  const notes = store.collection<Note>('notes')
  await notes.insertOne({ _id: 'before', owner: 'a', title: 'Written before the index', body: 'zebra' })
  const text = store.extensions.text<Note>('notes')
  await text.ensure({ fields: { title: 10, body: 1 } })
  await text.ensure({ fields: { title: 10, body: 1 } })
  t.same((await text.search(parseTextQuery('zebra'), {})).map((hit) => hit.doc._id), ['before'], 'documents stored before the index are indexed')

  await notes.insertMany([
    { _id: 'n1', owner: 'a', title: 'Login page crashes', body: 'Steps: open the login page' },
    { _id: 'n2', owner: 'b', title: 'Dashboard', body: 'the login button is grey' },
    { _id: 'n3', owner: 'b', title: 'Crash on export', tags: ['x'] }
  ])
  const hits = await text.search(parseTextQuery('login'), {})
  t.same(hits.map((hit) => hit.doc._id), ['n1', 'n2'], 'a title match ranks above a body match')
  t.equal(hits[0].snippet.field, 'title')
  const [start, end] = hits[0].snippet.highlights[0]
  t.equal(hits[0].snippet.text.slice(start, end), 'Login')
  t.same((await text.search(parseTextQuery('login'), { owner: 'b' })).map((hit) => hit.doc._id), ['n2'], 'the filter applies inside the search')
  t.equal(await text.count(parseTextQuery('login'), { owner: 'b' }), 1)
  t.equal(await text.count(parseTextQuery('login'), {}, { cap: 1 }), 1, 'a count stops at its cap')
  t.equal(await text.count(parseTextQuery('login'), {}, { cap: 5 }), 2, 'a cap above the count changes nothing')
  t.same((await text.search(parseTextQuery('crash '), {})).map((hit) => hit.doc._id).sort(), ['n3'], 'whole words unless the last is being typed')
  t.same((await text.search(parseTextQuery('cras'), {})).map((hit) => hit.doc._id).sort(), ['n1', 'n3'], 'the last word as a prefix')
  t.same((await text.search(parseTextQuery('login'), {}, { skip: 1, limit: 1 })).map((hit) => hit.doc._id), ['n2'])

  await notes.updateOne({ _id: 'n2' }, { $set: { body: 'nothing here' } })
  t.same((await text.search(parseTextQuery('login'), {})).map((hit) => hit.doc._id), ['n1'], 'an update takes the old words out')
  await notes.updateOne({ _id: 'n3' }, { $set: { owner: 'c' } })
  t.same((await text.search(parseTextQuery('export'), { owner: 'c' })).map((hit) => hit.doc._id), ['n3'], 'an update of other fields keeps the words')
  await notes.deleteOne({ _id: 'n1' })
  t.same(await text.search(parseTextQuery('login'), {}), [], 'a delete takes the document out')

  // A filter the SQL cannot decide alone (a pattern) is decided by the matcher, and a page is still full.
  await notes.insertMany(Array.from({ length: 30 }, (_, i) => ({ _id: `m${String(i).padStart(2, '0')}`, owner: i % 3 === 0 ? 'keep' : 'drop', title: `milestone ${i}` })))
  const page = await text.search(parseTextQuery('milestone'), { owner: { $regex: '^ke' } }, { limit: 5, skip: 2 })
  t.equal(page.length, 5)
  t.ok(page.every((hit) => hit.doc.owner === 'keep'))
  t.equal(await text.count(parseTextQuery('milestone'), { owner: { $regex: '^ke' } }), 10)

  t.equal(await text.rebuild(), 33)
  t.equal(await text.count(parseTextQuery('milestone'), {}), 30, 'a rebuild indexes what is stored')
})

t.test('the user text never reaches FTS5 syntax', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  const notes = store.collection<Note>('notes')
  await notes.insertOne({ _id: 'q', owner: 'a', title: 'Quote "unbalanced and NEAR(x y) OR *' })
  const text = store.extensions.text<Note>('notes')
  await text.ensure({ fields: { title: 1 } })
  for (const typed of ['"unbalanced', 'NEAR(x y)', 'a OR b', '*', 'title:quote', '^quote', '"', '(', 'AND', 'NOT quote']) {
    await t.resolves(text.search(parseTextQuery(typed), {}), typed)
  }
  t.same((await text.search(parseTextQuery('"unbalanced'), {})).map((hit) => hit.doc._id), ['q'])
  t.same(await text.search(parseTextQuery('"'), {}), [], 'no words, no hits')
})

t.test('within: a document whose parent matches the parent filter', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  await store.collection('items').insertMany([{ _id: 'i1', open: true }, { _id: 'i2', open: false }])
  await store.collection('comments').insertMany([{ _id: 'c1', itemId: 'i1', body: 'walrus' }, { _id: 'c2', itemId: 'i2', body: 'walrus walrus' }])
  const text = store.extensions.text('comments')
  await text.ensure({ fields: { body: 1 } })
  const hits = await text.search(parseTextQuery('walrus'), {}, { within: { collection: 'items', field: 'itemId', filter: { open: true } } })
  t.same(hits.map((hit) => [hit.doc._id, hit.parent?._id]), [['c1', 'i1']])
})

t.test('the index survives a drop and is shared by processes on one file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plinth-text-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  const file = join(dir, 'plinth.db')
  const one = openSqliteStore({ file })
  const two = openSqliteStore({ file })
  t.teardown(async () => { await one.close(); await two.close() })
  await one.extensions.text('notes').ensure({ fields: { title: 1 } })
  await two.collection('notes').insertOne({ _id: 'a', title: 'heron' })
  t.equal(await one.extensions.text('notes').count(parseTextQuery('heron'), {}), 1, 'another process\'s write is indexed by the trigger')
  await one.dropCollection('notes')
  await one.collection('notes').insertOne({ _id: 'b', title: 'heron again' })
  t.same((await two.extensions.text('notes').search(parseTextQuery('heron'), {})).map((hit) => hit.doc._id), ['b'])
})

t.test('a common word: the filter reads the best-ranked rows until the page is full, not every match', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  const notes = store.collection<Note>('notes')
  // 400 matches (one window: TEXT_RANK_WINDOW is 500); one in three is owned by `a`, and the titles that say the word twice rank first.
  t.ok(TEXT_RANK_WINDOW >= 400)
  await notes.insertMany(Array.from({ length: 400 }, (_, i) => ({ _id: `n${String(i).padStart(3, '0')}`, owner: i % 3 === 0 ? 'a' : 'b', title: i % 50 === 0 ? 'otter otter' : `otter ${i}` })))
  const text = store.extensions.text<Note>('notes')
  await text.ensure({ fields: { title: 1 } })
  // What the engine's statements are handed: the row numbers each filter check covers.
  const connection = (store as unknown as { connection: { statement: (sql: string) => unknown } }).connection
  const checked: number[] = []
  const watched = new WeakSet()
  const statement = connection.statement.bind(connection)
  connection.statement = (sql: string) => {
    const prepared = statement(sql) as { all: (...params: unknown[]) => unknown[] }
    if (!sql.includes('"owner"') || !sql.includes('json_each(?)') || watched.has(prepared)) return prepared
    watched.add(prepared)
    const all = prepared.all.bind(prepared)
    prepared.all = (...params: unknown[]) => { checked.push(...JSON.parse(params[0] as string) as number[]); return all(...params) }
    return prepared
  }
  const page = await text.search(parseTextQuery('otter '), { owner: 'a' }, { skip: 2, limit: 5 })
  t.same(page.map((hit) => hit.doc._id), ['n300', 'n003', 'n006', 'n009', 'n012'], 'ranked first the double words, then in insertion order, under the filter')
  t.ok(checked.length > 0 && checked.length <= 64, `the filter checked ${checked.length} of 400 matching rows`)
  t.same((await text.search(parseTextQuery('otter '), { owner: 'a' }, { skip: 120, limit: 20 })).map((hit) => hit.doc._id), ['n360', 'n363', 'n366', 'n369', 'n372', 'n375', 'n378', 'n381', 'n384', 'n387', 'n390', 'n393', 'n396', 'n399'], 'a page past several batches holds what remains')
  t.equal(await text.count(parseTextQuery('otter '), { owner: 'a' }), 134)
  const everyHit = (await text.search(parseTextQuery('otter '), { owner: 'a' }, {})).map((hit) => hit.doc._id)
  t.equal(everyHit.length, 134, 'no limit: every match under the filter, across every batch')
  t.equal(new Set(everyHit).size, 134, 'no limit: each match once')
})

t.test('snippets are cut from the stored text as on MongoDB: the matched word with its context, every matched word marked', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  const words = Array.from({ length: 40 }, (_, i) => `w${i}`)
  words[30] = 'Pangolin'
  await store.collection<Note>('notes').insertOne({ _id: 'p', owner: 'a', title: 'Unrelated', body: words.join(' ') })
  const text = store.extensions.text<Note>('notes')
  await text.ensure({ fields: { title: 10, body: 1 } })
  const [hit] = await text.search(parseTextQuery('pango'), {})
  const body = words.join(' ')
  const at = body.indexOf('Pangolin')
  t.same(hit.snippet, { field: 'body', text: `…${body.slice(at - 60)}`, highlights: [[61, 69]] })
})

t.test('most matches filtered out: pages and counts stay exact across every window of the ranking, holding a window at most', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  const notes = store.collection<Note>('notes')
  // 20,000 matches of equal score; one in 700 is the caller's. The newest TEXT_RANK_WINDOW are ranked first (equal
  // scores in insertion order), then the window before them, and so on.
  const size = 20_000
  for (let from = 0; from < size; from += 10_000) {
    await notes.insertMany(Array.from({ length: 10_000 }, (_, n) => from + n).map((i) => ({ _id: `n${String(i).padStart(5, '0')}`, owner: i % 700 === 0 ? 'mine' : 'other', title: `heron ${i}` })))
  }
  const text = store.extensions.text<Note>('notes')
  await text.ensure({ fields: { title: 1 } })
  const connection = (store as unknown as { connection: { statement: (sql: string) => unknown } }).connection
  let held = 0
  const watched = new WeakSet()
  const statement = connection.statement.bind(connection)
  connection.statement = (sql: string) => {
    const prepared = statement(sql) as { all: (...params: unknown[]) => unknown[] }
    if (!sql.includes('bm25') || watched.has(prepared)) return prepared
    watched.add(prepared)
    const all = prepared.all.bind(prepared)
    prepared.all = (...params: unknown[]) => { const rows = all(...params); held = Math.max(held, rows.length); return rows }
    return prepared
  }
  const window = (i: number): number => Math.floor(i / TEXT_RANK_WINDOW)
  const mine = Array.from({ length: Math.ceil(size / 700) }, (_, i) => i * 700).sort((a, b) => window(b) - window(a) || a - b).map((i) => `n${String(i).padStart(5, '0')}`)
  t.equal(mine[0], 'n19600', 'the newest window\'s first')
  const heron = parseTextQuery('heron ')
  t.same((await text.search(heron, { owner: 'mine' }, { limit: 1 })).map((hit) => hit.doc._id), mine.slice(0, 1), 'the first window')
  t.same((await text.search(heron, { owner: 'mine' }, { skip: 2, limit: 5 })).map((hit) => hit.doc._id), mine.slice(2, 7), 'a page across windows')
  t.same((await text.search(heron, { owner: 'mine' }, { skip: 22, limit: 5 })).map((hit) => hit.doc._id), mine.slice(22, 27), 'a page in the oldest windows')
  t.same((await text.search(heron, { owner: 'mine' }, { skip: 27, limit: 5 })).map((hit) => hit.doc._id), mine.slice(27), 'the last page, short')
  t.same((await text.search(heron, { owner: 'mine' })).map((hit) => hit.doc._id), mine, 'no limit: every match under the filter once, in rank order')
  t.equal(await text.count(heron, { owner: 'mine' }), mine.length)
  t.equal(await text.count(heron, { owner: 'mine' }, { cap: 10 }), 10)
  t.ok(held > 0 && held <= TEXT_RANK_WINDOW, `at most ${held} ranked rows of ${size} were held at once, never all`)

  // Other owners' rows all ranked above the caller's (the word twice), written after them: the page is still theirs.
  const other = store.collection<Note>('other')
  await other.insertMany(Array.from({ length: 30 }, (_, i) => ({ _id: `m${String(i).padStart(2, '0')}`, owner: 'mine', title: `egret ${i}` })))
  for (let from = 0; from < size; from += 10_000) {
    await other.insertMany(Array.from({ length: 10_000 }, (_, n) => ({ _id: `o${from + n}`, owner: 'other', title: 'egret egret' })))
  }
  const ranked = store.extensions.text<Note>('other')
  await ranked.ensure({ fields: { title: 1 } })
  const egret = parseTextQuery('egret ')
  t.same((await ranked.search(egret, { owner: 'mine' }, { skip: 3, limit: 4 })).map((hit) => hit.doc._id), ['m03', 'm04', 'm05', 'm06'], 'below 20,000 better-ranked rows of others')
  t.equal(await ranked.count(egret, { owner: 'mine' }), 30)
  t.equal((await ranked.search(egret, { owner: 'other' }, { limit: 3 }))[0].score > (await ranked.search(egret, { owner: 'mine' }, { limit: 1 }))[0].score, true, 'the others do rank above')
})

t.test('the filter checks a batch of ranked rows by their numbers, not by walking an index of the filter\'s fields', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  const notes = store.collection<Note>('notes')
  await notes.createIndex({ owner: 1, title: 1 })
  await notes.insertMany(Array.from({ length: 2_000 }, (_, i) => ({ _id: `n${i}`, owner: 'a', title: `osprey ${i}` })))
  const text = store.extensions.text<Note>('notes')
  await text.ensure({ fields: { title: 1 } })
  const connection = (store as unknown as { connection: { db: { prepare: (sql: string) => { all: (...params: unknown[]) => Array<{ detail: string }> } }, statement: (sql: string) => unknown } }).connection
  const plans: string[] = []
  const statement = connection.statement.bind(connection)
  connection.statement = (sql: string) => {
    const prepared = statement(sql) as { all: (...params: unknown[]) => unknown[] }
    if (!sql.includes('json_each(?)')) return prepared
    const all = prepared.all.bind(prepared)
    prepared.all = (...params: unknown[]) => {
      plans.push(connection.db.prepare(`EXPLAIN QUERY PLAN ${sql}`).all(...params).map((row) => row.detail).join(' | '))
      return all(...params)
    }
    return prepared
  }
  t.equal((await text.search(parseTextQuery('osprey '), { owner: 'a' }, { limit: 5 })).length, 5)
  t.ok(plans.length > 0 && plans.every((plan) => plan.startsWith('SEARCH c USING INTEGER PRIMARY KEY')), plans.join('\n'))
})

t.test('the filter of a text search reads each field per row (no index expressions, no substring scan) and gives the semantics\' answer', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  const connection = (store as unknown as { connection: { statement: (sql: string) => unknown } }).connection
  const statement = connection.statement.bind(connection)
  const seen: string[] = []
  connection.statement = (sql: string) => {
    if (sql.includes('MATCH') || sql.includes('json_each(?)')) seen.push(sql)
    return statement(sql)
  }
  const word = fc.constantFrom('x', 'y', '"x"', 'Grüße', '')
  const scalar = fc.oneof(word, fc.integer({ min: 0, max: 2 }), fc.constant(null), fc.boolean(), fc.date({ min: new Date(0), max: new Date(2), noInvalidDate: true }))
  // `a` is indexed and holds arrays and objects (multikey); `c` is indexed and never does (array-free); `d` is not indexed.
  const value = fc.oneof(scalar, fc.array(word, { maxLength: 2 }), fc.record({ b: word }, { requiredKeys: [] }))
  const doc = fc.record({ a: value, c: scalar, d: value }, { requiredKeys: [] })
  const path = fc.constantFrom('a', 'c', 'd', 'a.b')
  const clause: fc.Arbitrary<Filter> = fc.oneof(
    fc.tuple(path, scalar).map(([at, operand]) => ({ [at]: operand })),
    fc.tuple(path, fc.constantFrom('$ne', '$gt', '$lte'), scalar).map(([at, op, operand]) => ({ [at]: { [op]: operand } })),
    fc.tuple(path, fc.constantFrom('$in', '$nin'), fc.array(scalar, { minLength: 1, maxLength: 3 })).map(([at, op, members]) => ({ [at]: { [op]: members } })),
    fc.tuple(path, fc.boolean()).map(([at, present]) => ({ [at]: { $exists: present } }))
  )
  const filter = fc.oneof(clause, fc.tuple(clause, clause).map(([x, y]) => ({ $or: [x, y] })), fc.tuple(clause, clause).map(([x, y]) => ({ $and: [x, y] })))
  let run = 0
  let matched = 0
  await fc.assert(fc.asyncProperty(fc.array(doc, { maxLength: 8 }), filter, async (docs, query) => {
    const name = `rows_${run++}`
    const records = store.collection(name)
    await records.createIndex({ a: 1 })
    await records.createIndex({ c: 1 })
    const stored = docs.map((one, i) => ({ ...one, _id: `d${i}`, title: `osprey ${i}` })) as Document[]
    if (stored.length > 0) await records.insertMany(stored)
    const text = store.extensions.text(name)
    await text.ensure({ fields: { title: 1 } })
    const test = compileFilter(query)
    const expected = stored.filter((one) => test(one)).map((one) => one._id).sort()
    matched += expected.length
    deepStrictEqual((await text.search(parseTextQuery('osprey'), query)).map((hit) => hit.doc._id).sort(), expected, JSON.stringify(query))
    deepStrictEqual(await text.count(parseTextQuery('osprey'), query), expected.length, 'count')
    await store.dropCollection(name)
  }), { numRuns: 300 })
  t.ok(matched > 0, `some documents matched (${matched})`)
  t.ok(seen.length > 0)
  t.notOk(seen.some((sql) => sql.includes("WHEN 'integer' THEN") || sql.includes('instr(')), 'no index key expression and no substring scan in a text search\'s statements')
})

t.test('a search that also counts answers what search and count answer, the count from the rows it ranked', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  const notes = store.collection<Note & { part: string }>('tallied')
  // Partition a: 5,000 matches (every third the caller's), more than two windows; partition b: 90, after them.
  await notes.insertMany(Array.from({ length: 5_000 }, (_, i) => ({ _id: `a${String(i).padStart(4, '0')}`, part: 'a', owner: i % 3 === 0 ? 'mine' : 'other', title: i % 7 === 0 ? 'heron heron' : `heron ${i}` })))
  await notes.insertMany(Array.from({ length: 90 }, (_, i) => ({ _id: `b${String(i).padStart(2, '0')}`, part: 'b', owner: i % 3 === 0 ? 'mine' : 'other', title: 'heron' })))
  const text = store.extensions.text<Note>('tallied')
  await text.ensure({ fields: { title: 1 }, scope: 'part' })
  const connection = (store as unknown as { connection: { statement: (sql: string) => unknown } }).connection
  const counts: string[] = []
  const statement = connection.statement.bind(connection)
  connection.statement = (sql: string) => {
    // The count of matches joins the rows (the lookup of how many rows a word is in does not).
    if ((sql.includes('count(*)') && sql.includes(' JOIN ')) || sql.includes('SELECT c.doc FROM "s|')) counts.push(sql)
    return statement(sql)
  }
  const filters: Array<[string, Filter]> = [['exact SQL', { owner: 'mine' }], ['matcher', { owner: { $regex: '^mi' } }], ['none', {}]]
  for (const [name, filter] of filters) {
    for (const scope of [['a'], ['b'], ['a', 'b']]) {
      for (const cap of [0, 1, 60, 1_500, 4_000]) {
        for (const typed of ['heron', 'heron ']) {
          const query = parseTextQuery(typed)
          const found = await text.searchCounted(query, filter, { scope, limit: 20, skip: 5, cap })
          const hits = await text.search(query, filter, { scope, limit: 20, skip: 5 })
          const what = `${name}, scope ${scope.join('+')}, cap ${cap}, ${JSON.stringify(typed)}`
          t.same(found.hits.map((hit) => [hit.doc._id, hit.score]), hits.map((hit) => [hit.doc._id, hit.score]), `${what}: the same page`)
          t.equal(found.count, await text.count(query, filter, { scope, cap }), `${what}: the same count`)
        }
      }
    }
  }
  counts.length = 0
  const page = await text.searchCounted(parseTextQuery('heron'), { owner: 'mine' }, { scope: ['a'], limit: 20, cap: 101 })
  t.equal(page.count, 101)
  t.same(counts, [], 'a cap the first window reaches is counted from its ranked rows: no count statement')
  const all = await text.searchCounted(parseTextQuery('heron'), { owner: 'mine' }, { scope: ['a'], limit: 20 })
  t.equal(all.count, 1_667, 'without a cap, every match: the older windows counted unranked')
  t.equal(counts.length, 1)
  await t.rejects(text.searchCounted(parseTextQuery('heron'), {}, { scope: ['a'], cap: -1 }), { code: 'APP_INVALID_QUERY' }, 'a cap is a count')
})

t.test('a scoped index matches within the scope values before it ranks or counts: a small partition costs its own matches', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  const notes = store.collection<Note & { part?: unknown }>('parts')
  // A big partition of 5,000 matches, a small one of 40 (30 of them the caller's), an odd value with a dash, and rows without a string scope.
  await notes.insertMany(Array.from({ length: 5_000 }, (_, i) => ({ _id: `b${i}`, part: 'big', owner: 'mine', title: `ibis ${i}` })))
  await notes.insertMany(Array.from({ length: 40 }, (_, i) => ({ _id: `s${String(i).padStart(2, '0')}`, part: 'small', owner: i < 30 ? 'mine' : 'other', title: i % 2 === 0 ? 'ibis ibis' : 'ibis' })))
  await notes.insertMany([{ _id: 'd1', part: 'sm-all', owner: 'mine', title: 'ibis' }, { _id: 'n1', part: 7, owner: 'mine', title: 'ibis' }, { _id: 'n2', owner: 'mine', title: 'ibis' }])
  const text = store.extensions.text<Note>('parts')
  await text.ensure({ fields: { title: 1 }, scope: 'part' })
  const ibis = parseTextQuery('ibis ')
  const connection = (store as unknown as { connection: { statement: (sql: string) => unknown } }).connection
  let ranked = 0
  const watched = new WeakSet()
  const statement = connection.statement.bind(connection)
  connection.statement = (sql: string) => {
    const prepared = statement(sql) as { all: (...params: unknown[]) => unknown[] }
    if (!sql.includes('bm25') || watched.has(prepared)) return prepared
    watched.add(prepared)
    const all = prepared.all.bind(prepared)
    prepared.all = (...params: unknown[]) => { const rows = all(...params); ranked += rows.length; return rows }
    const iterate = (prepared as unknown as { iterate: (...params: unknown[]) => Iterable<unknown> }).iterate.bind(prepared)
    Object.assign(prepared, { iterate: function * (...params: unknown[]) { for (const row of iterate(...params)) { ranked++; yield row } } })
    return prepared
  }

  const small = await text.search(ibis, { owner: 'mine' }, { scope: ['small'], limit: 50 })
  t.equal(small.length, 30, 'every readable match of the small partition')
  t.ok(small.every((hit) => hit.doc._id.startsWith('s')), 'nothing of another partition, nor of a value that only resembles it')
  t.ok(small[0].score > small[small.length - 1].score && small.slice(0, 15).every((hit) => hit.doc.title === 'ibis ibis'), 'ranked: the word twice first')
  t.equal(ranked, 41, 'only the small partition\'s 40 matches were ranked (and the row below them that ends the span), not the big one\'s 5,000')
  t.equal(await text.count(ibis, { owner: 'mine' }, { scope: ['small'] }), 30)
  t.equal(await text.count(ibis, {}, { scope: ['small', 'sm-all'] }), 41)
  t.equal(await text.count(ibis, {}, { scope: ['big', 'small'], cap: 100 }), 100)
  t.equal(await text.count(ibis, {}, { scope: [] }), 0, 'no scope values, no matches')
  t.same(await text.search(ibis, {}, { scope: ['elsewhere'] }), [])
  // The scope token is in a column of its own: a word that spells it finds nothing.
  t.equal(await text.count(parseTextQuery('s736d616c6c '), {}, { scope: ['small'] }), 0)
  await t.rejects(text.search(ibis, {}), { code: 'APP_INVALID_QUERY' }, 'a scoped index needs scope values')
  await notes.updateOne({ _id: 's00' }, { $set: { part: 'big' } })
  t.equal(await text.count(ibis, {}, { scope: ['small'] }), 39, 'a document moved to another partition leaves the scope with the write')

  const plain = store.extensions.text<Note>('notes-plain')
  await plain.ensure({ fields: { title: 1 } })
  await t.rejects(plain.count(ibis, {}, { scope: ['small'] }), { code: 'APP_INVALID_QUERY' }, 'an index without a scope refuses scope values')
})

t.test('words in fewer rows than a window are matched without the scope\'s token, the scope checked on each row: the same hits and counts', async (t) => {
  const store = openSqliteStore({ file: ':memory:' })
  t.teardown(async () => { await store.close() })
  const notes = store.collection<Note & { part?: unknown }>('rare')
  await notes.insertMany(Array.from({ length: TEXT_RANK_WINDOW + 500 }, (_, i) => ({ _id: `b${i}`, part: 'big', owner: 'mine', title: i % 500 === 0 ? 'ibis heron' : `ibis ${i}` })))
  await notes.insertMany([
    { _id: 's1', part: 'small', owner: 'mine', title: 'heron heron' },
    { _id: 's2', part: 'small', owner: 'mine', title: 'heronry by the ibis' },
    { _id: 's3', part: 'small', owner: 'other', title: 'a heron' },
    { _id: 's4', part: 'small', owner: 'mine', title: 'Héron cendré' },
    { _id: 'n1', part: 7, owner: 'mine', title: 'heron' }
  ])
  const text = store.extensions.text<Note>('rare')
  await text.ensure({ fields: { title: 1 }, scope: 'part' })
  const connection = (store as unknown as { connection: { statement: (sql: string) => unknown } }).connection
  const matches: string[] = []
  let vocabularyReads = 0
  const watched = new WeakSet()
  const statement = connection.statement.bind(connection)
  connection.statement = (sql: string) => {
    if (sql.includes('|vocabulary')) vocabularyReads++
    const prepared = statement(sql) as Record<string, (...params: unknown[]) => unknown>
    if (!sql.includes('MATCH') || watched.has(prepared)) return prepared
    watched.add(prepared)
    for (const method of ['all', 'get', 'iterate']) {
      const call = prepared[method].bind(prepared)
      prepared[method] = (...params: unknown[]) => { matches.push(String(params[0])); return call(...params) }
    }
    return prepared
  }
  const ids = async (typed: string, filter: Filter, scope: string[]): Promise<string[]> => (await text.search(parseTextQuery(typed), filter, { scope, limit: 50 })).map((hit) => hit.doc._id)

  t.same(await ids('heron', {}, ['small']), ['s1', 's3', 's4', 's2'], 'the prefix, its scope only, ranked (the word twice first), diacritics folded by the tokenizer')
  t.same(await ids('heron ', { owner: 'mine' }, ['small']), ['s1', 's4'])
  t.same(await ids('heron ', { owner: { $regex: '^mi' } }, ['small']), ['s1', 's4'], 'a filter the SQL cannot decide alone checks the scope too')
  const bigHerons = Math.ceil((TEXT_RANK_WINDOW + 500) / 500)
  t.same((await ids('heron ', {}, ['big'])).length, bigHerons)
  t.equal(await text.count(parseTextQuery('ibis heron '), {}, { scope: ['small'] }), 0)
  t.equal(await text.count(parseTextQuery('ibis heron'), {}, { scope: ['small'] }), 1, 'several words counted under the scope checked per row')
  t.equal(await text.count(parseTextQuery('ibis heron '), {}, { scope: ['big', 'small'] }), bigHerons)
  t.same(await ids('egret', {}, ['small']), [], 'a word in no row')
  t.ok(matches.length > 0 && matches.every((match) => !match.includes('{sc}')), 'no match of rare words carried the scope\'s token')

  matches.length = 0
  t.same(await ids('héron', {}, ['small']), ['s1', 's3', 's4', 's2'], 'a word the vocabulary cannot count is matched under the scope')
  t.ok(matches.some((match) => match.includes('{sc}')))
  matches.length = 0
  t.equal((await ids('ibis ', {}, ['small'])).length, 1, 'a common word keeps the scoped match')
  t.ok(matches.some((match) => match.includes('{sc}')))

  await text.rebuild()
  t.same(await ids('heron', {}, ['small']), ['s1', 's3', 's4', 's2'], 'the vocabulary reads the rebuilt index')

  // Two words each in 600 rows (more than a window), together in three: counted together from the index, then matched
  // without the token.
  await notes.insertMany(Array.from({ length: 600 }, (_, i) => ({ _id: `c${i}`, part: 'big', owner: 'mine', title: i < 2 ? 'crane stork' : `crane ${i}` })))
  await notes.insertMany(Array.from({ length: 600 }, (_, i) => ({ _id: `k${i}`, part: 'big', owner: 'mine', title: `stork ${i}` })))
  await notes.insertOne({ _id: 's5', part: 'small', owner: 'mine', title: 'a crane and a stork' })
  matches.length = 0
  t.same(await ids('crane stork', {}, ['small']), ['s5'])
  t.equal(await text.count(parseTextQuery('crane stork'), {}, { scope: ['big'] }), 2)
  t.ok(matches.every((match) => !match.includes('{sc}')), 'words common alone but rare together are matched without the scope\'s token')

  // A word in more rows than are counted one by one (2,000).
  await notes.insertMany(Array.from({ length: 1_100 }, (_, i) => ({ _id: `i${i}`, part: 'big', owner: 'mine', title: `ibis ${i}` })))
  vocabularyReads = 0
  t.same(await ids('ibis', {}, ['small']), ['s2'], 'a common word as a prefix')
  t.equal(vocabularyReads, 0, 'a prefix that is a common word of its own is not looked up in the vocabulary (which walks every row of each word it starts)')
  t.same(await ids('hero', {}, ['small']), ['s1', 's3', 's4', 's2'])
  t.ok(vocabularyReads > 0, 'a prefix that is no common word is: the words it starts')
})
