import t from 'tap'
import { API_KEY, assistantSetup, types, WIRES } from './fixtures.js'

for (const [wire, protocol] of WIRES) {
  t.test(`${protocol} on a scripted loopback provider: a multi-step run creates a tracker item through the tool registry, streamed as SSE`, async (t) => {
    const s = await assistantSetup(t, { wire })
    s.provider.push(
      { toolCalls: [{ id: 'call_1', name: 'work_item_create', input: { lpId: s.lpId, item: { title: 'From the assistant' } } }], usage: { input: 40, output: 9 } },
      { text: 'Created WEB-1 for you.', usage: { input: 60, output: 6 } }
    )
    const sessionId = await s.newSession()
    const answer = await s.stream('POST', `${s.sessions}/${sessionId}/messages`, s.owner.auth, { body: { content: 'File a bug about the login' } })
    t.equal(answer.status, 200)
    t.same(types(answer.events), ['run.started', 'step.finished', 'tool.call', 'tool.result', 'step.finished', 'run.completed'])
    t.same(answer.events.map((event) => event.id), answer.events.map((_, index) => index + 1), 'ids count from 1 without a gap')
    t.equal(answer.events.filter((event) => event.type === 'text.delta').map((event) => event.data.text).join(''), 'Created WEB-1 for you.')
    const result = answer.events.find((event) => event.type === 'tool.result')
    t.match(result?.data, { toolName: 'work_item_create', output: { type: 'json', value: { key: 'WEB-1', title: 'From the assistant' } } })
    t.match(answer.events.at(-1)?.data, { stopReason: 'end_turn', usage: { inputTokens: 100, outputTokens: 15, steps: 2 } })
    t.equal((await s.must('GET', `${s.lp}/work-items/count`, s.owner.auth)).total, 1, 'the item exists')
    const audit = await s.must('GET', `/api/organizations/${s.orgId}/audit-log?action=tool:work_item_create`, s.owner.auth)
    t.match(audit.items, [{ method: 'TOOL', route: '/api/projects/:projectId/assistant/sessions/:sessionId/messages', actor: { userId: s.owner.id, credential: 'session' }, address: '127.0.0.1', target: { id: result?.data.output.value.id }, summary: { fields: ['item', 'lpId'] } }], 'the tool\'s change is audited as the poster\'s, made through the assistant')

    const runId = answer.events[0].data.runId as string
    t.match(await s.must('GET', `${s.sessions}/${sessionId}/runs/${runId}`, s.owner.auth), { status: 'completed', stopReason: 'end_turn', error: null, model: 'scripted:model-1', usage: { steps: 2 } })
    const messages = await s.must('GET', `${s.sessions}/${sessionId}/messages`, s.owner.auth)
    t.same(messages.items.map((message: { role: string, seq: number }) => [message.seq, message.role]), [[1, 'user'], [2, 'assistant'], [3, 'tool'], [4, 'assistant']])
    t.equal((await s.must('GET', `${s.sessions}/${sessionId}`, s.owner.auth)).activeRunId, null, 'the session is free again')
    t.equal(s.provider.requests.length, 2)
    t.match(JSON.stringify(s.provider.requests[1].body.messages ?? s.provider.requests[1].body.input), /WEB-1/, 'the tool\'s answer went back to the model')
    t.ok(s.provider.requests[0].body.tools.length > 10, 'the tracker tools were offered')
    t.equal(s.provider.requests[0].path, { 'openai-compatible': '/v1/chat/completions', openai: '/v1/responses', anthropic: '/v1/messages' }[wire], 'the provider\'s own endpoint')
    if (wire === 'openai') {
      t.match(s.provider.requests[1].body.input, [{ role: 'user' }, { type: 'function_call', call_id: 'call_1', name: 'work_item_create' }, { type: 'function_call_output', call_id: 'call_1', output: /WEB-1/ }], 'the call and its output went back as Responses input items')
    }
  })
}

t.test('OpenAI chat completions streaming: without Accept: text/event-stream the run is 202 on the job queue, its events readable after', async (t) => {
  const s = await assistantSetup(t, { script: [{ text: 'Hello there.' }] })
  const sessionId = await s.newSession()
  const started = await s.api('POST', `${s.sessions}/${sessionId}/messages`, s.owner.auth, { content: 'Hi' })
  t.equal(started.status, 202)
  const runId = started.body.data.run.id as string
  t.equal(started.headers.location, `${s.sessions}/${sessionId}/runs/${runId}`)
  t.match(started.body.data, { message: { role: 'user', seq: 1, content: [{ type: 'text', text: 'Hi' }] }, run: { status: 'queued' } })
  t.match(await s.settled(sessionId, runId), { status: 'completed', stopReason: 'end_turn' })
  const events = await s.must('GET', `${s.sessions}/${sessionId}/runs/${runId}/events`, s.owner.auth)
  t.same(types(events.items), ['run.started', 'step.finished', 'run.completed'])
  const runs = await s.must('GET', `${s.sessions}/${sessionId}/runs`, s.owner.auth)
  t.same(runs.items.map((run: { id: string }) => run.id), [runId])
})

t.test('OpenAI chat completions streaming: a dropped SSE connection is taken up with Last-Event-ID, nothing lost or repeated', async (t) => {
  const s = await assistantSetup(t, { script: [{ text: 'one two three four five six', holdAfterFirstChunk: true }] })
  const sessionId = await s.newSession()
  const first = await s.stream('POST', `${s.sessions}/${sessionId}/messages`, s.owner.auth, { body: { content: 'Count' }, stopAfter: 2 })
  t.same(first.events.map((event) => event.type), ['run.started', 'text.delta'])
  const runId = first.events[0].data.runId as string
  s.provider.release()
  await s.settled(sessionId, runId)
  const rest = await s.stream('GET', `${s.sessions}/${sessionId}/runs/${runId}/events`, s.owner.auth, { lastEventId: 2 })
  t.same(rest.events.map((event) => event.id), rest.events.map((_, index) => index + 3), 'from id 3 on')
  t.equal(rest.events.at(-1)?.type, 'run.completed')
  t.equal([...first.events, ...rest.events].filter((event) => event.type === 'text.delta').map((event) => event.data.text).join(''), 'one two three four five six')
  const bad = await s.api('GET', `${s.sessions}/${sessionId}/runs/${runId}/events`, { ...s.owner.auth, 'last-event-id': 'abc' })
  t.match(bad, { status: 400, body: { code: 'APP_ASSISTANT_EVENT_ID_INVALID' } })
})

t.test('Anthropic messages streaming: cancelling mid-stream ends the run as cancelled and frees the session', async (t) => {
  const s = await assistantSetup(t, { wire: 'anthropic', script: [{ text: 'a long answer that never ends', holdAfterFirstChunk: true }, { text: 'Again.' }] })
  const sessionId = await s.newSession()
  let runId = ''
  const answer = await s.stream('POST', `${s.sessions}/${sessionId}/messages`, s.owner.auth, {
    body: { content: 'Talk' },
    onEvent: async (event) => {
      if (event.type === 'run.started') runId = event.data.runId
      if (event.type !== 'text.delta') return
      const cancelled = await s.api('POST', `${s.sessions}/${sessionId}/runs/${runId}/cancel`, s.owner.auth)
      t.match(cancelled, { status: 200, body: { data: { status: 'cancelled', stopReason: 'cancelled' } } })
    }
  })
  t.same(types(answer.events), ['run.started', 'run.cancelled'])
  s.provider.release()
  t.match(await s.must('GET', `${s.sessions}/${sessionId}/runs/${runId}`, s.owner.auth), { status: 'cancelled', finishedAt: String })
  t.match(await s.api('POST', `${s.sessions}/${sessionId}/runs/${runId}/cancel`, s.owner.auth), { status: 409, body: { code: 'APP_ASSISTANT_RUN_FINISHED' } })
  const again = await s.stream('POST', `${s.sessions}/${sessionId}/messages`, s.owner.auth, { body: { content: 'Again' } })
  t.equal(again.events.at(-1)?.type, 'run.completed', 'a new run may start')
})

t.test('OpenAI chat completions streaming: one active run per session, decided in the store (409 for the second of two at once)', async (t) => {
  const s = await assistantSetup(t, { script: [{ text: 'held answer', holdAfterFirstChunk: true }] })
  const sessionId = await s.newSession()
  const both = await Promise.all([1, 2].map(async () => await s.api('POST', `${s.sessions}/${sessionId}/messages`, s.owner.auth, { content: 'Now' })))
  t.same(both.map((res) => res.status).sort(), [202, 409])
  const refused = both.find((res) => res.status === 409)
  t.match(refused?.body, { success: false, code: 'APP_ASSISTANT_RUN_ACTIVE' })
  const runId = both.find((res) => res.status === 202)?.body.data.run.id as string
  await s.provider.held()
  t.match(await s.api('POST', `${s.sessions}/${sessionId}/messages`, s.owner.auth, { content: 'And now?' }), { status: 409, body: { code: 'APP_ASSISTANT_RUN_ACTIVE' } })
  const messages = await s.must('GET', `${s.sessions}/${sessionId}/messages`, s.owner.auth)
  t.equal(messages.items.length, 1, 'a refused message is not kept')
  await s.must('POST', `${s.sessions}/${sessionId}/runs/${runId}/cancel`, s.owner.auth)
  s.provider.release()
})

for (const [status, label] of [[500, 'answering 500'], [429, 'answering 429']] as const) {
  t.test(`OpenAI chat completions: a provider ${label} fails the run with the reason, the key never in it`, async (t) => {
    const s = await assistantSetup(t, { script: [{ status, message: `upstream trouble for ${API_KEY}` }] })
    const sessionId = await s.newSession()
    const answer = await s.stream('POST', `${s.sessions}/${sessionId}/messages`, s.owner.auth, { body: { content: 'Hi' } })
    t.equal(answer.events.at(-1)?.type, 'run.failed')
    const run = await s.must('GET', `${s.sessions}/${sessionId}/runs/${answer.events[0].data.runId as string}`, s.owner.auth)
    t.match(run, { status: 'failed', stopReason: 'provider_error', error: new RegExp(`answered ${status}`) })
    t.notMatch(JSON.stringify([run, answer.events]), API_KEY, 'the key is not in the answer')
    t.match(run.error, /\[key\]/)
    t.equal((await s.must('GET', `${s.sessions}/${sessionId}`, s.owner.auth)).activeRunId, null)
  })
}

t.test('Anthropic messages: a provider that hangs fails the run at the wall-time cap (ASSISTANT_MAX_RUN_SECONDS), never stuck', async (t) => {
  const s = await assistantSetup(t, { wire: 'anthropic', script: [{ hang: true }], env: { ASSISTANT_MAX_RUN_SECONDS: '1' } })
  const sessionId = await s.newSession()
  const answer = await s.stream('POST', `${s.sessions}/${sessionId}/messages`, s.owner.auth, { body: { content: 'Hi' } })
  t.same(types(answer.events), ['run.started', 'run.failed'])
  t.match(answer.events[1].data, { stopReason: 'max_wall_time', error: /longer than 1 s/ })
})

t.test('a run whose worker died is ended as interrupted on the job\'s next attempt, not left running', async (t) => {
  const s = await assistantSetup(t, { script: [{ text: 'never heard' }] })
  const sessionId = await s.newSession()
  const started = await s.api('POST', `${s.sessions}/${sessionId}/messages`, s.owner.auth, { content: 'Hi' })
  const runId = started.body.data.run.id as string
  await s.settled(sessionId, runId)
  // As if a worker had died while the run worked: the run reads running and the lapsed lease's next attempt comes.
  await s.app.store.collection('assistant_runs').updateOne({ _id: runId }, { $set: { status: 'running', stopReason: null, finishedAt: null } })
  await s.app.store.collection('assistant_sessions').updateOne({ _id: sessionId }, { $set: { activeRunId: runId } })
  await s.app.assistant.executor.execute(runId, 2)
  t.match(await s.must('GET', `${s.sessions}/${sessionId}/runs/${runId}`, s.owner.auth), { status: 'failed', stopReason: 'interrupted', error: /cut off/ })
  t.equal((await s.must('GET', `${s.sessions}/${sessionId}`, s.owner.auth)).activeRunId, null)
})
