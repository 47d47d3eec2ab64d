import t from 'tap'
import { buildTestApp, call, orgWithRoles } from '../../helper.js'
import { startProviderServer } from '../../services/llm/provider-server.js'

t.test('LLM settings at two levels, the project\'s models and its resolved configuration through the routes', async (t) => {
  const provider = await startProviderServer(t)
  const app = await buildTestApp(t, { env: { LLM_ALLOWED_HOSTS: '127.0.0.1' } })
  const { owner, member, viewer, outsider, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Site' })).body.data.id as string
  const org = `/api/organizations/${orgId}`
  const project = `/api/projects/${projectId}`

  t.same((await call(app, 'GET', `${project}/llm-settings`, viewer.auth)).body.data, {
    level: 'project', defaultModel: null, allowedModels: null, temperature: null, maxOutputTokens: null, systemPrompt: null, maxToolSteps: null, monthlyBudgetUsd: null, allowProjectCredentials: null, updatedAt: null
  }, 'nothing set: every field null')
  const refusals: Array<[string, string, Record<string, string>, unknown, number, string]> = [
    ['a viewer', `${org}/llm-settings`, viewer.auth, { temperature: 1 }, 403, 'APP_FORBIDDEN'],
    ['a member', `${project}/llm-settings`, member.auth, { temperature: 1 }, 403, 'APP_FORBIDDEN'],
    ['an outsider', `${project}/llm-settings`, outsider.auth, { temperature: 1 }, 404, 'APP_PROJECT_NOT_FOUND'],
    ['too hot', `${org}/llm-settings`, owner.auth, { temperature: 3 }, 400, 'APP_VALIDATION_FAILED'],
    ['a model without its credential', `${org}/llm-settings`, owner.auth, { defaultModel: 'gpt-4o' }, 400, 'APP_VALIDATION_FAILED'],
    ['an unknown setting', `${org}/llm-settings`, owner.auth, { topK: 3 }, 400, 'APP_VALIDATION_FAILED'],
    ['nothing to change', `${org}/llm-settings`, owner.auth, {}, 400, 'APP_VALIDATION_FAILED'],
    ['a negative budget', `${project}/llm-settings`, owner.auth, { monthlyBudgetUsd: -1 }, 400, 'APP_VALIDATION_FAILED'],
    ['a project allowing itself', `${project}/llm-settings`, owner.auth, { allowProjectCredentials: true }, 400, 'APP_LLM_SETTINGS_INVALID']
  ]
  for (const [name, url, headers, payload, status, code] of refusals) {
    const res = await call(app, 'PATCH', url, headers, payload)
    t.same([res.status, res.body.code], [status, code], name)
  }

  const local = (await call(app, 'POST', `${org}/llm-credentials`, owner.auth, { name: 'local', provider: 'openai-compatible', baseUrl: `${provider.origin}/v1`, apiKey: provider.openaiKey })).body.data.id as string
  const orgSettings = await call(app, 'PATCH', `${org}/llm-settings`, owner.auth, { defaultModel: 'local:tiny', allowedModels: ['local:*'], systemPrompt: 'Be brief.', monthlyBudgetUsd: 50 })
  t.match(orgSettings.body.data, { level: 'organization', defaultModel: 'local:tiny', allowedModels: ['local:*'], temperature: null, updatedAt: String })
  t.match((await call(app, 'PATCH', `${project}/llm-settings`, owner.auth, { allowedModels: ['local:llama3.1:8b'], maxToolSteps: 3 })).body.data, { level: 'project', allowedModels: ['local:llama3.1:8b'], maxToolSteps: 3, defaultModel: null })

  const resolved = await call(app, 'GET', `${project}/llm-resolved`, viewer.auth)
  t.match(resolved.body.data, {
    level: 'project',
    defaultModel: { value: 'local:tiny', source: 'organization' },
    maxToolSteps: { value: 3, source: 'project' },
    maxOutputTokens: { value: 4096, source: 'platform' },
    allowedModels: { value: ['local:llama3.1:8b'], sources: ['organization', 'project'] },
    systemPrompt: { value: 'Be brief.', sources: ['organization'] },
    budgets: [{ level: 'organization', monthlyUsd: 50 }],
    credentials: [{ id: local, name: 'local', level: 'organization', keyHint: 'sk-…cdef' }],
    warnings: [{ code: 'default-model-not-allowed' }]
  }, 'every value with its source; the organization\'s default is outside the project\'s list')
  t.notOk(JSON.stringify(resolved.body).includes(provider.openaiKey), 'the resolved view holds no key')
  t.equal((await call(app, 'GET', `${project}/llm-resolved`, outsider.auth)).status, 404)

  t.same((await call(app, 'GET', `${project}/llm-models`, viewer.auth)).body.data, [], 'no model list fetched yet')
  t.equal((await call(app, 'POST', `${project}/llm-models/refresh`, owner.auth)).body.data.length, 0, 'a project refreshes only its own credentials')
  const refreshed = await call(app, 'POST', `${org}/llm-models/refresh`, owner.auth)
  t.same(refreshed.body.data.map((model: { id: string, allowed: boolean }) => [model.id, model.allowed]), [['local:llama3.1:8b', true], ['local:qwen/qwen-2.5-coder', true], ['local:tiny', true]])
  t.same((await call(app, 'GET', `${project}/llm-models`, viewer.auth)).body.data.map((model: { id: string, allowed: boolean }) => [model.id, model.allowed]),
    [['local:llama3.1:8b', true], ['local:qwen/qwen-2.5-coder', false], ['local:tiny', false]], 'the project sees its organization\'s models, its narrower list applied')
  t.equal((await call(app, 'POST', `${org}/llm-models/refresh`, viewer.auth)).status, 403)

  t.match((await call(app, 'PATCH', `${project}/llm-settings`, owner.auth, { allowedModels: null, maxToolSteps: null })).body.data, { allowedModels: null, maxToolSteps: null }, 'null clears back to the level above')
  t.same((await call(app, 'GET', `${project}/llm-resolved`, viewer.auth)).body.data.warnings, [])

  await call(app, 'PATCH', `${project}/llm-settings`, owner.auth, { temperature: 0.5 })
  await call(app, 'POST', `${project}/llm-credentials`, owner.auth, { name: 'mine', provider: 'openai', apiKey: 'sk-project-0000000000000' })
  t.equal((await call(app, 'DELETE', project, owner.auth)).status, 200)
  t.equal(await app.store.collection('llm_credentials').countDocuments({ projectId }), 0, 'a deleted project\'s credentials go with it')
  t.equal(await app.store.collection('llm_settings').countDocuments({ _id: `project:${projectId}` }), 0, 'and its settings')
  t.equal(await app.store.collection('llm_settings').countDocuments({ _id: `org:${orgId}` }), 1, 'the organization\'s stay')
  t.equal((await call(app, 'DELETE', org, owner.auth)).status, 200)
  t.equal(await app.store.collection('llm_credentials').countDocuments({ orgId }), 0, 'a deleted organization\'s credentials go with it')
  t.equal(await app.store.collection('llm_settings').countDocuments({ orgId }), 0, 'and its settings')
})
