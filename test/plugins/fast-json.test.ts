import t from 'tap'
import fc from 'fast-check'
import type { TSchema } from '@sinclair/typebox'
import type { FastifyPluginAsync } from 'fastify'
import { buildTestApp } from '../helper.js'
import { writeJson } from '../../plugins/fast-json.js'
import { deepFreeze } from '../../services/platform/deep-freeze.js'
import { RecordResponses, recordSchemas } from '../../schemas/records.js'
import { TrackerResponses } from '../../schemas/tracker-routes.js'
import { trackerWorkItemSchemas } from '../../schemas/tracker-work-items.js'

/** The success schema of every route that declares `config.fastJson`. */
const HOT: Record<string, TSchema> = {
  listRecords: RecordResponses.list[200],
  queryRecords: RecordResponses.list[200],
  listTrackerWorkItems: TrackerResponses.workItemList[200],
  getTrackerWorkItem: TrackerResponses.workItem[200],
  getTrackerWorkItemByKey: TrackerResponses.workItem[200]
}

type Schema = Record<string, any>
const named = new Map<string, Schema>([...recordSchemas, ...trackerWorkItemSchemas].map((schema) => [schema.$id as string, schema]))

/** Values a response schema accepts, with extra members wherever it allows them (record fields, profile fields). */
function conforming (schema: Schema): fc.Arbitrary<unknown> {
  if (typeof schema.$ref === 'string') return conforming(named.get(schema.$ref) as Schema)
  if (Array.isArray(schema.anyOf)) return fc.oneof(...schema.anyOf.map(conforming))
  if ('const' in schema) return fc.constant(schema.const)
  switch (schema.type) {
    case 'string': {
      if (schema.format !== 'date-time' && schema.format !== 'date') return fc.string()
      const instants = fc.date({ noInvalidDate: true, min: new Date(0), max: new Date(Date.UTC(2200, 0)) }).map((date) => date.toISOString())
      return schema.format === 'date' ? instants.map((text) => text.slice(0, 10)) : instants
    }
    case 'integer': return fc.maxSafeInteger()
    case 'number': return fc.double({ noNaN: true, noDefaultInfinity: true })
    case 'boolean': return fc.boolean()
    case 'null': return fc.constant(null)
    case 'array': return fc.array(conforming(schema.items), { maxLength: 6 })
    case 'object': {
      const properties: Record<string, Schema> = schema.properties ?? {}
      const declared = fc.record(Object.fromEntries(Object.entries(properties).map(([key, value]) => [key, conforming(value)])), { requiredKeys: schema.required ?? [] })
      if (schema.additionalProperties !== true) return declared
      const extra = fc.dictionary(fc.string().filter((key) => !Object.hasOwn(properties, key) && key !== '__proto__'), fc.jsonValue({ maxDepth: 3 }), { maxKeys: 5 })
      return fc.tuple(extra, declared).map(([more, known]) => ({ ...more, ...known }))
    }
    // Type.Unknown(): any JSON (an editor document's content).
    case undefined: return fc.jsonValue({ maxDepth: 3 })
    default: throw new Error(`no arbitrary for ${JSON.stringify(schema)}`)
  }
}

let answer: unknown = null
// The same answer through the schema serializer and through writeJson, on the real app's shared schemas and options.
const probes: FastifyPluginAsync = async (app) => {
  for (const [name, schema] of Object.entries(HOT)) {
    app.get(`/probe/schema/${name}`, { schema: { response: { 200: schema } } }, async () => answer)
    app.get(`/probe/fast/${name}`, { config: { fastJson: true }, schema: { response: { 200: schema } } }, async () => answer)
  }
}

t.test('writeJson writes what JSON.stringify writes, frozen or not, in part or in whole', async (t) => {
  fc.assert(fc.property(fc.jsonValue({ maxDepth: 4 }), fc.constantFrom('none', 'whole', 'parts'), (value, freeze) => {
    const given = freeze === 'none' ? value : freeze === 'whole' ? deepFreeze(structuredClone(value)) : freezeChildren(structuredClone(value))
    const first = writeJson(given)
    return first.equals(Buffer.from(JSON.stringify(given))) && writeJson(given).equals(first)
  }))
  const dated = { at: new Date(0), list: [undefined, () => 1, 'é', ','], skipped: undefined, text: '→' }
  t.equal(writeJson(dated).toString(), JSON.stringify(dated), 'dates, text beyond ASCII, and what JSON leaves out or writes as null')
  // Frozen values between fresh text, beside commas and text beyond ASCII: the pieces joined in order.
  const shared = deepFreeze({ name: 'ü', n: 1 })
  const page = { items: [shared, 'é', shared, null, shared], next: ',', tail: [shared] }
  t.equal(writeJson(page).toString(), JSON.stringify(page))
  t.equal(writeJson(page).length, Buffer.byteLength(JSON.stringify(page)), 'its length is the bytes the answer is, as Content-Length says')
})

/** Freezes the members of a value, not the value itself: a page holding shared records. */
function freezeChildren (value: unknown): unknown {
  if (value !== null && typeof value === 'object') for (const member of Object.values(value)) deepFreeze(member)
  return value
}

t.test('the fast writer answers what the schema serializer answers, for every value the schema accepts', async (t) => {
  const app = await buildTestApp(t, { extra: probes })
  for (const [name, schema] of Object.entries(HOT)) {
    await fc.assert(fc.asyncProperty(conforming(schema), fc.boolean(), async (value, freeze) => {
      // Shared answers are frozen in part or in whole; both must come out the same.
      answer = freeze ? deepFreeze(structuredClone(value)) : value
      const viaSchema = await app.inject({ url: `/probe/schema/${name}` })
      const viaFast = await app.inject({ url: `/probe/fast/${name}` })
      t.equal(viaFast.statusCode, viaSchema.statusCode)
      t.equal(viaFast.headers['content-type'], viaSchema.headers['content-type'])
      t.same(viaFast.json(), viaSchema.json())
      t.equal(viaFast.headers['content-length'], String(viaFast.rawPayload.length))
    }), { numRuns: 60 })
  }
})

t.test('an error answer on a fast route goes through the error handler as on any other', async (t) => {
  const app = await buildTestApp(t, {
    extra: async (app) => {
      app.get('/probe/fast-error', { config: { fastJson: true }, schema: { response: { 200: HOT.listRecords } } }, async () => { throw new Error('boom') })
    }
  })
  const res = await app.inject({ url: '/probe/fast-error' })
  t.equal(res.statusCode, 500)
  t.match(res.json(), { success: false, code: 'APP_INTERNAL' })
})
