import t from 'tap'
import fc from 'fast-check'
import { buildTestApp, signUp } from '../../helper.js'

/**
 * Random filters, bodies and query strings against the data routes: every
 * answer is a 2xx or a 4xx in the envelope, never a 500, and records outside
 * the caller's rule never change.
 */
const RUNS = Number(process.env.FUZZ_RUNS ?? 400)

const fieldNames = fc.constantFrom('title', 'status', 'views', 'author', 'publishedAt', 'meta', 'meta.a', 'id', 'createdAt', 'version', 'passwordHash', '_id', '$where', 'nope', '')
const operators = fc.constantFrom('$eq', '$ne', '$gt', '$gte', '$lt', '$lte', '$in', '$nin', '$exists', '$regex', '$options', '$not', '$elemMatch', '$all', '$size', '$and', '$or', '$nor', '$where', '$expr', '$function', '$text', '$foo')
const scalars = fc.oneof(fc.string({ maxLength: 12 }), fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.constantFrom('2026-01-01T00:00:00Z', '(a+)+$', '@request.auth.id', '__proto__'))
const values: fc.Arbitrary<unknown> = fc.letrec((tie) => ({
  value: fc.oneof({ depthSize: 'small' }, scalars, fc.array(tie('value'), { maxLength: 4 }), fc.dictionary(fc.oneof(fieldNames, operators), tie('value'), { maxKeys: 3 }))
})).value
const filters = fc.oneof(
  fc.dictionary(fc.oneof(fieldNames, operators), values, { maxKeys: 4 }),
  values,
  fc.string({ maxLength: 40 })
)
const bodies = fc.oneof(fc.dictionary(fieldNames, values, { maxKeys: 5 }), values)
const queryStrings = fc.array(fc.tuple(fc.constantFrom('filter', 'sort', 'limit', 'offset', 'cursor', 'fields', 'count', 'x'), fc.oneof(fc.string({ maxLength: 30 }), fc.integer().map(String), filters.map((f) => JSON.stringify(f) ?? ''))), { maxLength: 4 })

t.test('the data API never answers 500 and never touches records outside the rule', async (t) => {
  const app = await buildTestApp(t)
  const admin = await signUp(app, 'admin@example.com')
  const orgId = (await app.inject({ method: 'POST', url: '/api/organizations', headers: admin.auth, payload: { name: 'Fuzz' } })).json().data.id as string
  const projectId = (await app.inject({ method: 'POST', url: '/api/projects', headers: admin.auth, payload: { orgId, name: 'Fuzz' } })).json().data.id as string
  await app.inject({ method: 'POST', url: `/api/projects/${projectId}/auth/toggle`, headers: admin.auth, payload: { enabled: true } })
  const rule = { requireAuth: true, owner: 'author' }
  const created = await app.inject({
    method: 'POST',
    url: `/api/projects/${projectId}/collections`,
    headers: admin.auth,
    payload: {
      name: 'posts',
      fields: [
        { name: 'title', type: 'text', required: true }, { name: 'status', type: 'select', values: ['draft', 'published'] },
        { name: 'views', type: 'number' }, { name: 'author', type: 'text' }, { name: 'publishedAt', type: 'date' }, { name: 'meta', type: 'json' }
      ],
      methods: Object.fromEntries(['list', 'get', 'create', 'update', 'delete'].map((method) => [method, { enabled: true, rule }]))
    }
  })
  t.equal(created.statusCode, 201)
  const register = async (email: string) => {
    const session = (await app.inject({ method: 'POST', url: `/api/p/${projectId}/auth/register`, payload: { email, password: 'long enough 1' } })).json().data
    return { authorization: `Bearer ${session.accessToken as string}` }
  }
  const ann = await register('ann@example.com')
  const bob = await register('bob@example.com')
  const posts = `/api/p/${projectId}/posts`
  for (let i = 0; i < 5; i++) await app.inject({ method: 'POST', url: posts, headers: bob, payload: { title: `bob ${i}`, status: 'draft', views: i, meta: { a: i } } })
  const annPost = (await app.inject({ method: 'POST', url: posts, headers: ann, payload: { title: 'ann' } })).json().data.id as string
  const bobsBefore = JSON.stringify(await app.store.collection(`p_${projectId}_posts`).find({ title: { $regex: '^bob' } }, { sort: { _id: 1 } }).toArray())

  const seen = new Map<number, number>()
  const expectEnvelope = (status: number, body: string, what: string): void => {
    seen.set(status, (seen.get(status) ?? 0) + 1)
    if (status >= 500) t.fail(`${what} answered ${status}: ${body}`)
    const parsed = JSON.parse(body)
    if (typeof parsed.success !== 'boolean' || (parsed.success === false && typeof parsed.code !== 'string')) t.fail(`${what} answered outside the envelope: ${body}`)
  }

  await fc.assert(fc.asyncProperty(queryStrings, async (pairs) => {
    const query = new URLSearchParams(pairs).toString()
    const res = await app.inject({ method: 'GET', url: `${posts}?${query}`, headers: ann })
    expectEnvelope(res.statusCode, res.body, `GET ?${query}`)
  }), { numRuns: RUNS })

  await fc.assert(fc.asyncProperty(filters, async (filter) => {
    const res = await app.inject({ method: 'POST', url: `${posts}/query`, headers: ann, payload: { filter } as object })
    expectEnvelope(res.statusCode, res.body, `query ${JSON.stringify(filter)}`)
  }), { numRuns: RUNS })

  await fc.assert(fc.asyncProperty(bodies, async (body) => {
    const res = await app.inject({ method: 'POST', url: posts, headers: { ...ann, 'content-type': 'application/json' }, payload: JSON.stringify(body) ?? 'null' })
    expectEnvelope(res.statusCode, res.body, `create ${JSON.stringify(body)}`)
  }), { numRuns: RUNS })

  await fc.assert(fc.asyncProperty(bodies, async (body) => {
    const res = await app.inject({ method: 'PUT', url: `${posts}/${annPost}`, headers: { ...ann, 'content-type': 'application/json' }, payload: JSON.stringify(body) ?? 'null' })
    expectEnvelope(res.statusCode, res.body, `update ${JSON.stringify(body)}`)
  }), { numRuns: RUNS })

  await fc.assert(fc.asyncProperty(filters, bodies, fc.boolean(), async (filter, set, dryRun) => {
    const patch = await app.inject({ method: 'PATCH', url: posts, headers: ann, payload: { filter, set, dryRun } as object })
    expectEnvelope(patch.statusCode, patch.body, `bulk update ${JSON.stringify({ filter, set })}`)
    const del = await app.inject({ method: 'DELETE', url: posts, headers: ann, payload: { filter, dryRun: true } as object })
    expectEnvelope(del.statusCode, del.body, `bulk delete ${JSON.stringify(filter)}`)
  }), { numRuns: RUNS })

  const bobsAfter = JSON.stringify(await app.store.collection(`p_${projectId}_posts`).find({ title: { $regex: '^bob' } }, { sort: { _id: 1 } }).toArray())
  t.equal(bobsAfter, bobsBefore, 'Bob\'s records are exactly as they were')
  t.ok((seen.get(200) ?? 0) > 0 && (seen.get(400) ?? 0) > 0, `both successes and refusals were exercised: ${JSON.stringify(Object.fromEntries(seen))}`)
})
