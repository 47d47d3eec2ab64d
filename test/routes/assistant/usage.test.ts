import t from 'tap'
import { assistantSetup } from './fixtures.js'

t.test('OpenAI Responses API streaming on a scripted loopback provider: each model call of a completed run is one LLM usage ledger row, priced as listed', async (t) => {
  const s = await assistantSetup(t, { wire: 'openai' })
  const org = `/api/organizations/${s.orgId}`
  // The scripted provider lists model-1 at 2 USD per million input tokens and 10 per million output tokens.
  await s.must('POST', `${org}/llm-models/refresh`, s.owner.auth)
  const credentialId = (await s.must('GET', `${org}/llm-credentials`, s.owner.auth))[0].id as string
  s.provider.push(
    { toolCalls: [{ id: 'call_1', name: 'work_item_create', input: { lpId: s.lpId, item: { title: 'Priced' } } }], usage: { input: 40, output: 9 } },
    { text: 'Done.', usage: { input: 60, output: 6 } }
  )
  const sessionId = await s.newSession()
  const answer = await s.stream('POST', `${s.sessions}/${sessionId}/messages`, s.owner.auth, { body: { content: 'File it' } })
  t.equal(answer.events.at(-1)?.type, 'run.completed')
  const runId = answer.events[0].data.runId as string

  const calls = await s.must('GET', `/api/projects/${s.projectId}/llm-usage/calls`, s.owner.auth)
  const row = { projectId: s.projectId, userId: s.owner.id, sessionId, runId, provider: 'openai', model: 'model-1', credentialId, latencyMs: Number, at: String }
  t.match(calls.items, [
    { ...row, inputTokens: 60, outputTokens: 6, costUsd: 0.00018 },
    { ...row, inputTokens: 40, outputTokens: 9, costUsd: 0.00017 }
  ], 'newest first: the second call, then the first, each with its own tokens and the listed prices')
  t.equal(calls.items.length, 2, 'one row per model call, no more')
  const month = await s.must('GET', `/api/projects/${s.projectId}/llm-usage`, s.owner.auth)
  t.match(month, { totals: { calls: 2, inputTokens: 100, outputTokens: 15, costUsd: 0.00035, unpricedCalls: 0 }, byModel: [{ provider: 'openai', model: 'model-1', calls: 2 }] })
})
