import t from 'tap'
import { assistantSetup, types } from './fixtures.js'

/** A completed work item (only those may be archived), made through REST; its id. */
async function completedItem (s: Awaited<ReturnType<typeof assistantSetup>>): Promise<string> {
  const states = await s.must('GET', `${s.lp}/states`, s.owner.auth)
  const done = states.items.find((state: { group: string }) => state.group === 'completed')
  return (await s.must('POST', `${s.lp}/work-items`, s.owner.auth, { title: 'Old bug', stateId: done.id })).id as string
}

t.test('Anthropic messages streaming: a destructive tool call pauses the run until a person approves, then it runs and the run goes on', async (t) => {
  const s = await assistantSetup(t, { wire: 'anthropic' })
  const itemId = await completedItem(s)
  s.provider.push(
    { text: 'Archiving it. ', toolCalls: [{ id: 'toolu_1', name: 'work_item_archive', input: { lpId: s.lpId, itemId } }] },
    { text: 'Archived.' }
  )
  const sessionId = await s.newSession(s.member.auth)
  const paused = await s.stream('POST', `${s.sessions}/${sessionId}/messages`, s.member.auth, { body: { content: 'Archive the old bug' } })
  t.same(types(paused.events), ['run.started', 'step.finished', 'tool.call', 'approval.required'], 'the stream ends at the pause')
  const runId = paused.events[0].data.runId as string
  const run = await s.must('GET', `${s.sessions}/${sessionId}/runs/${runId}`, s.owner.auth)
  t.match(run, { status: 'awaiting_approval', approvals: [{ callId: 'toolu_1', toolName: 'work_item_archive', permission: 'tracker.write', decision: null }] })
  t.equal((await s.must('GET', `${s.lp}/work-items/${itemId}`, s.owner.auth)).archivedAt, null, 'nothing ran before the approval')
  t.equal(s.provider.requests.length, 1)

  // Approval comes only from a person holding the tool's permission; the viewer lacks assistant.use, a stranger call id is refused.
  t.match(await s.api('POST', `${s.sessions}/${sessionId}/runs/${runId}/approvals/toolu_1`, s.viewer.auth, { decision: 'approve' }), { status: 403 })
  t.match(await s.api('POST', `${s.sessions}/${sessionId}/runs/${runId}/approvals/toolu_9`, s.owner.auth, { decision: 'approve' }), { status: 409, body: { code: 'APP_ASSISTANT_APPROVAL_NOT_PENDING' } })
  // The member's conversation stays theirs: the approver sees the run and its approvals, not the messages or events.
  for (const path of ['', '/messages', `/runs/${runId}/events`, '/runs']) {
    t.match(await s.api('GET', `${s.sessions}/${sessionId}${path}`, s.owner.auth), { status: 404, body: { code: 'APP_ASSISTANT_SESSION_NOT_FOUND' } }, `another member: GET …${path}`)
  }
  t.notOk((await s.must('GET', s.sessions, s.owner.auth)).items.some((session: { id: string }) => session.id === sessionId), 'nor is it in their list')
  t.match(await s.api('POST', `${s.sessions}/${sessionId}/messages`, s.owner.auth, { content: 'Hijack' }), { status: 404 })
  const approved = await s.must('POST', `${s.sessions}/${sessionId}/runs/${runId}/approvals/toolu_1`, s.owner.auth, { decision: 'approve' })
  t.match(approved, { status: 'queued', approvals: [{ decision: 'approve', decidedBy: s.owner.id }] })
  const rest = await s.stream('GET', `${s.sessions}/${sessionId}/runs/${runId}/events`, s.member.auth, { lastEventId: paused.events.at(-1)?.id })
  t.same(types(rest.events), ['tool.result', 'step.finished', 'run.completed'])
  t.match(rest.events[0].data, { toolCallId: 'toolu_1', output: { type: 'json', value: { id: itemId, archivedAt: String } } })
  t.type((await s.must('GET', `${s.lp}/work-items/${itemId}`, s.owner.auth)).archivedAt, 'string')
  t.match(JSON.stringify(s.provider.requests[1].body.messages), /tool_result/, 'the result went back to the model')
  t.match(await s.api('POST', `${s.sessions}/${sessionId}/runs/${runId}/approvals/toolu_1`, s.owner.auth, { decision: 'deny' }), { status: 409 })
})

t.test('OpenAI chat completions streaming: a denial is told to the model as the tool\'s result; model text never approves', async (t) => {
  const s = await assistantSetup(t)
  const itemId = await completedItem(s)
  s.provider.push(
    { text: 'I approve this myself: approve. ', toolCalls: [{ id: 'call_a', name: 'work_item_archive', input: { lpId: s.lpId, itemId } }] },
    { text: 'Understood, I left it.' }
  )
  const sessionId = await s.newSession()
  const paused = await s.stream('POST', `${s.sessions}/${sessionId}/messages`, s.owner.auth, { body: { content: 'Archive it' } })
  const runId = paused.events[0].data.runId as string
  t.equal(paused.events.at(-1)?.type, 'approval.required', 'the model saying "approve" does not approve')
  await s.must('POST', `${s.sessions}/${sessionId}/runs/${runId}/approvals/call_a`, s.owner.auth, { decision: 'deny', reason: 'keep it for the audit' })
  t.match(await s.settled(sessionId, runId), { status: 'completed', stopReason: 'end_turn' })
  const sent = s.provider.requests[1].body.messages as Array<{ role: string, tool_call_id?: string, content: string }>
  const told = sent.find((message) => message.role === 'tool' && message.tool_call_id === 'call_a')
  t.match(told?.content, /denied this call: keep it for the audit/)
  t.equal((await s.must('GET', `${s.lp}/work-items/${itemId}`, s.owner.auth)).archivedAt, null)
})

t.test('OpenAI chat completions streaming: a permission removed between two tool calls of one run is honoured at the second', async (t) => {
  const s = await assistantSetup(t)
  s.provider.push(
    { toolCalls: [{ id: 'call_1', name: 'work_item_create', input: { lpId: s.lpId, item: { title: 'First' } } }] },
    { text: 'And another. ', holdAfterFirstChunk: true, toolCalls: [{ id: 'call_2', name: 'work_item_create', input: { lpId: s.lpId, item: { title: 'Second' } } }] },
    { text: 'The second was refused.' }
  )
  const sessionId = await s.newSession(s.member.auth)
  const started = await s.api('POST', `${s.sessions}/${sessionId}/messages`, s.member.auth, { content: 'Two items please' })
  const runId = started.body.data.run.id as string
  await s.provider.held()
  await s.must('PUT', `/api/organizations/${s.orgId}/members/${s.member.id}`, s.owner.auth, { role: 'viewer' })
  s.provider.release()
  t.match(await s.settled(sessionId, runId), { status: 'completed' })
  // The events are the member's own to read (another member is refused them): restored, they read them.
  await s.must('PUT', `/api/organizations/${s.orgId}/members/${s.member.id}`, s.owner.auth, { role: 'member' })
  const events = await s.must('GET', `${s.sessions}/${sessionId}/runs/${runId}/events`, s.member.auth)
  const results = events.items.filter((event: { type: string }) => event.type === 'tool.result').map((event: { data: any }) => event.data.output)
  t.match(results, [{ type: 'json', value: { title: 'First' } }, { type: 'error-json', value: { success: false, code: 'APP_FORBIDDEN', message: /tracker\.write/ } }])
  t.equal((await s.must('GET', `${s.lp}/work-items/count`, s.owner.auth)).total, 1, 'only the first item was made')
})

t.test('OpenAI chat completions: the step cap stops a run that keeps calling tools, with its own stop reason', async (t) => {
  const s = await assistantSetup(t)
  await s.must('PATCH', `/api/projects/${s.projectId}/llm-settings`, s.owner.auth, { maxToolSteps: 2 })
  const list = { toolCalls: [{ id: 'call_x', name: 'states_list', input: { lpId: s.lpId } }] }
  s.provider.push(list, { ...list, toolCalls: [{ ...list.toolCalls[0], id: 'call_y' }] }, { text: 'never asked' })
  const sessionId = await s.newSession()
  const answer = await s.stream('POST', `${s.sessions}/${sessionId}/messages`, s.owner.auth, { body: { content: 'Loop' } })
  t.match(answer.events.at(-1), { type: 'run.completed', data: { stopReason: 'max_steps', usage: { steps: 2 } } })
  t.equal(s.provider.requests.length, 2)
})

t.test('OpenAI chat completions: a tool answer over ASSISTANT_MAX_TOOL_OUTPUT_BYTES fails the run with max_tool_output', async (t) => {
  const s = await assistantSetup(t, { env: { ASSISTANT_MAX_TOOL_OUTPUT_BYTES: '1024' } })
  s.provider.push({ toolCalls: [{ id: 'call_s', name: 'states_list', input: { lpId: s.lpId } }] })
  const sessionId = await s.newSession()
  const answer = await s.stream('POST', `${s.sessions}/${sessionId}/messages`, s.owner.auth, { body: { content: 'States' } })
  t.match(answer.events.at(-1), { type: 'run.failed', data: { stopReason: 'max_tool_output', error: /more than the 1024/ } })
})

t.test('OpenAI Responses API streaming: one rule for every tool: a tracker write runs at once, a redeploy and a member added wait for a person', async (t) => {
  const s = await assistantSetup(t, { wire: 'openai' })
  const hosted = await s.must('POST', `/api/projects/${s.projectId}/backend/apps`, s.owner.auth, { name: 'web' })
  s.provider.push(
    {
      toolCalls: [
        { id: 'call_w', name: 'work_item_create', input: { lpId: s.lpId, item: { title: 'Deploy the fix' } } },
        { id: 'call_d', name: 'hosting_app_redeploy', input: { appId: hosted.id } },
        { id: 'call_m', name: 'member_add', input: { lpId: s.lpId, member: { userId: s.viewer.id, role: 'member' } } }
      ]
    },
    { text: 'Filed; the redeploy was refused and the member not added.' }
  )
  const sessionId = await s.newSession(s.member.auth)
  const paused = await s.stream('POST', `${s.sessions}/${sessionId}/messages`, s.member.auth, { body: { content: 'File it and redeploy' } })
  t.same(types(paused.events), ['run.started', 'step.finished', 'tool.call', 'tool.result', 'tool.call', 'tool.call', 'approval.required'])
  t.match(paused.events.find((event) => event.type === 'tool.result')?.data, { toolCallId: 'call_w', output: { type: 'json', value: { title: 'Deploy the fix' } } }, 'the tracker write ran')
  const runId = paused.events[0].data.runId as string
  t.match(paused.events.at(-1)?.data.approvals, [
    { callId: 'call_d', toolName: 'hosting_app_redeploy', permission: 'hosting.deploy' },
    { callId: 'call_m', toolName: 'member_add', permission: 'tracker.admin' }
  ])
  const approvals = `${s.sessions}/${sessionId}/runs/${runId}/approvals`
  t.match(await s.api('POST', `${approvals}/call_m`, s.member.auth, { decision: 'approve' }), { status: 403, body: { code: 'APP_FORBIDDEN' } }, 'approving needs the tool\'s own permission')
  await s.must('POST', `${approvals}/call_m`, s.owner.auth, { decision: 'deny', reason: 'not now' })
  await s.must('POST', `${approvals}/call_d`, s.member.auth, { decision: 'approve' })
  t.match(await s.settled(sessionId, runId), { status: 'completed', stopReason: 'end_turn' })
  const events = await s.must('GET', `${s.sessions}/${sessionId}/runs/${runId}/events`, s.member.auth)
  const results = Object.fromEntries(events.items.filter((event: { type: string }) => event.type === 'tool.result').map((event: { data: any }) => [event.data.toolCallId, event.data.output]))
  const restRefusal = await s.api('POST', `/api/projects/${s.projectId}/backend/apps/${hosted.id as string}/deployments/from-git`, s.member.auth, {})
  t.match(results.call_d, { type: 'error-json', value: { code: restRefusal.body.code } }, 'the approved redeploy ran through the route\'s service, refused as the route refuses')
  t.match(results.call_m, { type: 'execution-denied', reason: /not now/ })
  t.notOk((await s.must('GET', `${s.lp}/members`, s.owner.auth)).items.some((m: { userId: string }) => m.userId === s.viewer.id), 'nobody was added')
})
