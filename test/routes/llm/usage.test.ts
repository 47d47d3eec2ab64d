import t from 'tap'
import { buildTestApp, call, orgWithRoles } from '../../helper.js'
import { startProviderServer } from '../../services/llm/provider-server.js'

t.test('the LLM usage ledger: roll-ups by month, model and user, stacked budgets refusing before a call, the routes and their paging', async (t) => {
  const provider = await startProviderServer(t)
  const app = await buildTestApp(t, { env: { LLM_ALLOWED_HOSTS: '127.0.0.1' } })
  const { owner, viewer, outsider, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Site' })).body.data.id as string
  const otherId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Other' })).body.data.id as string
  const org = `/api/organizations/${orgId}`
  const project = `/api/projects/${projectId}`
  const credentialId = (await call(app, 'POST', `${org}/llm-credentials`, owner.auth, { name: 'local', provider: 'openai-compatible', baseUrl: `${provider.origin}/v1`, apiKey: provider.openaiKey })).body.data.id as string
  await call(app, 'POST', `${org}/llm-models/refresh`, owner.auth)
  const { usage } = app.llm
  const base = { organizationId: orgId, provider: 'openai-compatible', credentialId, latencyMs: 120 }
  const priced = { ...base, model: 'qwen/qwen-2.5-coder', inputTokens: 1_000_000, outputTokens: 500_000 } // 0.2 + 0.3 USD at the listed prices
  await usage.record({ ...priced, projectId, userId: owner.id, sessionId: 's1', runId: 'r1', at: new Date('2026-11-30T23:59:59.999Z') })
  await usage.record({ ...priced, projectId, userId: viewer.id, at: new Date('2026-11-01T00:00:00.000Z') })
  await usage.record({ ...base, model: 'tiny', inputTokens: 10, outputTokens: 5, projectId, userId: owner.id, at: new Date('2026-11-15T12:00:00Z') })
  await usage.record({ ...priced, projectId: otherId, userId: owner.id, at: new Date('2026-11-10T00:00:00Z') })
  await usage.record({ ...priced, projectId, userId: owner.id, at: new Date('2026-12-01T00:00:00.000Z') })
  await usage.record({ ...priced, projectId, userId: owner.id, at: new Date('2026-10-31T23:59:59.999Z') })

  const month = await call(app, 'GET', `${project}/llm-usage?month=2026-11`, viewer.auth)
  t.equal(month.status, 200)
  t.same(month.body.data.totals, { calls: 3, inputTokens: 2_000_010, outputTokens: 1_000_005, costUsd: 1, unpricedCalls: 1 }, 'the month\'s calls, its first and last instants in, its neighbours out; an unpriced model counts no cost')
  t.same(month.body.data.byModel.map((row: { model: string, calls: number, costUsd: number }) => [row.model, row.calls, row.costUsd]), [['qwen/qwen-2.5-coder', 2, 1], ['tiny', 1, 0]])
  t.same(month.body.data.byUser.map((row: { userId: string, calls: number, costUsd: number }) => [row.userId, row.calls, row.costUsd]).sort(), [[owner.id, 2, 0.5], [viewer.id, 1, 0.5]].sort())
  t.same(month.body.data.budgets, [], 'no budget set')
  const orgMonth = await call(app, 'GET', `${org}/llm-usage?month=2026-11`, viewer.auth)
  t.match(orgMonth.body.data, { level: 'organization', totals: { calls: 4, costUsd: 1.5 } }, 'the organization sums every project')
  t.match((await call(app, 'GET', `${project}/llm-usage?month=2026-12`, viewer.auth)).body.data.totals, { calls: 1, costUsd: 0.5 })

  // Budgets stack: either level out of room refuses, before any model call.
  const nov = new Date('2026-11-20T00:00:00Z')
  await usage.assertRoom({ organizationId: orgId, projectId }, nov)
  await call(app, 'PATCH', `${project}/llm-settings`, owner.auth, { monthlyBudgetUsd: 1 })
  await t.rejects(usage.assertRoom({ organizationId: orgId, projectId }, nov), { code: 'APP_LLM_BUDGET_EXCEEDED', status: 402, message: /project's monthly LLM budget of 1 USD is spent for 2026-11/ }, 'the project spent its 1 USD')
  await usage.assertRoom({ organizationId: orgId, projectId: otherId }, nov)
  await usage.assertRoom({ organizationId: orgId, projectId }, new Date('2027-01-02T00:00:00Z'))
  await call(app, 'PATCH', `${project}/llm-settings`, owner.auth, { monthlyBudgetUsd: 100 })
  await call(app, 'PATCH', `${org}/llm-settings`, owner.auth, { monthlyBudgetUsd: 1.5 })
  await t.rejects(usage.assertRoom({ organizationId: orgId, projectId: otherId }, nov), { code: 'APP_LLM_BUDGET_EXCEEDED', message: /organization's/ }, 'the organization\'s spend counts every project: the other project is refused too')
  await usage.assertRoom({ organizationId: orgId, projectId }, new Date('2026-12-05T00:00:00Z'))
  t.same((await call(app, 'GET', `${project}/llm-usage?month=2026-11`, viewer.auth)).body.data.budgets, [
    { level: 'organization', monthlyUsd: 1.5, spentUsd: 1.5, remainingUsd: 0 },
    { level: 'project', monthlyUsd: 100, spentUsd: 1, remainingUsd: 99 }
  ])

  // Calls, newest first, a page at a time.
  const seen: string[] = []
  let cursor: string | null = null
  do {
    const res = await call(app, 'GET', `${org}/llm-usage/calls?month=2026-11&limit=3${cursor === null ? '' : `&cursor=${encodeURIComponent(cursor)}`}`, viewer.auth)
    t.equal(res.status, 200)
    seen.push(...res.body.data.items.map((item: { id: string }) => item.id))
    cursor = res.body.data.nextCursor
  } while (cursor !== null)
  t.equal(seen.length, 4, 'four calls in two pages')
  t.same(seen, [...seen].sort().reverse(), 'newest first, none twice')
  const first = (await call(app, 'GET', `${project}/llm-usage/calls?month=2026-11&limit=1`, viewer.auth)).body.data
  t.match(first.items[0], { projectId, userId: String, model: String, latencyMs: 120, at: String })
  t.equal((await call(app, 'GET', `${org}/llm-usage/calls?month=2026-11&cursor=${encodeURIComponent(first.nextCursor as string)}`, viewer.auth)).body.code, 'APP_INVALID_CURSOR', 'a cursor of another list is refused')

  for (const bad of ['2026-13', '26-11', 'november']) {
    const res = await call(app, 'GET', `${project}/llm-usage?month=${bad}`, viewer.auth)
    t.same([res.status, res.body.code], [400, 'APP_VALIDATION_FAILED'], `month=${bad}`)
    t.match(JSON.stringify(res.body), /month/, 'the error names the field')
  }
  t.equal((await call(app, 'GET', `${project}/llm-usage`, outsider.auth)).status, 404, 'an outsider does not see the project')
  t.equal((await call(app, 'GET', `${org}/llm-usage/calls`, outsider.auth)).status, 404)

  t.equal((await call(app, 'DELETE', project, owner.auth)).status, 200)
  t.equal(await app.store.collection('llm_usage').countDocuments({ projectId }), 0, 'a deleted project\'s usage goes with it')
  t.equal(await app.store.collection('llm_usage').countDocuments({ projectId: otherId }), 1)
  t.equal((await call(app, 'DELETE', org, owner.auth)).status, 200)
  t.equal(await app.store.collection('llm_usage').countDocuments({ orgId }), 0, 'a deleted organization\'s usage goes with it')
})
