import t, { type Test } from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { trackerSetup, type TrackerSetup } from './fixtures.js'

interface ToolAnswer { isError?: boolean, structuredContent?: any, content: Array<{ type: string, text?: string }> }

/** The SDK's own client, over HTTP to the listening app, with `token` as its bearer credential. */
async function connect (t: Test, s: TrackerSetup, token: string): Promise<{ call: (name: string, args: object) => Promise<ToolAnswer>, client: Client }> {
  const address = s.app.server.address()
  if (address === null || typeof address === 'string') throw new Error('not listening')
  const url = new URL(`http://127.0.0.1:${address.port}${s.base}/mcp`)
  const client = new Client({ name: 'plinth-test', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(url, { requestInit: { headers: { authorization: `Bearer ${token}` } } }))
  t.teardown(async () => { await client.close() })
  return { client, call: async (name, args) => await client.callTool({ name, arguments: args as Record<string, unknown> }) as ToolAnswer }
}

const refusalOf = (answer: ToolAnswer) => JSON.parse(answer.content[0].text ?? '{}') as { success: boolean, code: string, message: string }

t.test('the MCP server over Streamable HTTP, with the SDK client', async (t) => {
  const s = await trackerSetup(t)
  await s.app.listen({ port: 0, host: '127.0.0.1' })
  const { client, call } = await connect(t, s, s.owner.token)
  t.equal(client.getServerVersion()?.name, 'plinth', 'the server names the platform, whose every family it serves')

  const { tools } = await client.listTools()
  const byName = new Map(tools.map((tool) => [tool.name, tool]))
  for (const name of ['work_items_list', 'work_items_count', 'work_item_get_by_key', 'work_item_create', 'work_item_update', 'work_item_archive',
    'work_item_comment', 'work_item_link', 'work_item_relate', 'work_items_bulk_create', 'cycles_list', 'cycle_add_items', 'cycle_remove_item',
    'cycle_transfer', 'modules_list', 'intake_triage', 'states_list', 'labels_list', 'members_list',
    'workspace_members_list', 'workspace_activity_list', 'active_cycles_list', 'tracker_search']) t.ok(byName.has(name), name)
  t.equal(byName.get('work_items_list')?.annotations?.readOnlyHint, true)
  t.equal(byName.get('work_item_archive')?.annotations?.destructiveHint, true)
  // One rule for MCP's hint and the assistant's approval: removals, access grants and what the apps serve or run.
  t.same(['work_item_create', 'work_item_archive', 'member_add', 'states_list'].map((name) => [byName.get(name)?._meta?.['plinth/risk'], byName.get(name)?.annotations?.destructiveHint]),
    [['write', false], ['critical', true], ['critical', true], ['read', false]])
  t.same(byName.get('work_item_create')?.inputSchema.required, ['lpId', 'item'])

  const created = await call('work_item_create', { lpId: s.lpId, item: { title: 'Broken login', priority: 'high' } })
  t.notOk(created.isError, JSON.stringify(created.content))
  t.equal(created.structuredContent.key, 'WEB-1')
  const second = await call('work_item_create', { lpId: s.lpId, item: { title: 'Slow search' } })
  t.equal(second.structuredContent.key, 'WEB-2')

  const found = await call('tracker_search', { q: 'login' })
  t.notOk(found.isError, JSON.stringify(found.content))
  t.same(found.structuredContent.items.map((hit: { workItem: { key: string } }) => hit.workItem.key), ['WEB-1'], 'the client can search')
  t.equal(found.structuredContent.facets.type.workItem, 1)
  t.equal((await call('tracker_search', { q: 'WEB-2' })).structuredContent.items[0].matchedBy, 'key')

  const byKey = await call('work_item_get_by_key', { key: 'web-1' })
  t.equal(byKey.structuredContent.id, created.structuredContent.id)
  t.equal(byKey.structuredContent.title, 'Broken login')
  const feed = await call('workspace_activity_list', { query: { limit: 50 } })
  t.ok(feed.structuredContent.items.some((entry: { itemId: string }) => entry.itemId === second.structuredContent.id), 'the workspace feed as a tool')
  const people = await call('workspace_members_list', {})
  t.ok(people.structuredContent.items.some((person: { userId: string }) => person.userId === s.owner.id), 'who can be assigned, as a tool')
  t.same((await call('active_cycles_list', {})).structuredContent, { items: [], nextCursor: null })

  const first = await call('work_items_list', { lpId: s.lpId, query: { limit: 1 } })
  t.equal(first.structuredContent.items.length, 1)
  t.type(first.structuredContent.nextCursor, 'string')
  const next = await call('work_items_list', { lpId: s.lpId, query: { limit: 1, cursor: first.structuredContent.nextCursor } })
  t.equal(next.structuredContent.items.length, 1)
  t.not(next.structuredContent.items[0].id, first.structuredContent.items[0].id)
  t.same(new Set([first.structuredContent.items[0].key, next.structuredContent.items[0].key]), new Set(['WEB-1', 'WEB-2']))

  // Refusals are tool errors carrying the platform's code and message.
  const missing = await call('work_item_get_by_key', { key: 'WEB-99' })
  t.equal(missing.isError, true)
  t.equal(refusalOf(missing).code, 'APP_TRACKER_ITEM_NOT_FOUND')
  const invalid = await call('work_item_create', { lpId: s.lpId, item: { title: 'x', colour: 'red' } })
  t.equal(invalid.isError, true)
  t.match(refusalOf(invalid), { success: false, code: 'APP_VALIDATION_FAILED', message: 'input.item.colour is not an allowed field' })

  // The audit log holds each change a tool made, as the caller's, and nothing for reads, refusals or the messages.
  const audit = await s.must('GET', `/api/organizations/${s.orgId}/audit-log?limit=100`, s.owner.auth)
  const viaMcp = (audit.items as Array<{ action: string, method: string, route: string, actor: { userId: string, credential: string }, target: { id: string }, summary: { fields: string[] } }>)
    .filter((entry) => entry.route === '/api/projects/:projectId/tracker/mcp')
  t.same(viaMcp.map((entry) => [entry.action, entry.method, entry.actor.userId, entry.actor.credential, entry.target.id, entry.summary.fields]), [
    ['tool:work_item_create', 'TOOL', s.owner.id, 'session', second.structuredContent.id, ['item', 'lpId']],
    ['tool:work_item_create', 'TOOL', s.owner.id, 'session', created.structuredContent.id, ['item', 'lpId']]
  ], 'one entry per write tool call, newest first; none for reads, refusals or tools/list')
})

t.test('a read-only PAT reads and is refused writes; access is read afresh on every call', async (t) => {
  const s = await trackerSetup(t)
  await s.app.listen({ port: 0, host: '127.0.0.1' })
  const pat = await s.must('POST', '/api/auth/api-keys', s.owner.auth, { name: 'mcp', scopes: ['tracker.read'] })
  const reader = await connect(t, s, pat.token as string)
  const offered = (await reader.client.listTools()).tools
  t.ok(offered.some((tool) => tool.name === 'states_list'), 'the read tools are listed')
  t.ok(offered.every((tool) => tool.annotations?.readOnlyHint === true), 'a read-only PAT is offered no write tool')
  const listed = await reader.call('states_list', { lpId: s.lpId })
  t.notOk(listed.isError)
  t.ok(listed.structuredContent.items.length > 0)
  const write = await reader.call('work_item_create', { lpId: s.lpId, item: { title: 'Not allowed' } })
  t.equal(write.isError, true)
  t.match(refusalOf(write), { code: 'APP_FORBIDDEN', message: /tracker\.write/ })
  t.equal((await s.must('GET', `${s.lp}/work-items/count`, s.owner.auth)).total, 0, 'nothing was created')

  // The member writes, is made a viewer, and the same connection's next write is refused.
  const member = await connect(t, s, s.member.token)
  t.notOk((await member.call('work_item_create', { lpId: s.lpId, item: { title: 'First' } })).isError)
  await s.must('PUT', `/api/organizations/${s.orgId}/members/${s.member.id}`, s.owner.auth, { role: 'viewer' })
  const after = await member.call('work_item_create', { lpId: s.lpId, item: { title: 'Second' } })
  t.equal(after.isError, true)
  t.equal(refusalOf(after).code, 'APP_FORBIDDEN')
})

t.test('the endpoint refuses a missing credential or an outsider as a JSON-RPC error with a Bearer challenge', async (t) => {
  const s = await trackerSetup(t)
  const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
  const none = await s.app.inject({ method: 'POST', url: `${s.base}/mcp`, headers, payload: initialize })
  t.equal(none.statusCode, 401)
  t.match(none.headers['www-authenticate'], /^Bearer/)
  t.match(none.json(), { jsonrpc: '2.0', id: null, error: { data: { code: 'APP_UNAUTHORIZED' } } })
  const outsider = await s.app.inject({ method: 'POST', url: `${s.base}/mcp`, headers: { ...headers, ...s.outsider.auth }, payload: initialize })
  t.equal(outsider.statusCode, 404)
  t.equal(outsider.json().error.data.code, 'APP_PROJECT_NOT_FOUND')
  const get = await s.app.inject({ method: 'GET', url: `${s.base}/mcp`, headers: s.owner.auth })
  t.equal(get.statusCode, 405)
})
