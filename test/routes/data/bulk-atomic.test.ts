import t from 'tap'
import { buildTestApp, signUp, call } from '../../helper.js'

/**
 * A bulk update or delete is one Store call over the records it selected,
 * and multi-document writes are all-or-nothing on both engines: a refusal
 * halfway through leaves every record as it was, versions included.
 */
t.test('a bulk update meeting a unique conflict changes no record', async (t) => {
  const app = await buildTestApp(t)
  const admin = await signUp(app, 'admin@example.com')
  const orgId = (await call(app, 'POST', '/api/organizations', admin.auth, { name: 'Acme' })).body.data.id as string
  const projectId = (await call(app, 'POST', '/api/projects', admin.auth, { orgId, name: 'Codes' })).body.data.id as string
  const open = { enabled: true, rule: { requireAuth: false } }
  const defined = await call(app, 'POST', `/api/projects/${projectId}/collections`, admin.auth, {
    name: 'codes',
    fields: [{ name: 'code', type: 'text', unique: true }, { name: 'group', type: 'text' }],
    methods: { list: open, create: open, update: open, delete: open }
  })
  if (defined.status !== 201) throw new Error(JSON.stringify(defined.body))
  const codes = `/api/p/${projectId}/codes`
  for (const code of ['a', 'b', 'c']) t.equal((await call(app, 'POST', codes, {}, { code, group: 'g' })).status, 201)
  const before = (await call(app, 'GET', `${codes}?sort=code`, {})).body.data.items

  const clash = await call(app, 'PATCH', codes, {}, { filter: { group: 'g' }, set: { code: 'same' } })
  t.same([clash.status, clash.body.code, clash.body.details], [409, 'APP_DUPLICATE_VALUE', { fields: [{ path: 'code', message: 'is already taken' }] }])
  t.same((await call(app, 'GET', `${codes}?sort=code`, {})).body.data.items, before, 'every record keeps its value, version and updatedAt')

  const fine = await call(app, 'PATCH', codes, {}, { filter: { code: { $in: ['a', 'b'] } }, set: { group: 'h' } })
  t.same(fine.body.data, { matched: 2, modified: 2, dryRun: false }, 'a bulk update without a conflict applies to all')
  t.same((await call(app, 'GET', `${codes}?sort=code`, {})).body.data.items.map((r: { group: string, version: number }) => [r.group, r.version]), [['h', 2], ['h', 2], ['g', 1]])
})
