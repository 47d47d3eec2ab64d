import t from 'tap'
import { randomBytes } from 'node:crypto'
import { Cursors } from '../../../services/collections/query.js'
import { ManualClock } from '../../../services/platform/clock.js'
import { createSecretBox } from '../../../services/platform/crypto.js'
import { newId } from '../../../services/platform/ids.js'
import { parseLlmConfig } from '../../../services/llm/config.js'
import { sealedLlmKeys } from '../../../services/llm/credentials.js'
import { buildLlmServices, type LlmServices } from '../../../services/llm/index.js'
import { Resealer } from '../../../services/platform/reseal.js'
import { intersectAllowed, listAllows } from '../../../services/llm/resolution.js'
import { organizationScope, projectScope } from '../../../services/llm/scope.js'
import type { Store } from '../../../services/store/types.js'
import { refusal, tempStore } from '../../helper.js'
import { startProviderServer } from './provider-server.js'

const org = organizationScope('org1')
const project = projectScope('org1', 'proj1')

async function services (store: Store, masterKey = randomBytes(32), retired: Buffer[] = []): Promise<LlmServices> {
  return await buildLlmServices({ store, clock: new ManualClock(), newId, secrets: createSecretBox(masterKey, retired), config: parseLlmConfig({ LLM_ALLOWED_HOSTS: '127.0.0.1' }), cursors: new Cursors(randomBytes(32)) })
}

t.test('allowed models only narrow: a list and a pattern, and two lists as one', async (t) => {
  t.ok(listAllows(['local:*'], 'local:llama3:8b'))
  t.notOk(listAllows(['local:*'], 'localhost:x'), 'a pattern is the credential\'s whole name')
  t.notOk(listAllows(['claude:a'], 'claude:ab'))
  t.same(intersectAllowed(null, null), null, 'nothing set: every model')
  t.same(intersectAllowed(['a:x'], null), ['a:x'])
  t.same(intersectAllowed(null, ['a:x']), ['a:x'])
  t.same(intersectAllowed(['local:*', 'claude:sonnet'], ['local:llama3', 'claude:*', 'openai:gpt']), ['local:llama3', 'claude:sonnet'])
  t.same(intersectAllowed(['a:x'], ['b:*']), [], 'disjoint lists allow nothing')
})

t.test('resolution, rule by rule: scalars, allowed models, credentials, prompts, budgets, warnings', async (t) => {
  const store = await tempStore(t)
  const llm = await services(store)
  const { settings, credentials, resolution } = llm

  let view = (await resolution.resolve(project)).view
  t.match(view, {
    level: 'project',
    defaultModel: { value: null, source: 'platform' },
    temperature: { value: null, source: 'platform' },
    maxOutputTokens: { value: 4096, source: 'platform' },
    maxToolSteps: { value: 10, source: 'platform' },
    allowProjectCredentials: { value: false, source: 'platform' },
    allowedModels: { value: null, sources: [] },
    systemPrompt: { value: '', sources: [] },
    budgets: [],
    credentials: [],
    warnings: []
  }, 'nothing set: the platform\'s values')
  await t.rejects(resolution.call(project), { code: 'APP_LLM_NO_MODEL' })

  const orgLocal = await credentials.create(org, { name: 'local', provider: 'openai-compatible', baseUrl: 'http://127.0.0.1:9/v1' })
  await credentials.create(org, { name: 'claude', provider: 'anthropic', apiKey: 'sk-ant-org-key-0000000000' })
  await settings.update(org, { defaultModel: 'local:llama3', temperature: 0.2, maxToolSteps: 4, allowedModels: ['local:*', 'claude:sonnet'], systemPrompt: 'Be brief.', monthlyBudgetUsd: 100 })
  await settings.update(project, { maxOutputTokens: 1000, temperature: 0, allowedModels: ['local:llama3', 'claude:*'], systemPrompt: 'Answer in French.', monthlyBudgetUsd: 10 })
  view = (await resolution.resolve(project)).view
  t.match(view, {
    defaultModel: { value: 'local:llama3', source: 'organization' },
    temperature: { value: 0, source: 'project' },
    maxOutputTokens: { value: 1000, source: 'project' },
    maxToolSteps: { value: 4, source: 'organization' },
    allowedModels: { value: ['local:llama3', 'claude:sonnet'], sources: ['organization', 'project'] },
    systemPrompt: { value: 'Be brief.\n\nAnswer in French.', sources: ['organization', 'project'] },
    budgets: [{ level: 'organization', monthlyUsd: 100 }, { level: 'project', monthlyUsd: 10 }],
    warnings: []
  }, 'a project value wins, 0 included; lists intersect; prompts join organization first; budgets stack')
  t.same(view.credentials.map((credential) => [credential.name, credential.level]), [['claude', 'organization'], ['local', 'organization']])
  t.match((await resolution.resolve(org)).view, { temperature: { value: 0.2, source: 'organization' }, allowedModels: { value: ['local:*', 'claude:sonnet'] }, budgets: [{ level: 'organization' }] }, 'the organization alone')

  t.match(await refusal(resolution.call(project, 'local:qwen')), { code: 'APP_LLM_MODEL_NOT_ALLOWED' }, 'the project\'s list narrows the organization\'s pattern')
  t.match(await refusal(resolution.call(project, 'claude:opus')), { code: 'APP_LLM_MODEL_NOT_ALLOWED' }, 'the project\'s pattern does not widen the organization\'s list')
  const call = await resolution.call(project, 'claude:sonnet')
  t.match(call, { ref: 'claude:sonnet', model: 'sonnet', temperature: 0, maxOutputTokens: 1000, maxToolSteps: 4, target: { provider: 'anthropic', baseUrl: 'https://api.anthropic.com/v1', apiKey: 'sk-ant-org-key-0000000000' } }, 'a call gets the opened key of the credential the model names')
  t.match(await resolution.call(project), { ref: 'local:llama3', model: 'llama3', target: { apiKey: null } }, 'the default model')

  const projectLocal = await credentials.create(project, { name: 'local', provider: 'openai-compatible', baseUrl: 'http://127.0.0.1:8/v1', apiKey: 'sk-project-key-000000000' })
  view = (await resolution.resolve(project)).view
  t.match(view.warnings, [{ code: 'project-credentials-ignored', message: /local is not used/ }], 'a project credential the organization does not allow is ignored, and said so')
  t.equal((await resolution.call(project)).credential._id, orgLocal.id)
  await settings.update(org, { allowProjectCredentials: true })
  t.equal((await resolution.call(project)).credential._id, projectLocal.id, 'allowed, the project\'s credential shadows the organization\'s of its name')
  t.same((await resolution.resolve(project)).view.credentials.map((credential) => [credential.name, credential.level]), [['claude', 'organization'], ['local', 'project']])
  t.match(await refusal(settings.update(project, { allowProjectCredentials: true })), { code: 'APP_LLM_SETTINGS_INVALID' }, 'a project does not allow itself')

  await settings.update(project, { defaultModel: 'claude:opus' })
  await settings.update(org, { defaultModel: 'openai:gpt-4o' })
  view = (await resolution.resolve(project)).view
  t.match(view.defaultModel, { value: 'claude:opus', source: 'project' })
  t.same(view.warnings.map((warning) => warning.code), ['default-model-not-allowed'], 'the organization\'s list leaves claude:opus out')
  await settings.update(project, { defaultModel: null, allowedModels: null })
  await settings.update(org, { allowedModels: null })
  t.same((await resolution.resolve(project)).view.warnings.map((warning) => warning.code), ['default-model-no-credential'], 'cleared, the organization\'s default names a credential nobody has')
  await t.rejects(resolution.call(project), { code: 'APP_LLM_NO_CREDENTIAL' })

  await credentials.check(project, projectLocal.id)
  t.match((await resolution.resolve(project)).view.warnings, [{ code: 'default-model-no-credential' }, { code: 'credential-check-failed', message: /^The credential local failed its last check: Could not reach http:\/\/127\.0\.0\.1:8: ECONNREFUSED/ }])

  await credentials.deleteAllForProject('proj1')
  await settings.deleteAllForProject('proj1')
  t.match((await resolution.resolve(project)).view, { maxOutputTokens: { source: 'platform' }, credentials: [{ level: 'organization' }, { level: 'organization' }] }, 'a deleted project\'s configuration goes with it')
  await credentials.deleteAllForOrganization('org1')
  await settings.deleteAllForOrganization('org1')
  t.match((await resolution.resolve(org)).view, { defaultModel: { source: 'platform' }, credentials: [] })
})

t.test('a rotated master key: the keys sealed under the retired one are re-sealed under the new one and still open', async (t) => {
  const provider = await startProviderServer(t)
  const store = await tempStore(t)
  const oldKey = randomBytes(32)
  const before = await services(store, oldKey)
  const created = await before.credentials.create(org, { name: 'local', provider: 'openai-compatible', baseUrl: `${provider.origin}/v1`, apiKey: provider.openaiKey })
  await before.credentials.create(org, { name: 'keyless', provider: 'openai-compatible', baseUrl: `${provider.origin}/v1` })
  const sealedBefore = (await store.collection('llm_credentials').findOne({ _id: created.id }))?.sealedKey

  const newKey = randomBytes(32)
  const rotated = await services(store, newKey, [oldKey])
  t.match(await rotated.credentials.check(org, created.id), { ok: true }, 'before re-sealing, the retired key still opens it')
  const resealer = new Resealer({ store, box: createSecretBox(newKey, [oldKey]) })
  resealer.register(sealedLlmKeys)
  t.match(await resealer.run(), { llm_credentials: { documents: 1, resealed: 1, changed: 0 } }, 'one key to re-seal; a keyless credential has none')
  t.match(await resealer.run(), { llm_credentials: { documents: 1, resealed: 0 } }, 'and then none')
  const after = await store.collection('llm_credentials').findOne({ _id: created.id })
  t.not(after?.sealedKey, sealedBefore)
  t.equal(after?.keyId, createSecretBox(newKey).keyId)
  const newOnly = await services(store, newKey)
  t.match(await newOnly.credentials.check(org, created.id), { ok: true, modelCount: 3 }, 'the retired key can go: the new one alone opens it')
  t.equal(provider.requests.filter((request) => request.headers.authorization === `Bearer ${provider.openaiKey}`).length, 2, 'each check sent the real key')
})
