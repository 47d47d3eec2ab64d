import t, { type Test } from 'tap'
import fc from 'fast-check'
import { Query, find, update as mingoUpdate } from 'mingo'
import { isDeepStrictEqual } from 'node:util'
import { InvalidUpdateError } from '../../../services/store/errors.js'
import type { Document, Filter, Projection, Sort, Update } from '../../../services/store/types.js'
import { applyProjection, applyUpdate, compileFilter, compileSort, matches } from '../../../services/store/semantics/index.js'

/**
 * Our semantics against mingo on random documents. Where mingo departs from a
 * real MongoDB server the generators stay out of that corner (each says so);
 * those corners are pinned by the table tests in semantics.test.ts instead.
 */
const RUNS = 500
const FIELDS = ['a', 'b', 'c']

const date = fc.constantFrom(new Date(0), new Date(1000), new Date(-5))
const string = fc.constantFrom('', 'a', 'b', 'B', 'ab', 'ba', 'a\nb')
const number = fc.oneof(fc.integer({ min: -3, max: 3 }), fc.double({ min: -3, max: 3, noNaN: true, noDefaultInfinity: true }))
const nonNullScalar = fc.oneof({ arbitrary: number, weight: 4 }, { arbitrary: string, weight: 2 }, fc.boolean(), date)
const scalar = fc.oneof({ arbitrary: nonNullScalar, weight: 6 }, fc.constant(null))

/** Each of a, b, c present about half the time, in sorted order: mingo ignores field order when comparing objects, MongoDB does not. */
function objectOf (values: fc.Arbitrary<unknown>, minKeys = 0): fc.Arbitrary<Document> {
  return fc.record({ a: values, b: values, c: values }, { requiredKeys: [], noNullPrototype: true })
    .filter(object => Object.keys(object).length >= minKeys)
    .map(object => Object.fromEntries(Object.keys(object).sort().map(key => [key, (object as Document)[key]])))
}

/** Arrays never hold arrays, even through objects: mingo flattens nested arrays that MongoDB leaves alone. */
const arrayFree: fc.Arbitrary<unknown> = fc.letrec(tie => ({
  value: fc.oneof({ depthSize: 'small' }, scalar, scalar, objectOf(tie('value')))
})).value
const value: fc.Arbitrary<unknown> = fc.letrec(tie => ({
  value: fc.oneof({ depthSize: 'small' }, scalar, scalar, tie('array'), objectOf(tie('value'))),
  array: fc.array(fc.oneof(scalar, objectOf(arrayFree)), { maxLength: 3 })
})).value
const doc = objectOf(value)
/** Mostly scalars and `a`, `b` always present, so that comparisons often meet values of their own type. */
const shallowValue = fc.oneof(
  { arbitrary: scalar, weight: 8 },
  fc.array(fc.oneof(scalar, objectOf(scalar)), { maxLength: 3 }),
  objectOf(fc.oneof({ arbitrary: scalar, weight: 3 }, objectOf(scalar)))
)
const shallowDoc: fc.Arbitrary<Document> = fc.record({ a: shallowValue, b: shallowValue, c: shallowValue }, { requiredKeys: ['a', 'b'], noNullPrototype: true })
const path = fc.oneof({ arbitrary: fc.constantFrom('a', 'b'), weight: 2 }, fc.constantFrom('a.b', 'a.c', 'b.a', 'a.b.c'))
const field = fc.constantFrom('a', 'b')

function agreeOnMatches (t: Test, name: string, docs: fc.Arbitrary<Document>, filters: fc.Arbitrary<Filter>): void {
  t.test(name, async t => {
    let matched = 0
    t.doesNotThrow(() => {
      fc.assert(fc.property(docs, filters, (doc, filter) => {
        const ours = matches(doc, filter)
        if (ours) matched++
        return ours === new Query(filter).test(doc)
      }), { numRuns: RUNS })
    }, `matches agrees with mingo on ${RUNS} random pairs`)
    t.ok(matched >= RUNS / 50 && matched <= RUNS * 49 / 50, `both outcomes occur (${matched} of ${RUNS} matched)`)
  })
}

const comparison = fc.record({ path, op: fc.constantFrom('$gt', '$gte', '$lt', '$lte'), operand: fc.oneof({ arbitrary: nonNullScalar, weight: 9 }, fc.constant(null)) })
  // mingo's {$gte: null} and {$lte: null} miss null/missing fields that MongoDB matches.
  .filter(({ op, operand }) => operand !== null || op === '$gt' || op === '$lt')
  .map(({ path, op, operand }): Filter => ({ [path]: { [op]: operand } }))

const membership = fc.record({ path, op: fc.constantFrom('$in', '$nin'), members: fc.array(value, { maxLength: 3 }) })
  // mingo does not compare an array member of $in with the whole array field ([] and [null] fail).
  .filter(({ members }) => !members.some(member => Array.isArray(member)))
  .map(({ path, op, members }): [string, unknown] => [path, { [op]: members }])
const equalityClause = fc.oneof(
  fc.record({ path, operand: value }).map(({ path, operand }): [string, unknown] => [path, operand]),
  fc.record({ path, op: fc.constantFrom('$eq', '$ne'), operand: value }).map(({ path, op, operand }): [string, unknown] => [path, { [op]: operand }]),
  membership
)
const equality = equalityClause
  // On a dotted path through an array mingo compares the collected values as one array and misses null for a missing field.
  .filter(([path, condition]) => !path.includes('.') || !operandsOf(condition).some(v => v === null || Array.isArray(v)))
  .map(([path, condition]): Filter => ({ [path]: condition }))

function operandsOf (condition: unknown): unknown[] {
  if (condition === null || typeof condition !== 'object' || Array.isArray(condition) || condition instanceof Date) return [condition]
  const [operator, operand] = Object.entries(condition)[0] ?? []
  if (operator === '$in' || operator === '$nin') return operand as unknown[]
  return operator?.startsWith('$') === true ? [operand] : [condition]
}

const leaf = fc.oneof(comparison, equality)
const logical: fc.Arbitrary<Filter> = fc.letrec<{ filter: Filter }>(tie => ({
  filter: fc.oneof(
    { depthSize: 'small' },
    leaf,
    fc.record({ op: fc.constantFrom('$and', '$or', '$nor'), branches: fc.array(tie('filter'), { minLength: 1, maxLength: 3 }) })
      .map(({ op, branches }) => ({ [op]: branches })),
    fc.record({ path, op: fc.constantFrom('$gt', '$lt', '$eq'), operand: nonNullScalar }).map(({ path, op, operand }) => ({ [path]: { $not: { [op]: operand } } })),
    fc.tuple(leaf, leaf).map(([first, second]) => ({ ...second, ...first }))
  )
})).filter

/**
 * mingo requires an array for $all and $size and does not reach them through a dotted path, and it applies
 * $elemMatch's query form to scalar elements; MongoDB does the first two and not the last. So `a` is always an
 * array and the query form only meets `c`, an array of objects.
 */
const arrayDoc = fc.record({
  a: fc.array(fc.oneof(scalar, objectOf(scalar)), { maxLength: 4 }),
  b: fc.oneof(scalar, fc.array(nonNullScalar, { maxLength: 3 })),
  c: fc.array(objectOf(scalar), { maxLength: 3 })
})
const elementFilter = fc.oneof(
  fc.record({ path, exists: fc.boolean() }).map(({ path, exists }): Filter => ({ [path]: { $exists: exists } })),
  fc.record({ field, size: fc.integer({ min: 0, max: 3 }) }).map(({ field, size }): Filter => ({ [field]: { $size: size } })),
  // $all members are scalars: mingo does not treat an array member as equality with the whole array.
  fc.array(nonNullScalar, { minLength: 1, maxLength: 2 }).map((members): Filter => ({ a: { $all: members } })),
  fc.record({ low: nonNullScalar, high: nonNullScalar }).map(({ low, high }): Filter => ({ a: { $elemMatch: { $gt: low, $lt: high } } })),
  fc.record({ key: fc.constantFrom(...FIELDS), operand: nonNullScalar }).map(({ key, operand }): Filter => ({ c: { $elemMatch: { [key]: operand } } })),
  fc.record({ key: fc.constantFrom(...FIELDS), operand: nonNullScalar }).map(({ key, operand }): Filter => ({ c: { $elemMatch: { [key]: { $gte: operand } } } }))
)

const pattern = fc.constantFrom('^a', 'b$', 'a.b', 'A', '^$', '.', 'ab|ba', '^b', '[ab]{2}')
const options = fc.subarray(['i', 'm', 's']).map(flags => flags.join(''))
const stringDoc = objectOf(fc.oneof(string, fc.array(string, { maxLength: 3 }), fc.integer()))
const regexFilter = fc.oneof(
  fc.record({ field, pattern, options }).map(({ field, pattern, options }): Filter => ({ [field]: { $regex: pattern, $options: options } })),
  fc.record({ field, pattern, options }).map(({ field, pattern, options }): Filter => ({ [field]: new RegExp(pattern, options) })),
  fc.record({ field, pattern, other: string }).map(({ field, pattern, other }): Filter => ({ [field]: { $in: [new RegExp(pattern), other] } })),
  fc.record({ field, pattern }).map(({ field, pattern }): Filter => ({ [field]: { $not: new RegExp(pattern) } }))
)

t.test('matches agrees with mingo', async t => {
  agreeOnMatches(t, 'comparison', shallowDoc, comparison)
  agreeOnMatches(t, 'equality, $in and $nin', doc, equality)
  agreeOnMatches(t, 'logical', doc, logical)
  agreeOnMatches(t, 'element and array operators', arrayDoc, elementFilter)
  agreeOnMatches(t, 'regex', stringDoc, regexFilter)
})

/** Key order is compared by the table tests; mingo appends created fields in operator order, not MongoDB's field-name order. */
function canonical (v: unknown): unknown {
  // -0 and 0 are one value to a query (and JSON, which the embedded engine stores, writes -0 as 0); mingo and
  // applyUpdate each keep whichever sign they were given, and isDeepStrictEqual tells the two apart.
  if (Object.is(v, -0)) return 0
  if (Array.isArray(v)) return Array.from(v, element => element === undefined ? null : canonical(element))
  if (v !== null && typeof v === 'object' && !(v instanceof Date)) {
    return Object.fromEntries(Object.keys(v).sort().map(key => [key, canonical((v as Document)[key])]))
  }
  return v
}

/** Arrays without duplicates or nested arrays: mingo's $addToSet and equality $pull misbehave on both. */
const updateValue: fc.Arbitrary<unknown> = fc.letrec(tie => ({
  value: fc.oneof({ depthSize: 'small' }, scalar, scalar, tie('array'), objectOf(tie('value'))),
  array: fc.uniqueArray(fc.oneof(scalar, objectOf(tie('value'))), { maxLength: 3, selector: element => JSON.stringify(element) })
})).value
const updateDoc = objectOf(updateValue)
const updatePath = fc.constantFrom('a', 'b', 'c', 'a.b', 'a.c', 'b.a', 'a.0', 'a.1', 'a.b.c', 'b.2')
// mingo treats null and {} as already present in $addToSet; those values are left out.
const setMember = fc.oneof(fc.integer({ min: -3, max: 3 }), fc.constantFrom('a', 'b'), fc.boolean(), date, objectOf(nonNullScalar, 1))
const operation = fc.oneof(
  { arbitrary: fc.record({ op: fc.constant('$set'), operand: updateValue }), weight: 3 },
  { arbitrary: fc.record({ op: fc.constant('$unset'), operand: fc.constant('') }), weight: 2 },
  fc.record({ op: fc.constant('$inc'), operand: fc.integer({ min: -2, max: 2 }) }),
  fc.record({ op: fc.constant('$push'), operand: fc.oneof(updateValue, fc.array(updateValue, { maxLength: 2 }).map(each => ({ $each: each }))) }),
  fc.record({ op: fc.constant('$addToSet'), operand: fc.oneof(setMember, fc.uniqueArray(setMember, { maxLength: 3, selector: m => JSON.stringify(m) }).map(each => ({ $each: each }))) }),
  // Object-query $pull is left out: mingo applies it to scalar elements too.
  fc.record({ op: fc.constant('$pull'), operand: fc.oneof(scalar, fc.record({ k: fc.constantFrom('$gt', '$lte', '$eq', '$ne', '$in'), s: scalar }).map(({ k, s }) => ({ [k]: k === '$in' ? [s] : s }))) })
)
const update = fc.uniqueArray(fc.tuple(updatePath, operation), { minLength: 1, maxLength: 3, selector: ([p]) => p.split('.')[0] }).map(entries => {
  const built: Record<string, Document> = {}
  for (const [p, { op, operand }] of entries) (built[op] ??= {})[p] = operand
  return built as Update
})

t.test('applyUpdate agrees with mingo', async t => {
  let applied = 0
  let refused = 0
  t.doesNotThrow(() => {
    fc.assert(fc.property(updateDoc, update, (doc, update) => {
      let ours
      try {
        ours = applyUpdate(doc, update, { isInsert: false })
      } catch (error) {
        // mingo silently skips type errors that MongoDB (and we) refuse.
        refused++
        return error instanceof InvalidUpdateError
      }
      applied++
      const theirs = structuredClone(doc)
      const changed = mingoUpdate(theirs, update, [], undefined, { cloneMode: 'deep' })
      return isDeepStrictEqual(canonical(ours.doc), canonical(theirs)) && ours.modified === (changed.length > 0)
    }), { numRuns: RUNS })
  }, `applyUpdate agrees with mingo on ${RUNS} random updates`)
  t.ok(applied > RUNS / 3, `a good share of updates apply (${applied} applied, ${refused} refused)`)
})

// Sort paths land on scalars only: mingo compares arrays and objects as wholes, not by BSON rules or min/max.
const sortDocs = (values: fc.Arbitrary<unknown>): fc.Arbitrary<Document[]> => fc.array(objectOf(values), { maxLength: 8 })
  .map(docs => docs.map((doc, i) => ({ _id: `d${i}`, ...doc })))
const sortSpec = (paths: string[]): fc.Arbitrary<Sort> => fc.uniqueArray(fc.tuple(fc.constantFrom(...paths), fc.constantFrom(1 as const, -1 as const)), { minLength: 1, maxLength: 2, selector: ([p]) => p })
  .map(keys => Object.fromEntries([...keys, ['_id', 1]]))

t.test('compileSort agrees with mingo', async t => {
  for (const [name, docs, sorts] of [
    ['top-level fields of mixed types', sortDocs(scalar), sortSpec(FIELDS)],
    ['dotted paths', sortDocs(fc.oneof(scalar, objectOf(scalar))), sortSpec(['a.b', 'b.c', 'c.a'])]
  ] as const) {
    t.doesNotThrow(() => {
      fc.assert(fc.property(docs, sorts, (docs, sort) => {
        const ours = docs.slice().sort(compileSort(sort)).map(doc => doc._id)
        return isDeepStrictEqual(ours, find(docs, {}).sort(sort).all().map(doc => doc._id))
      }), { numRuns: RUNS })
    }, `${name}: same order as mingo on ${RUNS} random collections`)
  }
})

// Arrays hold no nulls and no arrays: mingo crashes on the first and does not recurse into the second as find() does.
const projectionValue: fc.Arbitrary<unknown> = fc.letrec(tie => ({
  value: fc.oneof({ depthSize: 'small' }, scalar, scalar, tie('array'), objectOf(tie('value'))),
  array: fc.array(fc.oneof(nonNullScalar, objectOf(tie('value'))), { maxLength: 3 })
})).value
const projection = fc.oneof(
  fc.record({
    paths: fc.uniqueArray(fc.constantFrom('a', 'b', 'a.b', 'b.c', 'c.a.b'), { minLength: 1, maxLength: 3 }),
    setting: fc.constantFrom(0, 1),
    id: fc.constantFrom(undefined, 0, 1)
  }).filter(({ paths }) => !paths.some(p => paths.some(q => q.startsWith(p + '.')))),
  fc.record({ paths: fc.constant([] as string[]), setting: fc.constant(1), id: fc.constantFrom(0, 1) })
).map(({ paths, setting, id }) => {
  const spec: Projection = Object.fromEntries(paths.map(p => [p, setting as 0 | 1]))
  // mingo refuses {_id: 1} next to exclusions, which MongoDB allows.
  if (id !== undefined && !(setting === 0 && id === 1 && paths.length > 0)) spec._id = id as 0 | 1
  return spec
})

t.test('applyProjection agrees with mingo', async t => {
  t.doesNotThrow(() => {
    fc.assert(fc.property(objectOf(projectionValue).map(doc => ({ _id: 'k', ...doc })), projection, (doc, spec) => {
      const theirs = find([doc], {}, spec).all()[0]
      return isDeepStrictEqual(canonical(applyProjection(doc, spec)), canonical(theirs))
    }), { numRuns: RUNS })
  }, `applyProjection agrees with mingo on ${RUNS} random projections`)
})

// compileFilter answers `{ field: scalar }` filters without the general matcher; both must agree.
const equalityFilter: fc.Arbitrary<Filter> = fc.record(
  { a: nonNullScalar.filter(v => !(v instanceof Date)), b: nonNullScalar.filter(v => !(v instanceof Date)) },
  { requiredKeys: [] }
).filter(filter => Object.keys(filter).length > 0)

t.test('the scalar-equality fast path agrees with the general matcher', async t => {
  let matched = 0
  t.doesNotThrow(() => {
    fc.assert(fc.property(fc.oneof(doc, shallowDoc), equalityFilter, (subject, filter) => {
      const fast = compileFilter(filter)(subject)
      if (fast) matched++
      return fast === matches(subject, filter)
    }), { numRuns: RUNS * 4 })
  }, `compileFilter agrees with matches on ${RUNS * 4} random pairs`)
  t.ok(matched > 0, `some matched (${matched})`)
})

t.test('the fast path leaves field names it cannot vouch for to the general matcher', async t => {
  t.throws(() => compileFilter(JSON.parse('{"__proto__":"x"}') as Filter), { message: /__proto__/ }, 'refused, as the general matcher refuses it')
  t.throws(() => compileFilter({ 'a.b': 1, $where: 'x' } as unknown as Filter), 'an operator is never taken for a field')
})
