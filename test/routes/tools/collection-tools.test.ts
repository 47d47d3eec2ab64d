import t from 'tap'
import { trackerSetup } from '../tracker/fixtures.js'
import { mcpClient, refusalOf } from './mcp-client.js'

t.test('collection tools over MCP with the SDK client: definitions, records with the caller\'s own access, as the data API answers', async (t) => {
  const s = await trackerSetup(t)
  await s.app.listen({ port: 0, host: '127.0.0.1' })
  // Enabled without a rule: for platform users by their records.* permissions only, as the data API decides.
  const admins = { enabled: true, rule: null }
  await s.must('POST', `/api/projects/${s.projectId}/collections`, s.owner.auth, { name: 'notes', fields: [{ name: 'title', type: 'text', required: true }], methods: { list: admins, get: admins, create: admins, update: admins } })
  const data = `/api/p/${s.projectId}`
  const owner = await mcpClient(t, s, s.owner.token)

  const { tools } = await owner.client.listTools()
  const byName = new Map(tools.map((tool) => [tool.name, tool]))
  for (const name of ['collections_list', 'records_query', 'record_create', 'record_update']) t.ok(byName.has(name), `${name} is listed`)
  t.same(['collections_list', 'records_query'].map((name) => byName.get(name)?.annotations?.readOnlyHint), [true, true])
  t.same(['record_create', 'record_update'].map((name) => byName.get(name)?.annotations?.destructiveHint), [true, true], 'record writes ask a person first')
  t.same(['records_query', 'record_create'].map((name) => byName.get(name)?._meta?.['plinth/permission']), ['records.read', 'records.write'])

  const definitions = await owner.call('collections_list', {})
  t.notOk(definitions.isError, JSON.stringify(definitions.content))
  t.same(definitions.structuredContent.items.map((collection: { name: string }) => collection.name), (await s.must('GET', `/api/projects/${s.projectId}/collections`, s.owner.auth)).map((collection: { name: string }) => collection.name), 'the definitions the route lists')

  const created = await owner.call('record_create', { table: 'notes', values: { title: 'First' } })
  t.notOk(created.isError, JSON.stringify(created.content))
  t.match(created.structuredContent, { id: String, title: 'First', version: 1 })
  await s.must('POST', `${data}/notes`, s.owner.auth, { title: 'Second' })
  const found = await owner.call('records_query', { table: 'notes', query: { filter: { title: 'Second' }, count: true } })
  t.notOk(found.isError, JSON.stringify(found.content))
  t.match(found.structuredContent, { items: [{ title: 'Second' }], total: 1 }, 'a record the route wrote, by filter')
  const updated = await owner.call('record_update', { table: 'notes', id: created.structuredContent.id, values: { title: 'First, edited' }, ifVersion: 1 })
  t.match(updated.structuredContent, { title: 'First, edited', version: 2 })
  t.equal((await s.must('GET', `${data}/notes/${created.structuredContent.id as string}`, s.owner.auth)).title, 'First, edited', 'the data API reads the change')

  // Each refusal is the one the data API gives the same caller for the same request.
  const rest = async (method: 'GET' | 'POST' | 'PUT', path: string, auth: Record<string, string>, body?: unknown, headers: Record<string, string> = {}) => (await s.api(method, `${data}${path}`, { ...auth, ...headers }, body)).body.code as string
  const stale = await owner.call('record_update', { table: 'notes', id: created.structuredContent.id, values: { title: 'Late' }, ifVersion: 1 })
  t.equal(refusalOf(stale).code, await rest('PUT', `/notes/${created.structuredContent.id as string}`, s.owner.auth, { title: 'Late' }, { 'if-match': '"1"' }), 'a stale version')
  const invalid = await owner.call('record_create', { table: 'notes', values: { body: 'no title' } })
  t.equal(refusalOf(invalid).code, await rest('POST', '/notes', s.owner.auth, { body: 'no title' }), 'an unknown field')
  const missing = await owner.call('records_query', { table: 'nothing', query: {} })
  t.equal(refusalOf(missing).code, await rest('GET', '/nothing', s.owner.auth), 'an unknown collection')
  t.equal(refusalOf(missing).code, 'APP_COLLECTION_NOT_FOUND')

  // The viewer reads, never writes: the write tools are not offered and are refused as the route refuses them.
  const viewer = await mcpClient(t, s, s.viewer.token)
  const offered = await viewer.names()
  t.ok(offered.includes('records_query') && offered.includes('collections_list'), 'the viewer is offered the reads')
  t.notOk(offered.includes('record_create') || offered.includes('record_update'), 'and no record write')
  t.match((await viewer.call('records_query', { table: 'notes', query: {} })).structuredContent, { items: [{}, {}] })
  const refused = await viewer.call('record_create', { table: 'notes', values: { title: 'Viewer' } })
  t.match(refusalOf(refused), { code: 'APP_FORBIDDEN', details: { permission: 'records.write' } })
  t.equal(refusalOf(refused).code, await rest('POST', '/notes', s.viewer.auth, { title: 'Viewer' }))
  t.equal((await s.must('GET', `${data}/notes?count=true`, s.owner.auth)).total, 2, 'nothing was written by the refused calls')

  // A PAT scoped to records.read holds only that: the query tool, not the definitions or the writes.
  const pat = await s.must('POST', '/api/auth/api-keys', s.owner.auth, { name: 'reader', scopes: ['tracker.read', 'records.read'] })
  const scoped = await mcpClient(t, s, pat.token as string)
  const scopedNames = await scoped.names()
  t.ok(scopedNames.includes('records_query'))
  t.notOk(scopedNames.includes('collections_list') || scopedNames.includes('record_create'), 'the scopes narrow the list')
  t.match(refusalOf(await scoped.call('record_create', { table: 'notes', values: { title: 'Scoped' } })), { code: 'APP_FORBIDDEN' })
})
