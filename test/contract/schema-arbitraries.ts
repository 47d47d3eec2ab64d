import fc from 'fast-check'
import type { JsonSchema } from './openapi-contract.js'

/**
 * fast-check arbitraries from the JSON schemas of openapi.yaml: values the
 * schema accepts, values bent out of it (wrong types, a required field
 * dropped, unknown and prototype keys, huge strings, deep nesting, query
 * operators where plain values belong), and junk for every other part of a
 * request.
 *
 * Values of the running fixtures (ids, tokens, emails) change when the fuzz
 * test rebuilds what a request destroyed, so arbitraries never hold them:
 * they hold `ref(name)` markers, resolved when the request is sent.
 */

export const ref = (name: string): string => `@@ref:${name}@@`
export const REF_MARKER = /@@ref:([A-Za-z0-9_]+)@@/g

/** A value nested `depth` levels deep, spliced into the serialized body (JSON.stringify itself would overflow). */
export const deep = (depth: number, shape: 'o' | 'a'): string => `@@deep:${depth}:${shape}@@`
const DEEP_MARKER = /@@deep:(\d+):([oa])@@/g
const QUOTED_DEEP_MARKER = /"@@deep:(\d+):([oa])@@"/g

const nested = (depth: number, shape: string): string =>
  shape === 'o' ? `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}` : `${'['.repeat(depth)}${']'.repeat(depth)}`

/** Splices deep values into a serialized JSON body. */
export function spliceDeep (json: string): string {
  return json.replace(QUOTED_DEEP_MARKER, (_all, depth: string, shape: string) => nested(Number(depth), shape))
}

/** The same for a query value, where the nested JSON is text; at most `cap` levels, as a URL has to carry it. */
export function spliceDeepText (text: string, cap = 1000): string {
  return text.replace(DEEP_MARKER, (_all, depth: string, shape: string) => nested(Math.min(Number(depth), cap), shape))
}

/** A string of `length` characters; a marker, so failure reports stay readable. */
export const huge = (length: number): string => `@@huge:${length}@@`
const HUGE_MARKER = /@@huge:(\d+)@@/g

export function spliceHuge (text: string): string {
  return text.replace(HUGE_MARKER, (_all, length: string) => 'x'.repeat(Number(length)))
}

export interface Hints {
  /** Fixture values for a property or parameter of this name and schema, drawn beside what its schema alone would give. */
  forName: (name: string, schema: JsonSchema) => fc.Arbitrary<unknown> | undefined
  /** Values for a free-form object (`additionalProperties: {}` and no properties) named `name` ('' for a whole body). */
  freeForm: (name: string) => fc.Arbitrary<unknown> | undefined
}

type Resolve = (schema: JsonSchema) => JsonSchema

/**
 * Hints from a table keyed `name: type`: a name only hints where its schema
 * has that type (`array of X` for arrays of the component X), so that the
 * `fields` of a collection, of an index and of a query string differ.
 */
export function hintTable (table: Record<string, fc.Arbitrary<unknown>>, freeForm: Hints['freeForm'] = () => undefined): Hints {
  const typeOf = (schema: JsonSchema): string => {
    const items = schema.items as JsonSchema | undefined
    const component = typeof items?.$ref === 'string' ? items.$ref.split('/').pop() : undefined
    return schema.type === 'array' && component !== undefined ? `array of ${component}` : String(schema.type)
  }
  return {
    forName: (name, schema) => table[`${name}: ${typeOf(schema)}`],
    freeForm
  }
}

const operatorObjects = fc.constantFrom<unknown>(
  { $gt: '' }, { $ne: null }, { $where: 'sleep(1000)' }, { $regex: '(a+)+$' }, { $regex: '[' }, { $options: 'zz' },
  { $expr: { $eq: [1, 1] } }, { $in: [] }, { $exists: true }, { $function: {} }, { $or: [] }, { $elemMatch: {} }, { $size: -1 }, { $not: 1 }
)

export const nastyKeys = fc.constantFrom(
  '__proto__', 'constructor', 'prototype', 'toString', 'hasOwnProperty', '$where', '$gt', '', 'a.b', 'id', '_id', 'passwordHash',
  'createdAt', 'version', '\u0000', '@request.auth.id', huge(5000)
)

/** Objects whose own keys reach for the prototype chain (JSON.parse makes `__proto__` an own key, as a server's parser would). */
const prototypeObjects = fc.constantFrom<unknown>(
  JSON.parse('{"__proto__":{"polluted":true}}'), JSON.parse('{"constructor":{"prototype":{"polluted":true}}}'), JSON.parse('{"__proto__":null}')
)

/**
 * Values no schema means, one kind of trouble per branch: odd scalars, huge
 * strings, deep nesting, query operators, binary strings, extreme numbers.
 */
export const troubleValues: fc.Arbitrary<unknown> = fc.oneof(
  fc.constantFrom<unknown>(
    null, true, false, 0, -1, 2 ** 53, -1e308, 1e308, 0.5, '', ' ', '0', 'true', 'null', '[]', '{}', '__proto__', '@request.auth.id', '@now',
    '\u0000', '\ud800', '../../etc/passwd', '%00', '<script>alert(1)</script>', '\'; DROP TABLE x; --', '(a+)+$', '2026-02-30T25:61:00Z',
    'NaN', '-Infinity', [], {}, [null]
  ),
  fc.constantFrom(huge(70_000), huge(200_000)),
  fc.constantFrom(deep(64, 'o'), deep(3000, 'a'), deep(100_000, 'o'), deep(100_000, 'a')),
  operatorObjects,
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.oneof(fc.integer(), fc.double()),
  fc.jsonValue({ maxDepth: 3 })
)

/** The same and prototype-reaching objects, which the JSON parser refuses whole: for the one place a mutation bends. */
export const nastyValues: fc.Arbitrary<unknown> = fc.oneof({ weight: 7, arbitrary: troubleValues }, { weight: 1, arbitrary: prototypeObjects })

/** What a schema that says nothing of a value accepts: anything at all, the nasty included. */
export const anyValue = fc.oneof(fc.jsonValue({ maxDepth: 2 }), troubleValues)

/** Sets an own, enumerable property even when its name is `__proto__`, so JSON.stringify sends it. */
function setOwn (target: Record<string, unknown>, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

function stringArbitrary (schema: JsonSchema): fc.Arbitrary<string> {
  const minLength = typeof schema.minLength === 'number' ? schema.minLength : 0
  const maxLength = typeof schema.maxLength === 'number' ? schema.maxLength : undefined
  const fits = (s: string): boolean => [...s].length >= minLength && (maxLength === undefined || [...s].length <= maxLength)
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum as string[])
  if (schema.format === 'date-time') {
    return fc.date({ min: new Date('1970-01-01T00:00:00Z'), max: new Date('2200-01-01T00:00:00Z'), noInvalidDate: true }).map((d) => d.toISOString())
  }
  if (schema.format === 'email') return fc.emailAddress().filter(fits)
  if (schema.format === 'uri') return fc.webUrl().filter(fits)
  if (typeof schema.pattern === 'string') return fc.stringMatching(new RegExp(schema.pattern)).filter(fits)
  const short = Math.min(maxLength ?? 24, Math.max(minLength, 24))
  const choices = [fc.string({ minLength, maxLength: short }), fc.string({ unit: 'grapheme', minLength, maxLength: short }).filter(fits)]
  // The longest value allowed: where bounds are off by one.
  if (maxLength !== undefined && maxLength > short) choices.push(fc.string({ minLength: maxLength, maxLength }))
  return fc.oneof(...choices)
}

function numberArbitrary (schema: JsonSchema): fc.Arbitrary<number> {
  const min = typeof schema.minimum === 'number' ? schema.minimum : undefined
  const max = typeof schema.maximum === 'number' ? schema.maximum : undefined
  if (schema.type === 'integer') {
    const lo = min ?? -1_000_000
    const hi = max ?? Math.max(lo, 0) + 1_000_000
    return fc.oneof(fc.integer({ min: lo, max: hi }), fc.constantFrom(lo, hi))
  }
  return fc.double({ min: min ?? -1e9, max: max ?? 1e9, noNaN: true, noDefaultInfinity: true })
}

/** Values the schema accepts (and, where hints give them, the fixtures' own values). */
export function validValue (schema: JsonSchema, resolve: Resolve, hints: Hints, name = ''): fc.Arbitrary<unknown> {
  const resolved = resolve(schema)
  const own = schemaValue(resolved, resolve, hints, name)
  const hinted = name === '' ? undefined : hints.forName(name, resolved)
  return hinted === undefined ? own : fc.oneof({ weight: 1, arbitrary: own }, { weight: 3, arbitrary: hinted })
}

function schemaValue (schema: JsonSchema, resolve: Resolve, hints: Hints, name: string): fc.Arbitrary<unknown> {
  const alternatives = (schema.anyOf ?? schema.oneOf) as JsonSchema[] | undefined
  if (alternatives !== undefined) return fc.oneof(...alternatives.map((s) => validValue(s, resolve, hints, name)))
  if (schema.nullable === true) return fc.oneof({ weight: 4, arbitrary: schemaValue({ ...schema, nullable: false }, resolve, hints, name) }, { weight: 1, arbitrary: fc.constant(null) })
  if ('const' in schema) return fc.constant(schema.const)
  if (Array.isArray(schema.enum)) return fc.constantFrom(...schema.enum as unknown[])
  switch (schema.type) {
    case 'string': return stringArbitrary(schema)
    case 'integer': case 'number': return numberArbitrary(schema)
    case 'boolean': return fc.boolean()
    case 'null': return fc.constant(null)
    case 'array': {
      const items = schema.items === undefined ? fc.jsonValue({ maxDepth: 2 }) : validValue(schema.items as JsonSchema, resolve, hints, `${name}[]`)
      const minLength = typeof schema.minItems === 'number' ? schema.minItems : 0
      const maxLength = Math.max(minLength, Math.min(typeof schema.maxItems === 'number' ? schema.maxItems : 4, 4))
      return schema.uniqueItems === true
        ? fc.uniqueArray(items, { minLength, maxLength, selector: (v) => JSON.stringify(v) })
        : fc.array(items, { minLength, maxLength })
    }
    case 'object': case undefined: {
      const properties = (schema.properties ?? {}) as Record<string, JsonSchema>
      if (Object.keys(properties).length === 0) {
        if (schema.type === undefined && schema.additionalProperties === undefined) return anyValue
        return hints.freeForm(name) ?? fc.dictionary(fc.string({ maxLength: 10 }), anyValue, { maxKeys: 4 })
      }
      const required = ((schema.required ?? []) as string[]).filter((key) => key in properties)
      const model = Object.fromEntries(Object.entries(properties).map(([key, s]) => [key, validValue(s, resolve, hints, key)]))
      const record = fc.record(model, { requiredKeys: required }) as fc.Arbitrary<Record<string, unknown>>
      const minProperties = typeof schema.minProperties === 'number' ? schema.minProperties : 0
      return minProperties > 0 ? record.filter((value) => Object.keys(value).length >= minProperties) : record
    }
    default: return anyValue
  }
}

type Mutation = 'root' | 'drop' | 'extra' | 'replace'

/** A copy of a JSON-like value that keeps own `__proto__` keys. */
function copyOf (value: unknown): unknown {
  if (Array.isArray(value)) return value.map(copyOf)
  if (typeof value !== 'object' || value === null) return value
  const copy: Record<string, unknown> = {}
  for (const [key, child] of Object.entries(value)) setOwn(copy, key, copyOf(child))
  return copy
}

/** The objects and arrays in a value, outermost first. */
function containersOf (value: unknown): Array<Record<string, unknown> | unknown[]> {
  const found: Array<Record<string, unknown> | unknown[]> = []
  const queue = [value]
  while (queue.length > 0 && found.length < 64) {
    const current = queue.shift()
    if (typeof current !== 'object' || current === null) continue
    found.push(current as Record<string, unknown> | unknown[])
    queue.push(...Object.values(current))
  }
  return found
}

/** A value the schema accepts, then bent out of it in one place, at any depth: a member dropped, added or replaced. */
export function invalidValue (schema: JsonSchema, resolve: Resolve, hints: Hints, name = ''): fc.Arbitrary<unknown> {
  return fc.tuple(validValue(schema, resolve, hints, name), fc.constantFrom<Mutation>('root', 'drop', 'extra', 'replace'), fc.nat(), fc.nat(), nastyValues, nastyKeys)
    .map(([value, mutation, where, which, bad, key]) => {
      if (typeof value !== 'object' || value === null || mutation === 'root') return bad
      const copy = copyOf(value)
      const containers = containersOf(copy)
      const target = containers[where % containers.length]
      if (Array.isArray(target)) {
        const i = target.length === 0 ? 0 : which % target.length
        if (mutation === 'drop') target.splice(i, 1)
        else if (mutation === 'extra') target.push(bad)
        else target[i] = bad
        return copy
      }
      const keys = Object.keys(target)
      const pick = keys.length === 0 ? key : keys[which % keys.length]
      if (mutation === 'drop') delete target[pick]
      else setOwn(target, mutation === 'extra' ? key : pick, bad)
      return copy
    })
}

/** encodeURIComponent, for strings that may hold lone surrogates (which it refuses). */
export function encodeText (text: string): string {
  return encodeURIComponent(text.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'))
}

/** Path segments that are not any fixture's id: malformed, encoded, traversing, overlong. */
export const junkSegments: fc.Arbitrary<{ raw: string }> = fc.oneof(
  fc.constantFrom(
    '..', '.', '%2e%2e', '%2F', '%2f..%2f..', '%00', '%zz', '%', '%E0%A4%A', '%C0%AF', '%FF%FE', '__proto__', 'constructor', 'null',
    'undefined', '0', '-1', 'NaN', '1e999', '%27%20OR%201%3D1', '$where', '%7B%22%24gt%22%3A%22%22%7D', huge(64), huge(65), huge(5000)
  ),
  fc.string({ maxLength: 80 }).map(encodeText),
  fc.string({ unit: 'grapheme', maxLength: 16 }).map(encodeText),
  fc.stringMatching(/^[0-9A-Za-z_-]{1,64}$/)
).map((raw) => ({ raw }))

/** Authorization headers that are no credential at all. */
export const garbageAuthorization: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 60 }),
  fc.string({ maxLength: 60 }).map((s) => `Bearer ${s}`),
  fc.constantFrom(
    'Bearer', 'Bearer ', 'bearer  two tokens', 'Basic dXNlcjpwYXNz', `Bearer ${huge(9000)}`, 'Bearer plinthpat_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
    'Bearer plinthsvc_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA', 'Bearer plinthpat_', 'Bearer a.b.c',
    // alg "none", the claims of a platform token
    `Bearer ${Buffer.from('{"alg":"none","typ":"JWT"}').toString('base64url')}.${Buffer.from('{"sub":"x","sid":"x","type":"platform","aud":"plinth:platform"}').toString('base64url')}.`
  )
)

/** Bodies that are not JSON at all, or JSON no parser should trust. */
export const junkJsonText: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '', '{', '{"a":', 'nul', 'undefined', '[1,2', '{"a":1,}', '{\'a\':1}', '\u0000', '1e99999', '"\\ud800"', 'true', '[]', '"x"',
    '{"__proto__":{"polluted":1}}', '{"constructor":{"prototype":{"polluted":1}}}', `["${huge(1_100_000)}"]`
  ),
  fc.string({ maxLength: 60 })
)
