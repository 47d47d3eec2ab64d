import t from 'tap'
import { API_KEY, assistantSetup } from './fixtures.js'

t.test('sessions: create, list by keyset cursor, get, rename, delete; outsiders get 404, members without assistant.use 403 naming it', async (t) => {
  const s = await assistantSetup(t, { script: [{ text: 'Hi.' }] })
  const created = await s.api('POST', s.sessions, s.owner.auth, { title: 'First' })
  t.equal(created.status, 201)
  const first = created.body.data.id as string
  t.equal(created.headers.location, `${s.sessions}/${first}`)
  t.match(created.body.data, { title: 'First', projectId: s.projectId, createdBy: s.owner.id, activeRunId: null })
  const second = await s.newSession()
  const page = await s.must('GET', `${s.sessions}?limit=1`, s.owner.auth)
  t.same(page.items.map((session: { id: string }) => session.id), [second], 'newest first')
  const next = await s.must('GET', `${s.sessions}?limit=1&cursor=${encodeURIComponent(page.nextCursor as string)}`, s.owner.auth)
  t.same(next.items.map((session: { id: string }) => session.id), [first])
  t.equal(next.nextCursor, null)
  t.match(await s.must('PATCH', `${s.sessions}/${first}`, s.owner.auth, { title: 'Renamed' }), { id: first, title: 'Renamed' })
  t.match(await s.api('PATCH', `${s.sessions}/${first}`, s.owner.auth, { title: '' }), { status: 400, body: { code: 'APP_VALIDATION_FAILED' } })

  const outsider = await s.api('GET', s.sessions, s.outsider.auth)
  t.match(outsider, { status: 404, body: { code: 'APP_PROJECT_NOT_FOUND' } })
  t.match(await s.api('GET', `${s.sessions}/${first}`, s.outsider.auth), { status: 404, body: { code: 'APP_PROJECT_NOT_FOUND' } })
  const viewer = await s.api('POST', `${s.sessions}/${first}/messages`, s.viewer.auth, { content: 'Hi' })
  t.match(viewer, { status: 403, body: { code: 'APP_FORBIDDEN', details: { permission: 'assistant.use' }, message: /assistant\.use/ } })
  t.match(await s.api('GET', `${s.sessions}/nope`, s.owner.auth), { status: 404, body: { code: 'APP_ASSISTANT_SESSION_NOT_FOUND' } })
  t.match(await s.api('GET', `${s.sessions}/${first}/runs/nope`, s.owner.auth), { status: 404, body: { code: 'APP_ASSISTANT_RUN_NOT_FOUND' } })

  // A run's answers and the session's pages never carry the credential's key.
  const answer = await s.stream('POST', `${s.sessions}/${first}/messages`, s.owner.auth, { body: { content: 'Hello' } })
  const runId = answer.events[0].data.runId as string
  const everything = await Promise.all([
    s.api('GET', `${s.sessions}/${first}/runs/${runId}`, s.owner.auth),
    s.api('GET', `${s.sessions}/${first}/runs/${runId}/events`, s.owner.auth),
    s.api('GET', `${s.sessions}/${first}/messages`, s.owner.auth),
    s.api('GET', `/api/projects/${s.projectId}/llm-resolved`, s.owner.auth)
  ])
  t.notMatch(JSON.stringify([answer, everything.map((res) => res.body)]), API_KEY)

  t.match(await s.must('DELETE', `${s.sessions}/${first}`, s.owner.auth), { id: first, deleted: true })
  t.match(await s.api('GET', `${s.sessions}/${first}`, s.owner.auth), { status: 404 })
  t.equal(await s.app.store.collection('assistant_messages').countDocuments({ sessionId: first }), 0, 'its messages went with it')
  t.equal(await s.app.store.collection('assistant_run_events').countDocuments({ runId }), 0, 'and its runs\' events')
})

t.test('a message naming a model the project does not allow is refused before anything is written', async (t) => {
  const s = await assistantSetup(t)
  const sessionId = await s.newSession()
  await s.must('PATCH', `/api/organizations/${s.orgId}/llm-settings`, s.owner.auth, { allowedModels: ['scripted:model-1'] })
  const refused = await s.api('POST', `${s.sessions}/${sessionId}/messages`, s.owner.auth, { content: 'Hi', model: 'scripted:model-2' })
  t.match(refused, { status: 409, body: { code: 'APP_LLM_MODEL_NOT_ALLOWED' } })
  t.equal((await s.must('GET', `${s.sessions}/${sessionId}/messages`, s.owner.auth)).items.length, 0)
  t.equal((await s.must('GET', `${s.sessions}/${sessionId}`, s.owner.auth)).activeRunId, null)
  t.equal(s.provider.requests.length, 0, 'no provider call')
})

t.test('a spent budget refuses a run with 402 before any provider call, through the LLM usage ledger', async (t) => {
  const s = await assistantSetup(t)
  const sessionId = await s.newSession()
  await s.must('PATCH', `/api/projects/${s.projectId}/llm-settings`, s.owner.auth, { monthlyBudgetUsd: 0 })
  const refused = await s.api('POST', `${s.sessions}/${sessionId}/messages`, s.owner.auth, { content: 'Hi' })
  t.match(refused, { status: 402, body: { code: 'APP_LLM_BUDGET_EXCEEDED' } })
  t.equal((await s.must('GET', `${s.sessions}/${sessionId}/messages`, s.owner.auth)).items.length, 0)
  t.equal((await s.must('GET', `${s.sessions}/${sessionId}`, s.owner.auth)).activeRunId, null)
  t.equal(s.provider.requests.length, 0, 'no provider call')
})
