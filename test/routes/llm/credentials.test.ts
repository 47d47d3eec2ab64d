import t from 'tap'
import { createServer } from 'node:net'
import { buildTestApp, call, orgWithRoles } from '../../helper.js'
import { startProviderServer } from '../../services/llm/provider-server.js'

t.test('LLM credentials against a loopback server speaking the OpenAI and Anthropic model-list wire formats', async (t) => {
  const provider = await startProviderServer(t)
  // The provider listens on loopback, which only an operator's LLM_ALLOWED_HOSTS opens: here 127.0.0.1 alone.
  const app = await buildTestApp(t, { env: { LLM_ALLOWED_HOSTS: '127.0.0.1' } })
  const { owner, member, viewer, outsider, orgId } = await orgWithRoles(app)
  const base = `/api/organizations/${orgId}/llm-credentials`
  const answers: string[] = []
  const remember = <T extends { body: unknown }>(res: T): T => { answers.push(JSON.stringify(res.body)); return res }

  const local = { name: 'local', provider: 'openai-compatible', baseUrl: `${provider.origin}/v1/`, apiKey: provider.openaiKey }
  const refusals: Array<[string, Record<string, string>, unknown, number, string]> = [
    ['a viewer', viewer.auth, local, 403, 'APP_FORBIDDEN'],
    ['a member', member.auth, local, 403, 'APP_FORBIDDEN'],
    ['an outsider', outsider.auth, local, 404, 'APP_ORGANIZATION_NOT_FOUND'],
    ['nobody', {}, local, 401, 'APP_UNAUTHORIZED'],
    ['OpenAI without a key', owner.auth, { name: 'o', provider: 'openai' }, 400, 'APP_LLM_CREDENTIAL_INVALID'],
    ['compatible without a base URL', owner.auth, { name: 'o', provider: 'openai-compatible' }, 400, 'APP_LLM_CREDENTIAL_INVALID'],
    ['not http', owner.auth, { ...local, baseUrl: 'file:///etc/passwd' }, 400, 'APP_LLM_CREDENTIAL_INVALID'],
    ['not a URL', owner.auth, { ...local, baseUrl: 'ollama' }, 400, 'APP_LLM_CREDENTIAL_INVALID'],
    ['credentials in the URL', owner.auth, { ...local, baseUrl: `http://u:p@${provider.origin.slice(7)}/v1` }, 400, 'APP_LLM_CREDENTIAL_INVALID'],
    ['cloud metadata', owner.auth, { ...local, baseUrl: 'http://169.254.169.254/v1' }, 400, 'APP_LLM_BASE_URL_FORBIDDEN'],
    ['a private range', owner.auth, { ...local, baseUrl: 'http://10.0.0.5:11434/v1' }, 400, 'APP_LLM_BASE_URL_FORBIDDEN'],
    ['loopback not allowed', owner.auth, { ...local, baseUrl: 'http://[::1]:11434/v1' }, 400, 'APP_LLM_BASE_URL_FORBIDDEN'],
    ['IPv4-mapped loopback not allowed', owner.auth, { ...local, baseUrl: 'http://[::ffff:127.0.0.2]:11434/v1' }, 400, 'APP_LLM_BASE_URL_FORBIDDEN'],
    ['an unknown provider', owner.auth, { ...local, provider: 'cohere' }, 400, 'APP_VALIDATION_FAILED'],
    ['a name in capitals', owner.auth, { ...local, name: 'Local' }, 400, 'APP_VALIDATION_FAILED'],
    ['an unknown field', owner.auth, { ...local, secret: 'x' }, 400, 'APP_VALIDATION_FAILED']
  ]
  for (const [name, headers, payload, status, code] of refusals) {
    const res = remember(await call(app, 'POST', base, headers, payload))
    t.same([res.status, res.body.code], [status, code], name)
  }
  t.match((await call(app, 'POST', base, owner.auth, { ...local, baseUrl: 'http://10.0.0.5:11434/v1' })).body, {
    message: /LLM_ALLOWED_HOSTS/, details: { fields: [{ path: 'body.baseUrl' }] }
  }, 'the refusal names the field and the setting that would allow it')

  const created = remember(await call(app, 'POST', base, owner.auth, local))
  t.equal(created.status, 201)
  t.match(created.body.data, { level: 'organization', name: 'local', label: 'local', provider: 'openai-compatible', baseUrl: `${provider.origin}/v1`, keyHint: 'sk-…cdef', lastCheck: null })
  const localId = created.body.data.id as string
  t.equal(created.headers.location, `${base}/${localId}`)
  t.equal((await call(app, 'POST', base, owner.auth, local)).body.code, 'APP_LLM_CREDENTIAL_EXISTS', 'names are unique per level')

  const stored = await app.store.collection('llm_credentials').findOne({ _id: localId })
  t.notOk(JSON.stringify(stored).includes(provider.openaiKey), 'the key is not stored in the clear')
  t.match(stored, { sealedKey: /^v1\./, keyId: app.secrets.keyId })
  t.equal(app.secrets.open(stored?.sealedKey as string, `llm-credential:${localId}`), provider.openaiKey, 'it is sealed, bound to the credential')

  const checked = remember(await call(app, 'POST', `${base}/${localId}/check`, owner.auth))
  t.match(checked.body.data, { ok: true, message: '3 models listed', modelCount: 3 })
  const call0 = provider.requests.at(-1)
  t.match(call0, { method: 'GET', url: '/v1/models', headers: { authorization: `Bearer ${provider.openaiKey}` } }, 'OpenAI\'s list call, with its key')
  t.equal((await call(app, 'POST', `${base}/${localId}/check`, viewer.auth)).status, 403, 'a reader does not spend the key')

  const models = remember(await call(app, 'GET', `/api/organizations/${orgId}/llm-models`, viewer.auth))
  t.match(models.body.data, [
    { id: 'local:llama3.1:8b', credentialId: localId, model: 'llama3.1:8b', contextWindow: 131072, inputPricePerMillion: null, allowed: true },
    { id: 'local:qwen/qwen-2.5-coder', contextWindow: 32768, inputPricePerMillion: 0.2, outputPricePerMillion: 0.6 },
    { id: 'local:tiny', contextWindow: null, displayName: null }
  ], 'the cached list, with context windows and prices where the server said')

  const anthropic = remember(await call(app, 'POST', base, owner.auth, { name: 'claude', label: 'Claude', provider: 'anthropic', apiKey: provider.anthropicKey, baseUrl: `${provider.origin}/anthropic/v1` }))
  const claudeId = anthropic.body.data.id as string
  t.equal(anthropic.body.data.keyHint, 'sk-…wxyz')
  t.match((await call(app, 'POST', `${base}/${claudeId}/check`, owner.auth)).body.data, { ok: true, modelCount: 2 })
  t.match(provider.requests.at(-1), { url: '/anthropic/v1/models?limit=1000', headers: { 'x-api-key': provider.anthropicKey, 'anthropic-version': '2023-06-01' } }, 'Anthropic\'s list call')
  t.match((await call(app, 'GET', `/api/organizations/${orgId}/llm-models?credentialId=${claudeId}`, viewer.auth)).body.data, [
    { id: 'claude:claude-sonnet-4-5', displayName: 'Claude Sonnet 4.5', provider: 'anthropic' }, { id: 'claude:claude-haiku-4-5' }
  ])

  const patched = remember(await call(app, 'PATCH', `${base}/${claudeId}`, owner.auth, { apiKey: 'sk-ant-wrong-key-00000000' }))
  t.match(patched.body.data, { keyHint: 'sk-…0000', lastCheck: null }, 'a new key forgets the old check')
  t.same((await call(app, 'GET', `/api/organizations/${orgId}/llm-models?credentialId=${claudeId}`, viewer.auth)).body.data, [], 'and the old key\'s models')
  t.same((await call(app, 'POST', `${base}/${claudeId}/check`, owner.auth)).body.data.message, 'Anthropic refused the key (401)')
  t.equal((await call(app, 'PATCH', `${base}/${claudeId}`, owner.auth, { apiKey: null })).body.code, 'APP_LLM_CREDENTIAL_INVALID', 'Anthropic needs a key')
  t.equal((await call(app, 'PATCH', `${base}/${claudeId}`, owner.auth, { label: 'Claude (old key)' })).body.data.lastCheck.ok, false, 'a label keeps the check')

  const failures: Array<[string, Record<string, unknown>, string]> = [
    ['the wrong key', { ...local, name: 'wrong', apiKey: 'sk-wrong-key-000000000' }, `${provider.origin} refused the key (401)`],
    ['a server error', { ...local, name: 'broken', baseUrl: `${provider.origin}/broken/v1` }, `${provider.origin} answered 500: the model server is loading`],
    ['no model list there', { ...local, name: 'nolist', baseUrl: `${provider.origin}/elsewhere` }, `${provider.origin} answered 404: no route /elsewhere/models`],
    ['a server echoing the key', { ...local, name: 'echo', baseUrl: `${provider.origin}/teapot/v1` }, `${provider.origin} answered 418: I will not serve Bearer [key]`],
    ['a redirect inward, not followed', { ...local, name: 'moved', baseUrl: `${provider.origin}/moved/v1` }, `${provider.origin} answered 302`]
  ]
  const closed = createServer()
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
  const { port } = closed.address() as { port: number }
  await new Promise((resolve) => closed.close(resolve))
  failures.push(['nobody listening', { ...local, name: 'gone', baseUrl: `http://127.0.0.1:${port}/v1` }, `Could not reach http://127.0.0.1:${port}: ECONNREFUSED`])
  for (const [name, payload, message] of failures) {
    const id = (await call(app, 'POST', base, owner.auth, payload)).body.data.id as string
    t.same((await call(app, 'POST', `${base}/${id}/check`, owner.auth)).body.data.message, message, name)
    await call(app, 'DELETE', `${base}/${id}`, owner.auth)
  }

  const listed = remember(await call(app, 'GET', base, viewer.auth))
  t.same(listed.body.data.map((credential: { name: string }) => credential.name), ['claude', 'local'])
  remember(await call(app, 'GET', `${base}/${localId}`, viewer.auth))
  t.equal((await call(app, 'GET', `${base}/nosuch`, viewer.auth)).body.code, 'APP_LLM_CREDENTIAL_NOT_FOUND')
  const otherOrg = (await call(app, 'POST', '/api/organizations', outsider.auth, { name: 'Other' })).body.data.id as string
  t.equal((await call(app, 'GET', `/api/organizations/${otherOrg}/llm-credentials/${localId}`, outsider.auth)).body.code, 'APP_LLM_CREDENTIAL_NOT_FOUND', 'another organization\'s id is not found')
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Site' })).body.data.id as string
  t.equal((await call(app, 'GET', `/api/projects/${projectId}/llm-credentials/${localId}`, owner.auth)).body.code, 'APP_LLM_CREDENTIAL_NOT_FOUND', 'an organization\'s credential is not the project\'s')

  const leaking = answers.filter((answer) => answer.includes(provider.openaiKey) || answer.includes(provider.anthropicKey) || answer.includes('sk-ant-wrong-key'))
  t.same(leaking, [], `none of the ${answers.length} answers kept holds a key`)
  t.same((await call(app, 'DELETE', `${base}/${claudeId}`, owner.auth)).body.data, { id: claudeId, deleted: true })
  t.equal(await app.store.collection('llm_credentials').countDocuments({ _id: claudeId }), 0)
})
