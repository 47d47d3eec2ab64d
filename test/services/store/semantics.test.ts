import t, { type Test } from 'tap'
import { InvalidUpdateError, QueryError } from '../../../services/store/errors.js'
import type { Document, Filter, Update } from '../../../services/store/types.js'
import {
  applyProjection, applyUpdate, cloneValue, compareValues, compileFilter, compileSort, deepEqual, matches,
  seedFromFilter, sortDocuments, validateFilter, validateProjection, validateSort, validateUpdate
} from '../../../services/store/semantics/index.js'

/** JSON with dates made visible, so key order and types are compared exactly. */
const exact = (value: unknown): string => JSON.stringify(value, function (this: Record<string, unknown>, key, encoded: unknown) {
  const raw = this[key]
  if (typeof raw === 'bigint') return `${raw}n`
  return raw instanceof Date ? { $date: raw.getTime() } : encoded
})

function refusal (t: Test, action: () => unknown, kind: typeof QueryError | typeof InvalidUpdateError, path: string, label: string): void {
  let caught: unknown
  try { action() } catch (error) { caught = error }
  t.ok(caught instanceof kind, `${label}: throws ${kind.name}`)
  t.equal((caught as { path?: string } | undefined)?.path, path, `${label}: names ${path}`)
}

const D = (ms: number): Date => new Date(ms)

type MatchCase = [Filter, Document, boolean]
const matchFamilies: Record<string, MatchCase[]> = {
  equality: [
    [{ a: 1 }, { a: 1 }, true], [{ a: 1 }, { a: '1' }, false], [{ a: 1 }, { a: [2, 1] }, true], [{ a: 1 }, { a: [[1], 2] }, false],
    [{ a: [1] }, { a: [[1]] }, true], [{ a: [1, 2] }, { a: [1, 2] }, true], [{ a: [1, 2] }, { a: [2, 1] }, false], [{ a: [1, 2] }, { a: [[1, 2], 3] }, true],
    [{ a: { x: 1, y: 2 } }, { a: { x: 1, y: 2 } }, true], [{ a: { x: 1, y: 2 } }, { a: { y: 2, x: 1 } }, false], [{ a: { x: 1 } }, { a: { x: 1, y: 2 } }, false],
    [{ a: {} }, { a: {} }, true], [{ a: true }, { a: 1 }, false], [{ a: D(5) }, { a: D(5) }, true], [{ a: D(5) }, { a: 5 }, false],
    [{ a: NaN }, { a: NaN }, true], [{ a: 0 }, { a: -0 }, true], [{ a: 1, b: 2 }, { a: 1, b: 3 }, false], [{}, { a: 1 }, true],
    [{ a: { $eq: 1 } }, { a: [1] }, true], [{ a: { $eq: { b: [1] } } }, { a: [{ b: [1] }] }, true], [{ a: { $eq: [] } }, { a: [] }, true]
  ],
  'dotted paths': [
    [{ 'a.b': 1 }, { a: { b: 1 } }, true], [{ 'a.b': 1 }, { a: [{ b: 2 }, { b: 1 }] }, true], [{ 'a.b': 1 }, { a: [{ b: [3, 1] }] }, true],
    [{ 'a.b': 1 }, { a: [[{ b: 1 }]] }, false], [{ 'a.b': 1 }, { a: { b: { c: 1 } } }, false], [{ 'a.b.c': 1 }, { a: [{ b: [{ c: 1 }] }] }, true],
    [{ 'a.1': 2 }, { a: [1, 2] }, true], [{ 'a.1.b': 2 }, { a: [{ b: 1 }, { b: 2 }] }, true], [{ 'a.0': 1 }, { a: { 0: 1 } }, true],
    [{ 'a.0': 5 }, { a: [{ 0: 5 }] }, true], [{ 'a.0.0': 1 }, { a: [[1]] }, true], [{ 'a.0.b': 1 }, { a: [[{ b: 1 }]] }, true],
    [{ 'a.01': 1 }, { a: [1] }, false], [{ 'a.5': null }, { a: [1] }, false], [{ 'a.b': 1 }, { a: 'b' }, false],
    [{ constructor: { $exists: true } }, {}, false], [{ toString: null }, {}, true], [{ 'a.length': 1 }, { a: [5] }, false]
  ],
  'null and missing': [
    [{ a: null }, {}, true], [{ a: null }, { a: null }, true], [{ a: null }, { a: [1, null] }, true], [{ a: null }, { a: [] }, false],
    [{ a: null }, { a: 0 }, false], [{ a: null }, { a: false }, false], [{ 'a.b': null }, { a: 4 }, true], [{ 'a.b': null }, { a: {} }, true],
    [{ 'a.b': null }, { a: [{ b: 3 }, {}] }, true], [{ 'a.b': null }, { a: [1, 2] }, false], [{ 'a.b': null }, { a: [] }, false],
    [{ 'a.b': null }, { a: [[]] }, false], [{ a: { $ne: null } }, {}, false], [{ a: { $ne: null } }, { a: [1] }, true],
    [{ a: { $ne: null } }, { a: [null] }, false], [{ 'a.b': { $ne: null } }, { a: [1, 2] }, true], [{ 'a.b': { $ne: null } }, { a: [] }, true]
  ],
  comparison: [
    [{ a: { $gt: 1 } }, { a: 2 }, true], [{ a: { $gt: 1 } }, { a: 1 }, false], [{ a: { $gte: 1 } }, { a: 1 }, true], [{ a: { $gt: 1 } }, { a: '2' }, false],
    [{ a: { $gt: 1 } }, { a: [0, 5] }, true], [{ a: { $gt: 1 } }, { a: [[5]] }, false], [{ a: { $gt: 1 } }, {}, false], [{ a: { $gt: 1 } }, { a: true }, false],
    [{ a: { $lt: 'b' } }, { a: 'a' }, true], [{ a: { $lt: 'b' } }, { a: 'B' }, true], [{ a: { $lt: 'b' } }, { a: 'ba' }, false], [{ a: { $lt: 'b' } }, { a: 1 }, false],
    [{ a: { $lt: '\uFFFF' } }, { a: '\u{1F600}' }, false], [{ a: { $gt: D(10) } }, { a: D(11) }, true], [{ a: { $gt: D(10) } }, { a: 11 }, false],
    [{ a: { $gte: null } }, {}, true], [{ a: { $gte: null } }, { a: null }, true], [{ a: { $gte: null } }, { a: 0 }, false], [{ a: { $lte: null } }, {}, true],
    [{ a: { $gt: null } }, { a: null }, false], [{ a: { $gt: null } }, { a: 1 }, false], [{ a: { $lt: null } }, {}, false],
    [{ a: { $gt: { x: 1 } } }, { a: { x: 2 } }, true], [{ a: { $gt: { x: 1 } } }, { a: { x: 1, y: 0 } }, true], [{ a: { $gt: { x: 1 } } }, { a: { y: 0 } }, true],
    [{ a: { $gt: { x: 1 } } }, { a: { x: 'a' } }, true], [{ a: { $lt: { x: 1 } } }, { a: 5 }, false], [{ a: { $gt: [1] } }, { a: [1, 2] }, true],
    [{ a: { $gt: [1] } }, { a: [0] }, false], [{ a: { $gt: [1] } }, { a: [[2]] }, true], [{ a: { $gt: false } }, { a: true }, true],
    [{ a: { $gt: 1, $lt: 5 } }, { a: [0, 10] }, true], [{ a: { $gt: 1, $lt: 5 } }, { a: [10] }, false], [{ a: { $gt: NaN } }, { a: 1 }, false],
    [{ a: { $gte: NaN } }, { a: NaN }, true], [{ a: { $lt: 1 } }, { a: NaN }, false], [{ a: { $gt: 0 } }, { a: {} }, false]
  ],
  '$in and $nin': [
    [{ a: { $in: [1, 2] } }, { a: 2 }, true], [{ a: { $in: [1, 2] } }, { a: 3 }, false], [{ a: { $in: [1, 2] } }, { a: [3, 1] }, true],
    [{ a: { $in: [1, 2] } }, {}, false], [{ a: { $in: [null] } }, {}, true], [{ a: { $in: [null] } }, { a: [null] }, true],
    [{ a: { $in: [/^x/] } }, { a: 'xy' }, true], [{ a: { $in: [/^x/] } }, { a: ['b', 'xz'] }, true], [{ a: { $in: [/^x/] } }, { a: 1 }, false],
    [{ a: { $in: [[1, 2]] } }, { a: [1, 2] }, true], [{ a: { $in: [{ b: 1 }] } }, { a: [{ b: 1 }] }, true], [{ a: { $in: [] } }, { a: 1 }, false],
    [{ a: { $in: [1] } }, { a: '1' }, false], [{ a: { $in: [true] } }, { a: 1 }, false], [{ a: { $in: [D(5)] } }, { a: D(5) }, true],
    [{ a: { $nin: [1, 2] } }, { a: 3 }, true], [{ a: { $nin: [1, 2] } }, {}, true], [{ a: { $nin: [1, 2] } }, { a: [3, 2] }, false],
    [{ a: { $nin: [null] } }, {}, false], [{ a: { $nin: [null] } }, { a: 1 }, true], [{ a: { $nin: [] } }, { a: 1 }, true]
  ],
  $exists: [
    [{ a: { $exists: true } }, { a: null }, true], [{ a: { $exists: true } }, {}, false], [{ a: { $exists: true } }, { a: [] }, true],
    [{ 'a.b': { $exists: true } }, { a: [{ b: 1 }] }, true], [{ 'a.b': { $exists: true } }, { a: [1] }, false], [{ 'a.b': { $exists: true } }, { a: [{}] }, false],
    [{ a: { $exists: false } }, {}, true], [{ a: { $exists: false } }, { a: null }, false], [{ 'a.b': { $exists: false } }, { a: [1] }, true],
    [{ a: { $exists: 1 } }, { a: 1 }, true], [{ a: { $exists: 0 } }, {}, true]
  ],
  regex: [
    [{ a: { $regex: '^ab' } }, { a: 'abc' }, true], [{ a: { $regex: '^ab' } }, { a: 'xab' }, false], [{ a: { $regex: '^ab' } }, { a: ['x', 'abz'] }, true],
    [{ a: { $regex: '^ab' } }, { a: 1 }, false], [{ a: { $regex: '^ab' } }, {}, false], [{ a: { $regex: 'AB', $options: 'i' } }, { a: 'xab' }, true],
    [{ a: /^ab/i }, { a: 'ABc' }, true], [{ a: { $regex: '^b', $options: 'm' } }, { a: 'a\nb' }, true], [{ a: { $regex: '^b' } }, { a: 'a\nb' }, false],
    [{ a: { $regex: 'a.b', $options: 's' } }, { a: 'a\nb' }, true], [{ a: { $regex: 'a.b' } }, { a: 'a\nb' }, false],
    [{ a: { $regex: 'a b # comment', $options: 'x' } }, { a: 'ab' }, true], [{ a: { $regex: 'a b', $options: 'x' } }, { a: 'a b' }, false],
    [{ a: { $regex: '[ ]', $options: 'x' } }, { a: 'a b' }, true], [{ a: { $regex: /ab/, $options: 'i' } }, { a: 'AB' }, true],
    [{ a: { $not: /^a/ } }, { a: 'b' }, true], [{ a: { $not: /^a/ } }, { a: 'ab' }, false], [{ a: { $not: /^a/ } }, {}, true]
  ],
  'logical and $not': [
    [{ a: { $not: { $gt: 5 } } }, { a: 3 }, true], [{ a: { $not: { $gt: 5 } } }, { a: 6 }, false], [{ a: { $not: { $gt: 5 } } }, {}, true],
    [{ a: { $not: { $gt: 5 } } }, { a: 'x' }, true], [{ a: { $not: { $gt: 5 } } }, { a: [1, 6] }, false],
    [{ $and: [{ a: 1 }, { b: 2 }] }, { a: 1, b: 2 }, true], [{ $and: [{ a: 1 }, { b: 2 }] }, { a: 1 }, false], [{ $or: [{ a: 1 }, { b: 2 }] }, { b: 2 }, true],
    [{ $or: [{ a: 1 }, { b: 2 }] }, { c: 1 }, false], [{ $nor: [{ a: 1 }, { b: 2 }] }, { c: 1 }, true], [{ $nor: [{ a: 1 }, { b: 2 }] }, { a: 1 }, false],
    [{ $or: [{ $and: [{ a: 1 }, { b: 1 }] }, { c: 1 }] }, { a: 1, b: 1 }, true], [{ $and: [{}] }, {}, true], [{ a: 1, $or: [{ b: 1 }] }, { a: 1, b: 2 }, false]
  ],
  'array operators': [
    [{ a: { $all: [1, 2] } }, { a: [2, 1, 3] }, true], [{ a: { $all: [1, 2] } }, { a: [1] }, false], [{ a: { $all: [1] } }, { a: 1 }, true],
    [{ a: { $all: [] } }, { a: [] }, false], [{ a: { $all: [[1, 2]] } }, { a: [1, 2] }, true], [{ a: { $all: [[1, 2]] } }, { a: [[1, 2], 3] }, true],
    [{ a: { $all: [/^x/, 'y'] } }, { a: ['xa', 'y'] }, true], [{ 'a.b': { $all: [1, 2] } }, { a: [{ b: 1 }, { b: 2 }] }, true],
    [{ a: { $all: [{ $elemMatch: { b: 1 } }, { $elemMatch: { c: 2 } }] } }, { a: [{ b: 1 }, { c: 2 }] }, true],
    [{ a: { $all: [{ $elemMatch: { b: 1 } }, { $elemMatch: { c: 2 } }] } }, { a: [{ b: 1 }] }, false],
    [{ a: { $elemMatch: { $gt: 1, $lt: 5 } } }, { a: [0, 10] }, false], [{ a: { $elemMatch: { $gt: 1, $lt: 5 } } }, { a: [0, 3] }, true],
    [{ a: { $elemMatch: { $gt: 1 } } }, { a: 3 }, false], [{ a: { $elemMatch: { $eq: null } } }, { a: [1, null] }, true],
    [{ a: { $elemMatch: { $eq: null } } }, {}, false], [{ a: { $elemMatch: { $ne: null } } }, { a: [[]] }, true], [{ a: { $elemMatch: { $ne: null } } }, { a: [null] }, false],
    [{ a: { $elemMatch: { b: 1, c: 2 } } }, { a: [{ b: 1 }, { c: 2 }] }, false], [{ a: { $elemMatch: { b: 1, c: 2 } } }, { a: [{ b: 1, c: 2 }] }, true],
    [{ a: { $elemMatch: { b: null } } }, { a: [[]] }, true], [{ a: { $elemMatch: { b: null } } }, { a: [1] }, false],
    [{ a: { $elemMatch: { $or: [{ b: 1 }, { c: 1 }] } } }, { a: [{ c: 1 }] }, true], [{ a: { $elemMatch: { 0: 1 } } }, { a: [[1]] }, true],
    [{ a: { $elemMatch: { $eq: 1 } } }, { a: [[1]] }, false], [{ 'a.b': { $elemMatch: { $gt: 1 } } }, { a: [{ b: [0, 2] }] }, true],
    [{ a: { $elemMatch: { $elemMatch: { $gt: 1 } } } }, { a: [[0, 2]] }, true], [{ a: { $elemMatch: { $size: 2 } } }, { a: [[1, 2]] }, true],
    [{ a: { $elemMatch: { $not: { $gt: 5 } } } }, { a: [6, 7] }, false], [{ a: { $elemMatch: { $not: { $gt: 5 } } } }, { a: [6, 1] }, true],
    [{ a: { $elemMatch: {} } }, { a: [{}] }, true], [{ a: { $elemMatch: {} } }, { a: [1] }, false], [{ a: { $elemMatch: { $in: [5] } } }, { a: [5] }, true],
    [{ a: { $size: 2 } }, { a: [1, 2] }, true], [{ a: { $size: 2 } }, { a: [[1, 2]] }, false], [{ a: { $size: 2 } }, { a: 'ab' }, false],
    [{ a: { $size: 0 } }, { a: [] }, true], [{ a: { $size: 0 } }, {}, false], [{ 'a.b': { $size: 1 } }, { a: [{ b: [1] }, { b: 2 }] }, true]
  ]
}

t.test('matches', async t => {
  for (const [family, cases] of Object.entries(matchFamilies)) {
    t.test(family, async t => {
      for (const [filter, doc, expected] of cases) {
        const label = `${exact(filter)} on ${exact(doc)}`
        t.equal(matches(doc, filter), expected, label)
        t.equal(compileFilter(filter)(doc), expected, `${label} (compiled)`)
      }
    })
  }
})

t.test('a compiled regex holds no state between documents', async t => {
  const test = compileFilter({ a: /b/ })
  t.same([test({ a: 'ab' }), test({ a: 'ab' }), test({ a: 'xb' })], [true, true, true])
})

t.test('compareValues follows the BSON type order', async t => {
  const ascending: Array<[unknown, unknown]> = [
    [null, 1], [1, 'a'], ['a', {}], [{}, []], [[], false], [false, true], [true, D(0)], [D(0), D(1)], [-Infinity, 1], [NaN, -Infinity],
    ['B', 'a'], ['a', 'b'], ['\uFFFF', '\u{1F600}'], [{ a: 1 }, { a: 2 }], [{ a: 1 }, { b: 0 }], [{ b: 1 }, { a: 'x' }], [{ a: 1 }, { a: 1, b: 0 }],
    [[1], [1, 0]], [[1, 5], [2]], [[], [null]], [null, 0]
  ]
  for (const [low, high] of ascending) {
    t.equal(compareValues(low, high), -1, `${exact(low)} < ${exact(high)}`)
    t.equal(compareValues(high, low), 1, `${exact(high)} > ${exact(low)}`)
  }
  const equal: Array<[unknown, unknown]> = [[undefined, null], [NaN, NaN], [0, -0], [D(3), D(3)], [{ a: [1] }, { a: [1] }], [1, 1.0]]
  for (const [a, b] of equal) t.equal(compareValues(a, b), 0, `${String(a)} = ${String(b)}`)
})

t.test('deepEqual and cloneValue', async t => {
  t.ok(deepEqual({ a: [1, { b: D(1) }] }, { a: [1, { b: D(1) }] }))
  t.notOk(deepEqual({ a: 1, b: 2 }, { b: 2, a: 1 }), 'field order matters as in BSON')
  t.notOk(deepEqual([1, 2], [1, 2, 3]))
  t.notOk(deepEqual(D(1), 1))
  const original = { a: [{ b: D(1) }] }
  const copy = cloneValue(original)
  t.same(copy, original)
  t.not(copy.a[0], original.a[0], 'nested objects are copied')
  t.not(copy.a[0].b, original.a[0].b, 'dates are copied')
})

t.test('compileSort', async t => {
  const mixed: Document[] = [
    { _id: '01', a: 5 }, { _id: '02', a: 'x' }, { _id: '03' }, { _id: '04', a: null }, { _id: '05', a: [] }, { _id: '06', a: [3, 'z'] },
    { _id: '07', a: { k: 1 } }, { _id: '08', a: true }, { _id: '09', a: D(0) }, { _id: '10', a: [[1]] }, { _id: '11', a: false }
  ]
  const order = (docs: Document[], sort: Record<string, 1 | -1>): string[] => docs.slice().sort(compileSort(sort)).map(doc => String(doc._id))
  t.same(order(mixed, { a: 1, _id: 1 }), ['05', '03', '04', '06', '01', '02', '07', '10', '11', '08', '09'], 'ascending: arrays by their minimum, [] first')
  t.same(order(mixed, { a: -1, _id: 1 }), ['09', '08', '11', '10', '07', '06', '02', '01', '03', '04', '05'], 'descending: arrays by their maximum, [] last')
  const nested = [{ _id: '1', b: { c: 2 }, d: 1 }, { _id: '2', b: { c: 1 }, d: 1 }, { _id: '3', b: [{ c: 0 }, { c: 9 }], d: 0 }, { _id: '4', b: [1, { c: 3 }], d: 0 }]
  t.same(order(nested, { 'b.c': 1 }), ['4', '3', '2', '1'], 'scalars in an array sort as null under a dotted path')
  t.same(order(nested, { d: 1, 'b.c': -1 }), ['3', '4', '1', '2'])
  const correlated = [{ _id: '1', a: [{ x: 1, y: 5 }, { x: 2, y: 0 }] }, { _id: '2', a: [{ x: 1, y: 3 }] }]
  t.same(order(correlated, { 'a.x': 1, 'a.y': 1 }), ['2', '1'], 'keys through one array stay correlated')
  t.same(order([{ _id: '1', a: [9, 1] }, { _id: '2', a: [0, 5] }], { 'a.1': 1 }), ['1', '2'], 'a numeric segment picks the element')
  t.same(sortDocuments(mixed, { a: -1, _id: 1 }).map(doc => doc._id), order(mixed, { a: -1, _id: 1 }), 'sortDocuments orders as compileSort')
  t.same(sortDocuments(correlated, { 'a.x': 1, 'a.y': 1 }).map(doc => doc._id), ['2', '1'])
  const compare = compileSort({ a: 1 })
  t.equal(compare({ _id: 'x' }, { _id: 'y', a: null }), 0, 'missing and null tie')
  t.equal(compileSort({})({ a: 1 }, { a: 2 }), 0)
  refusal(t, () => compileSort({ a: 1, b: 1 })({ a: [1], b: [2] }, { a: 1, b: 1 }), QueryError, 'sort', 'parallel arrays')
})

type UpdateCase = [string, Document, Update, Document, boolean, boolean?]
const updateCases: UpdateCase[] = [
  ['$set replaces', { a: 1 }, { $set: { a: 2 } }, { a: 2 }, true], ['$set to the same value', { a: 1 }, { $set: { a: 1 } }, { a: 1 }, false],
  ['$set creates intermediates', {}, { $set: { 'a.b.c': 1 } }, { a: { b: { c: 1 } } }, true],
  ['new fields follow field-name order', { x: 0 }, { $set: { z: 1, a: 1, 'm.b': 1, 'm.a': 2 } }, { x: 0, a: 1, m: { a: 2, b: 1 }, z: 1 }, true],
  ['$set an element', { a: [1, 2] }, { $set: { 'a.1': 5 } }, { a: [1, 5] }, true], ['$set past the end pads', { a: [1, 2] }, { $set: { 'a.4': 5 } }, { a: [1, 2, null, null, 5] }, true],
  ['$set inside an element', { a: [{}] }, { $set: { 'a.0.b': 1 } }, { a: [{ b: 1 }] }, true], ['$set pads then creates', { a: [] }, { $set: { 'a.2.b': 1 } }, { a: [null, null, { b: 1 }] }, true],
  ['$set with a reordered object', { a: { x: 1, y: 2 } }, { $set: { a: { y: 2, x: 1 } } }, { a: { y: 2, x: 1 } }, true],
  ['$set a numeric key on an object', {}, { $set: { 'a.0': 1 } }, { a: { 0: 1 } }, true],
  ['$unset', { a: 1, b: 2 }, { $unset: { a: '' } }, { b: 2 }, true], ['$unset missing', { b: 2 }, { $unset: { a: 1 } }, { b: 2 }, false],
  ['$unset nested', { a: { b: 1, c: 2 } }, { $unset: { 'a.b': 1 } }, { a: { c: 2 } }, true], ['$unset an element nulls it', { a: [1, 2, 3] }, { $unset: { 'a.1': 1 } }, { a: [1, null, 3] }, true],
  ['$unset through a scalar', { a: 5 }, { $unset: { 'a.b': 1 } }, { a: 5 }, false], ['$unset a name on an array', { a: [{ b: 1 }] }, { $unset: { 'a.b': 1 } }, { a: [{ b: 1 }] }, false],
  ['$inc', { a: 1 }, { $inc: { a: 2 } }, { a: 3 }, true], ['$inc missing starts at 0', {}, { $inc: { a: 5 } }, { a: 5 }, true], ['$inc nested', {}, { $inc: { 'x.y': 1 } }, { x: { y: 1 } }, true],
  ['$inc by 0', { a: 1 }, { $inc: { a: 0 } }, { a: 1 }, false], ['$inc an element', { a: [1] }, { $inc: { 'a.0': 1 } }, { a: [2] }, true], ['$inc a fraction', { a: 1.5 }, { $inc: { a: 1 } }, { a: 2.5 }, true],
  ['$push', { a: [1] }, { $push: { a: 2 } }, { a: [1, 2] }, true], ['$push creates', {}, { $push: { a: 2 } }, { a: [2] }, true],
  ['$push $each', { a: [1] }, { $push: { a: { $each: [2, 3] } } }, { a: [1, 2, 3] }, true], ['$push an array value', { a: [1] }, { $push: { a: [2] } }, { a: [1, [2]] }, true],
  ['$push empty $each creates', {}, { $push: { a: { $each: [] } } }, { a: [] }, true], ['$push empty $each on an array', { a: [1] }, { $push: { a: { $each: [] } } }, { a: [1] }, false],
  ['$push nested', {}, { $push: { 'a.b': 1 } }, { a: { b: [1] } }, true],
  ['$addToSet present', { a: [1, 2] }, { $addToSet: { a: 2 } }, { a: [1, 2] }, false], ['$addToSet absent', { a: [1, 2] }, { $addToSet: { a: 3 } }, { a: [1, 2, 3] }, true],
  ['$addToSet $each dedupes', { a: [1, 2] }, { $addToSet: { a: { $each: [2, 3, 3, 4] } } }, { a: [1, 2, 3, 4] }, true],
  ['$addToSet compares field order', { a: [{ x: 1, y: 2 }] }, { $addToSet: { a: { y: 2, x: 1 } } }, { a: [{ x: 1, y: 2 }, { y: 2, x: 1 }] }, true],
  ['$addToSet equal object', { a: [{ x: 1, y: 2 }] }, { $addToSet: { a: { x: 1, y: 2 } } }, { a: [{ x: 1, y: 2 }] }, false],
  ['$addToSet creates', {}, { $addToSet: { a: { $each: [1, 1] } } }, { a: [1] }, true],
  ['$pull a value', { a: [1, 2, 1, 3] }, { $pull: { a: 1 } }, { a: [2, 3] }, true], ['$pull a condition', { a: [1, 2, 1, 3] }, { $pull: { a: { $gte: 2 } } }, { a: [1, 1] }, true],
  ['$pull $in', { a: [1, 2, 3] }, { $pull: { a: { $in: [1, 3] } } }, { a: [2] }, true],
  ['$pull a query on objects', { a: [{ b: 1, c: 1 }, { b: 2 }, 5] }, { $pull: { a: { b: 1 } } }, { a: [{ b: 2 }, 5] }, true],
  ['$pull $elemMatch', { a: [[1, 2], [3]] }, { $pull: { a: { $elemMatch: { $gt: 2 } } } }, { a: [[1, 2]] }, true],
  ['$pull conditions see inside nested arrays', { a: [[1, 6], 3] }, { $pull: { a: { $gte: 5 } } }, { a: [3] }, true],
  ['$pull an array literal', { a: [[1, 2], 1] }, { $pull: { a: [1, 2] } }, { a: [1] }, true], ['$pull missing', {}, { $pull: { a: 1 } }, {}, false],
  ['$pull a regex', { a: ['ab', 'cd'] }, { $pull: { a: /^a/ } }, { a: ['cd'] }, true], ['$pull null', { a: [null, 1] }, { $pull: { a: null } }, { a: [1] }, true],
  ['$pull $or on objects', { a: [{ b: 1 }, { c: 1 }, { d: 1 }] }, { $pull: { a: { $or: [{ b: 1 }, { c: 1 }] } } }, { a: [{ d: 1 }] }, true],
  ['$setOnInsert on update', { a: 1 }, { $setOnInsert: { b: 1 } }, { a: 1 }, false], ['$setOnInsert on insert', { a: 1 }, { $setOnInsert: { b: 1 } }, { a: 1, b: 1 }, true, true],
  ['several operators', { c: 1, b: 1 }, { $set: { a: 1 }, $inc: { b: 1 }, $unset: { c: '' } }, { b: 2, a: 1 }, true]
]

t.test('applyUpdate', async t => {
  for (const [label, doc, update, expected, modified, isInsert] of updateCases) {
    const before = exact(doc)
    const result = applyUpdate(doc, update, { isInsert: isInsert ?? false })
    t.equal(exact(result.doc), exact(expected), label)
    t.equal(result.modified, modified, `${label}: modified`)
    t.equal(exact(doc), before, `${label}: input untouched`)
  }
  const frozen = Object.freeze({ a: Object.freeze([1]), b: Object.freeze({ c: 1 }) })
  t.same(applyUpdate(frozen, { $push: { a: 2 }, $set: { 'b.c': 2 } }, { isInsert: false }).doc, { a: [1, 2], b: { c: 2 } }, 'works on a frozen input')
  const failures: Array<[Document, Update, string]> = [
    [{ a: 1 }, { $set: { 'a.b': 1 } }, 'a.b'], [{ a: null }, { $set: { 'a.b': 1 } }, 'a.b'], [{ a: [1] }, { $set: { 'a.b': 1 } }, 'a.b'],
    [{ a: 'str' }, { $set: { 'a.0': 1 } }, 'a.0'], [{ a: 'x' }, { $inc: { a: 1 } }, 'a'], [{ a: null }, { $inc: { a: 1 } }, 'a'],
    [{ a: 1 }, { $push: { a: 2 } }, 'a'], [{ a: null }, { $addToSet: { a: 2 } }, 'a'], [{ a: 1 }, { $pull: { a: 1 } }, 'a'],
    [{ a: { b: D(1) } }, { $set: { 'a.b.c': 1 } }, 'a.b.c'], [{ a: [] }, { $push: { 'a.b': 1 } }, 'a.b']
  ]
  for (const [doc, update, path] of failures) refusal(t, () => applyUpdate(doc, update, { isInsert: false }), InvalidUpdateError, path, exact(update))
  refusal(t, () => applyUpdate({ _id: 'a' }, { $setOnInsert: { _id: 'b' } }, { isInsert: true }), InvalidUpdateError, '_id', 'an upsert cannot change a seeded _id')
  t.same(applyUpdate({ a: 1 }, { $setOnInsert: { _id: 'b' } }, { isInsert: true }).doc, { a: 1, _id: 'b' }, '$setOnInsert may supply the _id')
  const parsed = JSON.parse('{"_id":"k","__proto__":{"x":1},"b":2}') as Document
  const cloned = cloneValue(parsed)
  t.same(Object.keys(cloned), ['_id', '__proto__', 'b'], 'an own __proto__ field survives a copy')
  t.equal(Object.getPrototypeOf(cloned), Object.prototype)
  t.same(Object.keys(applyProjection(parsed, { b: 0 })), ['_id', '__proto__'], 'and a projection')
})

t.test('validateUpdate refusals name the clause', async t => {
  const refused: Array<[unknown, string]> = [
    [null, 'update'], [[], 'update'], [{}, 'update'], [{ a: 1 }, 'update.a'], [{ $rename: { a: 'b' } }, 'update.$rename'], [{ $set: 1 }, 'update.$set'],
    [{ $set: [] }, 'update.$set'], [{ $inc: { a: 'x' } }, 'update.$inc.a'], [{ $push: { a: { $each: 1 } } }, 'update.$push.a.$each'],
    [{ $push: { a: { $each: [1], $slice: 1 } } }, 'update.$push.a.$slice'], [{ $set: { a: { $each: [1] } } }, 'update.$set.a.$each'],
    [{ $inc: { a: { $each: [1] } } }, 'update.$inc.a.$each'], [{ $set: { _id: 'x' } }, 'update.$set._id'], [{ $unset: { '_id.x': 1 } }, 'update.$unset._id.x'],
    [{ $setOnInsert: { _id: 5 } }, 'update.$setOnInsert._id'], [{ $set: { a: 1 }, $inc: { a: 1 } }, 'update.$inc.a'], [{ $set: { a: 1, 'a.b': 1 } }, 'update.$set.a.b'],
    [{ $set: { 'a.b': 1 }, $unset: { a: 1 } }, 'update.$unset.a'], [{ $set: { '': 1 } }, 'update.$set.'], [{ $set: { 'a..b': 1 } }, 'update.$set.a..b'],
    [{ $set: { 'a.$.b': 1 } }, 'update.$set.a.$.b'], [{ $set: { a: { $x: 1 } } }, 'update.$set.a.$x'], [{ $set: { a: undefined } }, 'update.$set.a'],
    [{ $set: { a: { 'b.c': 1 } } }, 'update.$set.a.b.c'], [{ $pull: { a: { $foo: 1 } } }, 'update.$pull.a.$foo'], [{ $set: { a: /x/ } }, 'update.$set.a'],
    [{ $push: { a: { $each: [undefined] } } }, 'update.$push.a.$each[0]'], [{ $setOnInsert: { a: 1 }, $set: { 'a.b': 2 } }, 'update.$set.a.b'],
    [{ $set: { '__proto__.x': 1 } }, 'update.$set.__proto__.x'], [{ $set: { a: JSON.parse('{"__proto__":1}') } }, 'update.$set.a.__proto__']
  ]
  for (const [update, path] of refused) refusal(t, () => { validateUpdate(update) }, QueryError, path, exact(update) ?? String(update))
  refusal(t, () => { validateUpdate({ $inc: { a: 'x' } }, 'body.update') }, QueryError, 'body.update.$inc.a', 'custom root path')
  refusal(t, () => applyUpdate({}, { $foo: { a: 1 } }, { isInsert: false }), QueryError, 'update.$foo', 'applyUpdate validates too')
  for (const update of [{ $set: {} }, { $set: { ab: 1, a: 2 } }, { $setOnInsert: { _id: 'k' } }, { $pull: { a: { b: { $gt: 1 } } } }]) {
    t.doesNotThrow(() => { validateUpdate(update) }, exact(update))
  }
})

t.test('validateFilter refusals name the clause', async t => {
  const refused: Array<[unknown, string]> = [
    [null, 'filter'], [[], 'filter'], ['x', 'filter'], [{ $where: 'x' }, 'filter.$where'], [{ $expr: {} }, 'filter.$expr'], [{ $text: { $search: 'x' } }, 'filter.$text'],
    [{ $comment: 'x' }, 'filter.$comment'], [{ a: { $foo: 1 } }, 'filter.a.$foo'], [{ a: { $mod: [2, 0] } }, 'filter.a.$mod'], [{ a: { $type: 'string' } }, 'filter.a.$type'],
    [{ a: { $jsonSchema: {} } }, 'filter.a.$jsonSchema'], [{ $or: [{ a: 1 }, { age: { $foo: 1 } }] }, 'filter.$or[1].age.$foo'], [{ a: { $in: 1 } }, 'filter.a.$in'],
    [{ a: { $nin: 'x' } }, 'filter.a.$nin'], [{ a: { $all: {} } }, 'filter.a.$all'], [{ a: { $in: [{ $gt: 1 }] } }, 'filter.a.$in[0]'], [{ $and: [] }, 'filter.$and'],
    [{ $and: {} }, 'filter.$and'], [{ $or: [1] }, 'filter.$or[0]'], [{ $nor: [[]] }, 'filter.$nor[0]'], [{ a: { $size: -1 } }, 'filter.a.$size'],
    [{ a: { $size: 1.5 } }, 'filter.a.$size'], [{ a: { $size: '1' } }, 'filter.a.$size'], [{ a: { $exists: 'yes' } }, 'filter.a.$exists'], [{ a: { $exists: null } }, 'filter.a.$exists'],
    [{ a: { $regex: 5 } }, 'filter.a.$regex'], [{ a: { $regex: '(' } }, 'filter.a.$regex'], [{ a: { $regex: 'a', $options: 'g' } }, 'filter.a.$options'],
    [{ a: { $options: 'i' } }, 'filter.a.$options'], [{ a: { $regex: /a/i, $options: 'm' } }, 'filter.a.$regex'], [{ a: /x/g }, 'filter.a'], [{ a: { $in: [/x/y] } }, 'filter.a.$in[0]'],
    [{ a: { $not: 5 } }, 'filter.a.$not'], [{ a: { $not: {} } }, 'filter.a.$not'], [{ a: { $not: { b: 1 } } }, 'filter.a.$not'], [{ a: { $elemMatch: 5 } }, 'filter.a.$elemMatch'],
    [{ a: { $elemMatch: { $foo: 1 } } }, 'filter.a.$elemMatch.$foo'], [{ a: { $elemMatch: { b: { $foo: 1 } } } }, 'filter.a.$elemMatch.b.$foo'],
    [{ a: { $all: [{ $elemMatch: {} }, 1] } }, 'filter.a.$all[1]'], [{ a: { $all: [{ $gt: 1 }] } }, 'filter.a.$all[0]'], [{ $a: 1 }, 'filter.$a'],
    [{ 'a.$b': 1 }, 'filter.a.$b'], [{ '': 1 }, 'filter.'], [{ 'a..b': 1 }, 'filter.a..b'], [{ a: { $gt: 1, b: 1 } }, 'filter.a.b'], [{ a: undefined }, 'filter.a'],
    [{ a: { b: undefined } }, 'filter.a.b'], [{ a: { $eq: /x/ } }, 'filter.a.$eq'], [{ a: { b: { $gt: 1 } } }, 'filter.a.b.$gt'], [{ a: new Map() }, 'filter.a'],
    [{ a: 10n }, 'filter.a'], [{ a: { $and: [{ b: 1 }] } }, 'filter.a.$and'], [{ a: [1, undefined] }, 'filter.a[1]'], [{ $nor: [{ a: { $not: { $regex: '[' } } }] }, 'filter.$nor[0].a.$not.$regex']
  ]
  for (const [filter, path] of refused) refusal(t, () => { validateFilter(filter) }, QueryError, path, String(exact(filter)))
  refusal(t, () => { validateFilter({ x: { $foo: 1 } }, 'query') }, QueryError, 'query.x.$foo', 'custom root path')
  refusal(t, () => matches({}, { a: { $where: 1 } }), QueryError, 'filter.a.$where', 'matches validates too')
  t.doesNotThrow(() => { validateFilter({ a: { $gt: 1, $lt: 3 }, $or: [{ b: /x/i }, { c: { $in: [1, /y/] } }], d: { $all: [{ $elemMatch: { e: 1 } }] } }) })
})

t.test('applyProjection', async t => {
  const doc = { _id: 'k', a: 1, b: { c: 2, d: 3 }, e: [{ f: 1, g: 2 }, 3, { g: 4 }, [{ f: 5, g: 6 }]] }
  const cases: Array<[Record<string, 0 | 1 | boolean> | undefined, Document]> = [
    [{ a: 1 }, { _id: 'k', a: 1 }], [{ a: 1, _id: 0 }, { a: 1 }], [{ a: 0 }, { _id: 'k', b: { c: 2, d: 3 }, e: doc.e }], [{ _id: 1 }, { _id: 'k' }],
    [{ _id: 0, b: 0, e: 0 }, { a: 1 }], [{ 'b.c': 1, a: true }, { _id: 'k', a: 1, b: { c: 2 } }], [{ 'b.d': 0, e: false }, { _id: 'k', a: 1, b: { c: 2 } }],
    [{ 'e.f': 1 }, { _id: 'k', e: [{ f: 1 }, {}, [{ f: 5 }]] }], [{ 'e.f': 0, a: 0, b: 0 }, { _id: 'k', e: [{ g: 2 }, 3, { g: 4 }, [{ g: 6 }]] }],
    [{ 'a.x': 1 }, { _id: 'k' }], [{ 'b.x': 1 }, { _id: 'k', b: {} }], [{ 'a.x': 0, b: 0, e: 0 }, { _id: 'k', a: 1 }], [{}, doc], [undefined, doc]
  ]
  for (const [projection, expected] of cases) t.equal(exact(applyProjection(doc, projection)), exact(expected), exact(projection) ?? 'undefined')
  t.same(Object.keys(applyProjection(doc, { e: 1, a: 1 })), ['_id', 'a', 'e'], 'document order, not projection order')
  const copy = applyProjection(doc, { b: 1 })
  ;(copy.b as Document).c = 99
  t.equal(doc.b.c, 2, 'the result is a copy')
  const refused: Array<[unknown, string]> = [
    [{ a: 1, b: 0 }, 'projection'], [{ a: 0, b: 1 }, 'projection'], [{ a: 2 }, 'projection.a'], [{ a: 'x' }, 'projection.a'], [{ 'a.$': 1 }, 'projection.a.$'],
    [{ a: { $slice: 1 } }, 'projection.a'], [{ a: 1, 'a.b': 1 }, 'projection.a.b'], [null, 'projection'], [{ '': 1 }, 'projection.']
  ]
  for (const [projection, path] of refused) refusal(t, () => { validateProjection(projection) }, QueryError, path, String(exact(projection)))
  refusal(t, () => applyProjection(doc, { a: 1, b: 0 }), QueryError, 'projection', 'applyProjection validates too')
  t.doesNotThrow(() => { validateProjection({ _id: 0, a: 1 }) })
  t.doesNotThrow(() => { validateProjection({ _id: 1, a: 0 }) })
})

t.test('validateSort refusals', async t => {
  const refused: Array<[unknown, string]> = [[{ a: 2 }, 'sort.a'], [{ a: 'asc' }, 'sort.a'], [{ '': 1 }, 'sort.'], [{ 'a.$': 1 }, 'sort.a.$'], [null, 'sort'], [[], 'sort']]
  for (const [sort, path] of refused) refusal(t, () => { validateSort(sort) }, QueryError, path, String(exact(sort)))
  t.doesNotThrow(() => { validateSort({ a: 1, 'b.c': -1 }) })
})

t.test('seedFromFilter', async t => {
  const cases: Array<[Filter, Document]> = [
    [{ a: 1, b: { $gt: 1 } }, { a: 1 }], [{ 'a.b': 1, 'a.c': 2 }, { a: { b: 1, c: 2 } }], [{ a: { $eq: 5 } }, { a: 5 }],
    [{ $and: [{ a: 1 }, { $and: [{ b: 2 }] }] }, { a: 1, b: 2 }], [{ $or: [{ a: 1 }] }, { a: 1 }], [{ $or: [{ a: 1 }, { b: 2 }] }, {}],
    [{ a: { $in: [3] } }, { a: 3 }], [{ a: { $in: [3, 4] } }, {}], [{ a: /x/ }, {}], [{ a: { $regex: 'x' } }, {}], [{ z: 1, _id: 'k', a: 2 }, { _id: 'k', a: 2, z: 1 }],
    [{ a: { b: 1 } }, { a: { b: 1 } }], [{ a: null }, { a: null }], [{ 'a.0': 1 }, { a: { 0: 1 } }], [{ a: { $elemMatch: { b: 1 } } }, {}], [{ $nor: [{ a: 1 }] }, {}],
    [{ a: { $all: [1] } }, { a: 1 }], [{ a: { $all: [/x/] } }, {}], [{ a: { $not: { $eq: 1 } } }, {}], [{ a: { $ne: 1 } }, {}]
  ]
  for (const [filter, expected] of cases) t.equal(exact(seedFromFilter(filter)), exact(expected), exact(filter))
  const filter = { a: { b: [1] } }
  const seed = seedFromFilter(filter)
  ;((seed.a as Document).b as number[]).push(2)
  t.same(filter.a.b, [1], 'the seed is a copy')
  refusal(t, () => seedFromFilter({ a: 1, 'a.b': 2 }), QueryError, 'filter', 'a path and its prefix')
  refusal(t, () => seedFromFilter({ $and: [{ a: 1 }, { a: 2 }] }), QueryError, 'filter', 'the same path twice')
  refusal(t, () => seedFromFilter({ a: { $all: [1, 2] } }), QueryError, 'filter', '$all with two members')
  refusal(t, () => seedFromFilter({ a: { $foo: 1 } }), QueryError, 'filter.a.$foo', 'an invalid filter')
  const upserted = applyUpdate(seedFromFilter({ _id: 'k', a: 1 }), { $set: { b: 2 }, $setOnInsert: { c: 3 } }, { isInsert: true })
  t.equal(exact(upserted.doc), exact({ _id: 'k', a: 1, b: 2, c: 3 }), 'an upsert seeds then applies with $setOnInsert')
})
