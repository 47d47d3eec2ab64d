import t from 'tap'
import { buildTestApp, signUp, call } from '../../helper.js'

/**
 * User-supplied patterns run on RE2, linear in the text: a pattern that
 * backtracks exponentially on V8's engine answers at once, and what RE2
 * cannot express is refused up front instead of being run.
 */
async function notesProject (t: Parameters<typeof buildTestApp>[0]) {
  const app = await buildTestApp(t)
  const admin = await signUp(app, 'admin@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
  const projectId = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name: 'Notes' })).body.data.id as string
  const base = `/api/projects/${projectId}/collections`
  const open = { enabled: true, rule: { requireAuth: false } }
  const defined = await call(app, 'POST', base, admin.auth, {
    name: 'notes',
    fields: [{ name: 'body', type: 'text' }, { name: 'tags', type: 'select', values: ['x', 'y'], multiple: true }],
    methods: { list: open, create: open, update: open, delete: open }
  })
  if (defined.status !== 201) throw new Error(JSON.stringify(defined.body))
  return { app, admin, projectId, base, notes: `/api/p/${projectId}/notes` }
}

t.test('a catastrophic pattern over a 100 KB value answers, and the server keeps answering others meanwhile', async (t) => {
  const { app, notes } = await notesProject(t)
  t.equal((await call(app, 'POST', notes, {}, { body: 'a'.repeat(100_000) })).status, 201)
  t.equal((await call(app, 'POST', notes, {}, { body: 'aaax' })).status, 201)
  const address = await app.listen({ port: 0, host: '127.0.0.1' })

  // On a backtracking engine this pattern never finishes over 100,000 characters; tap's timeout is the guard.
  const catastrophic = fetch(`${address}${notes}/query`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ filter: { body: { $regex: '(.*.*)*x' } } })
  })
  const health = await fetch(`${address}/healthz`)
  t.equal(health.status, 200, '/healthz answers while the pattern runs')
  const res = await catastrophic
  t.equal(res.status, 200)
  const page = await res.json() as { data: { items: Array<{ body: string }> } }
  t.same(page.data.items.map((item) => item.body), ['aaax'], 'and the answer is right: only the value holding an x matches')

  const inverted = await call(app, 'POST', `${notes}/query`, {}, { filter: { body: { $not: { $regex: '(a|aa)*$x', $options: 'i' } } } })
  t.equal(inverted.body.data.items.length, 2, '$not over the same engine')
  const bulk = await call(app, 'PATCH', notes, {}, { filter: { body: { $regex: '(x+x+)+y' } }, set: { body: 'never' }, dryRun: true })
  t.same(bulk.body.data, { matched: 0, modified: 0, dryRun: true }, 'bulk writes select with the same engine')
})

t.test('patterns RE2 cannot express are refused with 400 naming the clause, in filters and in field definitions', async (t) => {
  const { app, admin, base, notes } = await notesProject(t)
  await call(app, 'POST', notes, {}, { body: 'abab' })
  const refused: Array<[string, unknown]> = [
    ['a backreference', { body: { $regex: '(ab)\\1' } }],
    ['a lookahead', { body: { $regex: 'a(?=b)' } }],
    ['a negative lookbehind', { body: { $regex: '(?<!a)b' } }],
    ['inside $not', { body: { $not: { $regex: '(a)\\1' } } }],
    ['inside $or', { $or: [{ body: 'x' }, { body: { $regex: '(?!a)' } }] }]
  ]
  for (const [name, filter] of refused) {
    const res = await call(app, 'POST', `${notes}/query`, {}, { filter })
    t.same([res.status, res.body.code], [400, 'APP_INVALID_FILTER'], name)
    t.match(res.body.message, /backreferences and lookaround are not supported/, `${name}: the message says why`)
    const query = await call(app, 'GET', `${notes}?filter=${encodeURIComponent(JSON.stringify(filter))}`, {})
    t.same([query.status, query.body.code], [400, 'APP_INVALID_FILTER'], `${name}, in the query string`)
  }
  t.equal((await call(app, 'POST', `${notes}/query`, {}, { filter: { body: { $regex: 'a(b|c)\\w+' } } })).body.data.items.length, 1, 'what RE2 runs is accepted')

  const withPattern = (pattern: string) => ({ name: 'codes', fields: [{ name: 'code', type: 'text', pattern }], methods: {} })
  const backreference = await call(app, 'POST', base, admin.auth, withPattern('(a)\\1'))
  t.same([backreference.status, backreference.body.code, backreference.body.details?.fields?.[0]?.path], [400, 'APP_INVALID_DEFINITION', 'fields[0].pattern'], 'a field pattern with a backreference')
  t.match(backreference.body.message, /linear-time engine/)
  const defined = await call(app, 'POST', base, admin.auth, withPattern('(x+x+)+y'))
  t.equal(defined.status, 201, 'a pattern that is only slow on a backtracking engine is fine')
  await call(app, 'PUT', `${base}/codes`, admin.auth, { methods: { create: { enabled: true, rule: { requireAuth: false } } } })
  const codes = notes.replace(/notes$/, 'codes')
  const slow = await call(app, 'POST', codes, {}, { code: `${'x'.repeat(50_000)}!` })
  t.same([slow.status, slow.body.code], [400, 'APP_INVALID_FIELD'], 'and a value that would backtrack forever is refused at once')
  t.equal((await call(app, 'POST', codes, {}, { code: 'xxxxy' })).status, 201)
})
