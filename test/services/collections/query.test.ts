import t from 'tap'
import { randomBytes } from 'node:crypto'
import fc from 'fast-check'
import { Cursors, afterFilter, cursorScope, indexedLeads, orderRange, parseSort, servedByIndex, throughFilter, type SortKey, type SortPlan } from '../../../services/collections/query.js'
import { compileFilter, compileSort } from '../../../services/store/semantics/index.js'
import type { Document } from '../../../services/store/types.js'
import { parseFilter } from '../../../services/collections/filters.js'
import { fieldMap } from '../../../services/collections/record-fields.js'
import { deepFreeze } from '../../../services/platform/deep-freeze.js'
import type { FieldDefinitionT } from '../../../schemas/collections.js'

const fields = fieldMap([
  { name: 'title', type: 'text' },
  { name: 'views', type: 'number' },
  { name: 'tags', type: 'text', multiple: true },
  { name: 'meta', type: 'json' }
] as FieldDefinitionT[])

t.test('a sort is parsed once per text and collection shape, into a frozen plan that ends with the id', async (t) => {
  const plan = parseSort('-views, title', fields)
  t.same(plan.keys, [['views', -1], ['title', 1], ['_id', 1]])
  t.same(plan.sort, { views: -1, title: 1, _id: 1 })
  t.equal(plan.spec, '-views,title,_id')
  t.ok(Object.isFrozen(plan) && Object.isFrozen(plan.keys) && Object.isFrozen(plan.sort))
  t.equal(parseSort('-views, title', fields), plan, 'the same text gives the same plan')
  t.same(parseSort(undefined, fields).keys, [['_id', 1]])
  t.same(parseSort('-id', fields).keys, [['_id', -1]], 'the id itself may lead, and is not added twice')
  const refused: Array<[string, RegExp]> = [['nope', /not a field/], ['meta', /cannot be sorted/], ['tags', /cannot be sorted/], ['title,-title', /given twice/], ['title,views,createdAt,updatedAt,id', /at most 4/]]
  for (const [text, message] of refused) {
    t.throws(() => parseSort(text, fields), { code: 'APP_INVALID_SORT', message }, text)
  }
})

t.test('cursors: sealed, tied to their order, the same whether the record is shared or a copy', async (t) => {
  const cursors = new Cursors(randomBytes(32))
  const scope = (plan: SortPlan, filter = {}) => cursorScope('proj', 'posts', filter, plan)
  const plan = parseSort('-views', fields)
  const record = { _id: 'r1', views: 7, title: 'x', createdAt: new Date('2026-01-02T03:04:05.000Z') }
  const shared = deepFreeze({ ...record })
  const written = cursors.encode(shared, scope(plan))
  t.equal(cursors.encode(record, scope(plan)), written, 'a shared record gives the cursor a copy gives')
  t.equal(cursors.encode(shared, scope(plan)), written, 'and the same again')
  t.same(cursors.decode(written, plan, scope(plan)), [7, 'r1'])
  const other = parseSort('views', fields)
  t.throws(() => cursors.decode(written, other, scope(other)), { code: 'APP_INVALID_CURSOR' }, 'another order refuses it')
  t.throws(() => cursors.decode(`${written.slice(0, 10)}${written[10] === 'A' ? 'B' : 'A'}${written.slice(11)}`, plan, scope(plan)), { code: 'APP_INVALID_CURSOR' }, 'a changed signature is refused')
  t.throws(() => new Cursors(randomBytes(32)).decode(written, plan, scope(plan)), { code: 'APP_INVALID_CURSOR' }, 'another server key refuses it')
  t.throws(() => cursors.decode(written, plan, cursorScope('proj', 'pages', {}, plan)), { code: 'APP_INVALID_CURSOR' }, 'another collection refuses it')
  t.throws(() => cursors.decode(written, plan, scope(plan, { views: { $gt: 1 } })), { code: 'APP_INVALID_CURSOR' }, 'another filter refuses it')
  // As the JSON the position is made of would carry them; random ciphertext holds a given 4-byte run with odds of about one in 2^26.
  const sealed = Buffer.from(written.replace(/\./g, ''), 'base64url').toString('latin1')
  t.notOk(sealed.includes('"r1"') || sealed.includes('[7,'), 'neither the id nor the sort value can be read from it')
  const byDate = parseSort('createdAt', fields)
  const dated = cursors.decode(cursors.encode(shared, scope(byDate)), byDate, scope(byDate))
  t.ok(dated[0] instanceof Date && (dated[0] as Date).getTime() === record.createdAt.getTime(), 'dates come back as dates')
  t.same(afterFilter(plan.keys, [7, 'r1']), { $or: [{ $or: [{ views: { $lt: 7 } }, { views: null }] }, { $and: [{ views: 7 }, { _id: { $gt: 'r1' } }] }] })
})

t.test('filters sent as text are checked once and shared frozen', async (t) => {
  const first = parseFilter('{"views":{"$gt":3}}', fields)
  t.same(first, { views: { $gt: 3 } })
  t.ok(Object.isFrozen(first))
  t.equal(parseFilter('{"views":{"$gt":3}}', fields), first)
  t.throws(() => parseFilter('{"views":{"$where":"1"}}', fields), { code: 'APP_INVALID_FILTER' })
})

t.test('after and through a position split every order in two, at the position', async (t) => {
  // Typed fields hold one type or null (or nothing), as the data API stores them.
  const doc = fc.record({
    _id: fc.constantFrom('a', 'b', 'c', 'd'),
    n: fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined }).map((n) => n === 0 ? null : n),
    s: fc.option(fc.constantFrom('x', 'y'), { nil: undefined })
  }, { requiredKeys: ['_id'] })
  const keys = fc.uniqueArray(fc.tuple(fc.constantFrom('n', 's'), fc.constantFrom(1 as const, -1 as const)), { maxLength: 2, selector: ([key]) => key })
    .chain((leading) => fc.constantFrom(1 as const, -1 as const).map((dir): SortKey[] => [...leading, ['_id', dir]]))
  fc.assert(fc.property(keys, doc, fc.array(doc, { maxLength: 8 }), (order, at, docs) => {
    const values = order.map(([key]) => (at as Document)[key] ?? null)
    const after = compileFilter(afterFilter(order, values))
    const through = compileFilter(throughFilter(order, values))
    const compare = compileSort(Object.fromEntries(order))
    return docs.every((one) => after(one) !== through(one) && through(one) === (compare(one, at) <= 0))
  }), { numRuns: 1000 })
  t.pass('every record is either after or through, and through is "not later in the order"')
})

t.test('an order range is one id range in the default order, and both bounds otherwise', async (t) => {
  const byId = parseSort(undefined, fields).keys
  t.same(orderRange(byId, null, null), {})
  t.same(orderRange(byId, ['a'], ['m']), { _id: { $gt: 'a', $lte: 'm' } })
  t.same(orderRange(parseSort('-id', fields).keys, ['m'], null), { _id: { $lt: 'm' } })
  t.same(orderRange(parseSort('-id', fields).keys, null, ['a']), { _id: { $gte: 'a' } })
  const byViews = parseSort('views', fields).keys
  t.same(orderRange(byViews, null, [3, 'r']), throughFilter(byViews, [3, 'r']))
  t.same(orderRange(byViews, [1, 'q'], [3, 'r']), { $and: [afterFilter(byViews, [1, 'q']), throughFilter(byViews, [3, 'r'])] })
})

t.test('a filter is served by an index when it narrows the id, a unique field or a declared index\'s first field', async (t) => {
  const leads = indexedLeads(
    [{ name: 'slug', type: 'text', unique: true }, { name: 'title', type: 'text' }, { name: 'author', type: 'text' }, { name: 'status', type: 'text' }] as FieldDefinitionT[],
    [{ fields: ['author', 'status'] }, { fields: ['-views'] }]
  )
  t.same([...leads].sort(), ['_id', 'author', 'slug', 'views'], 'not the built-in orders\' dates: a range on them narrows nothing')
  const cases: Array<[Document, boolean]> = [
    [{ _id: 'r1' }, true],
    [{ slug: 'hello' }, true],
    [{ author: 'u1', title: 'x' }, true],
    [{ author: { $in: ['u1', 'u2'] } }, true],
    [{ views: { $gte: 10 } }, true],
    [{ createdAt: { $gte: new Date(0) } }, false],
    [{ updatedAt: { $lt: new Date(0) } }, false],
    [{ status: 'open' }, false],
    [{ title: 'x' }, false],
    [{ author: { $ne: 'u1' } }, false],
    [{ author: { $exists: true } }, false],
    [{ author: { $regex: '^u' } }, false],
    [{ $and: [{ title: 'x' }, { author: 'u1' }] }, true],
    [{ $or: [{ author: 'u1' }, { slug: 'x' }] }, true],
    [{ $or: [{ author: 'u1' }, { title: 'x' }] }, false],
    [{ $nor: [{ author: 'u1' }] }, false],
    [{}, false]
  ]
  for (const [filter, served] of cases) t.equal(servedByIndex(filter, leads), served, JSON.stringify(filter))
})
