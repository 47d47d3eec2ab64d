import t from 'tap'
import { assistantSetup, types } from './fixtures.js'

t.test('OpenAI Responses API streaming: a run queries records, then its record write waits for a person\'s approval before it is made', async (t) => {
  const s = await assistantSetup(t, { wire: 'openai' })
  const admins = { enabled: true, rule: null }
  await s.must('POST', `/api/projects/${s.projectId}/collections`, s.owner.auth, { name: 'notes', fields: [{ name: 'title', type: 'text' }], methods: { list: admins, get: admins, create: admins, update: admins } })
  const data = `/api/p/${s.projectId}/notes`
  const note = await s.must('POST', data, s.owner.auth, { title: 'Draft' })
  s.provider.push(
    { toolCalls: [{ id: 'call_q', name: 'records_query', input: { table: 'notes', query: { filter: { title: 'Draft' } } } }] },
    { text: 'Renaming it.', toolCalls: [{ id: 'call_u', name: 'record_update', input: { table: 'notes', id: note.id, values: { title: 'Final' } } }] },
    { text: 'Renamed.' }
  )
  const sessionId = await s.newSession(s.member.auth)
  const paused = await s.stream('POST', `${s.sessions}/${sessionId}/messages`, s.member.auth, { body: { content: 'Rename the draft note' } })
  t.same(types(paused.events), ['run.started', 'step.finished', 'tool.call', 'tool.result', 'step.finished', 'tool.call', 'approval.required'])
  t.match(paused.events.find((event) => event.type === 'tool.result')?.data, { toolName: 'records_query', output: { type: 'json', value: { items: [{ id: note.id, title: 'Draft' }] } } }, 'the query ran at once, as the member')
  const runId = paused.events[0].data.runId as string
  t.match(await s.must('GET', `${s.sessions}/${sessionId}/runs/${runId}`, s.owner.auth), { status: 'awaiting_approval', approvals: [{ callId: 'call_u', toolName: 'record_update', permission: 'records.write', decision: null }] })
  t.equal((await s.must('GET', `${data}/${note.id as string}`, s.owner.auth)).title, 'Draft', 'nothing written before the approval')

  await s.must('POST', `${s.sessions}/${sessionId}/runs/${runId}/approvals/call_u`, s.owner.auth, { decision: 'approve' })
  t.match(await s.settled(sessionId, runId), { status: 'completed', stopReason: 'end_turn' })
  t.match(await s.must('GET', `${data}/${note.id as string}`, s.owner.auth), { title: 'Final', version: 2 }, 'written once approved, as the data API reads it')
  const output = (s.provider.requests[2].body.input as Array<{ type?: string, call_id?: string, output?: string }>).find((item) => item.type === 'function_call_output' && item.call_id === 'call_u')
  t.match(output?.output, /"title":"Final"/, 'the approved write\'s answer went back to the model')
})
