import t from 'tap'
import { createAdmin, isWorkItem, PlinthError, type AssistantRunEvent } from '../../sdk/admin/index.js'
import { assistantSetup } from '../routes/assistant/fixtures.js'

t.test('the tracker through the admin SDK: a project, items filtered and paged, an edit with If-Match, comments and activity', async (t) => {
  const s = await assistantSetup(t)
  const admin = createAdmin({ baseUrl: s.origin, token: s.owner.token })
  const lp = await admin.tracker.createProject(s.projectId, { name: 'Docs', identifier: 'doc' })
  t.match(await admin.tracker.projects(s.projectId), { items: [{ identifier: 'WEB' }, { identifier: 'DOC' }] }, 'listed beside the setup\'s WEB')
  t.equal((await admin.tracker.project(s.projectId, lp.id)).name, 'Docs')
  const states = (await admin.tracker.states(s.projectId, lp.id)).items
  const started = states.find((state) => state.group === 'started')
  t.ok(started !== undefined, 'the default workflow states')
  const label = await admin.tracker.createLabel(s.projectId, lp.id, { name: 'bug', color: '#ff0000' })
  t.same((await admin.tracker.labels(s.projectId, lp.id)).items.map((one) => one.name), ['bug'])
  t.ok((await admin.tracker.people(s.projectId)).items.some((person) => person.email === 'owner@example.com'), 'the people who may work here')

  for (const title of ['Fix login', 'Fix logout', 'Write docs']) await admin.tracker.createWorkItem(s.projectId, lp.id, { title })
  const filter = JSON.stringify({ field: 'title', op: 'contains', value: 'fix' })
  const first = await admin.tracker.workItems(s.projectId, lp.id, { filter, limit: 1 })
  t.same(first.items.filter(isWorkItem).map((item) => item.title), ['Fix logout'], 'the filter grammar, newest number first')
  t.type(first.nextCursor, 'string')
  const second = await admin.tracker.workItems(s.projectId, lp.id, { filter, limit: 1, cursor: first.nextCursor ?? undefined })
  t.same(second.items.filter(isWorkItem).map((item) => item.title), ['Fix login'], 'the next page by cursor')
  t.equal(second.nextCursor, null, 'and the last')
  const bad = await admin.tracker.workItems(s.projectId, lp.id, { filter: JSON.stringify({ field: 'title', op: 'gt', value: 1 }) }).catch((error: unknown) => error)
  t.ok(bad instanceof PlinthError)
  t.match(bad, { status: 400, code: 'APP_TRACKER_INVALID_FILTER', message: /filter/ }, 'a bad filter: the API\'s refusal')

  const [item] = second.items.filter(isWorkItem)
  const moved = await admin.tracker.updateWorkItem(s.projectId, lp.id, item.id, { stateId: started?.id, priority: 'high', labelIds: [label.id], assigneeIds: [s.owner.id] }, { ifMatch: item.version })
  t.match(moved, { stateId: started?.id, stateGroup: 'started', priority: 'high', labelIds: [label.id], assigneeIds: [s.owner.id] })
  t.match(await admin.tracker.updateWorkItem(s.projectId, lp.id, item.id, { title: 'Stale' }, { ifMatch: item.version }).catch((error: unknown) => error),
    { status: 412, code: 'APP_TRACKER_VERSION_MISMATCH' }, 'a stale version is refused')
  await admin.tracker.addComment(s.projectId, lp.id, item.id, { body: 'On it' })
  t.match((await admin.tracker.comments(s.projectId, lp.id, item.id)).items, [{ body: 'On it', authorId: s.owner.id }])
  const fields = (await admin.tracker.activity(s.projectId, lp.id, item.id)).items.map((entry) => entry.field)
  t.ok(['created', 'state', 'priority', 'assignees', 'labels', 'comment'].every((field) => fields.includes(field)), `the activity: ${fields.join(', ')}`)
})

t.test('the assistant through the admin SDK: a message, its run followed as server-sent events, an approval, the rest followed', async (t) => {
  const s = await assistantSetup(t)
  const states = await s.must('GET', `${s.lp}/states`, s.owner.auth)
  const done = states.items.find((state: { group: string }) => state.group === 'completed')
  const itemId = (await s.must('POST', `${s.lp}/work-items`, s.owner.auth, { title: 'Old bug', stateId: done.id })).id as string
  s.provider.push(
    { text: 'Archiving it. ', toolCalls: [{ id: 'call_1', name: 'work_item_archive', input: { lpId: s.lpId, itemId } }] },
    { text: 'Archived the old bug.' }
  )
  const admin = createAdmin({ baseUrl: s.origin, token: s.owner.token })
  const session = await admin.assistant.createSession(s.projectId, { title: 'Tidy up' })
  t.same((await admin.assistant.sessions(s.projectId)).items.map((one) => one.id), [session.id])
  const { run } = await admin.assistant.send(s.projectId, session.id, { content: 'Archive the old bug' })
  const seen: AssistantRunEvent[] = []
  for await (const event of admin.assistant.followRun(s.projectId, session.id, run.id)) seen.push(event)
  t.same(seen.filter((event) => event.type !== 'text.delta').map((event) => event.type), ['run.started', 'step.finished', 'tool.call', 'approval.required'], 'the stream ends at the pause')
  t.same(seen.map((event) => event.id), seen.map((_, index) => index + 1), 'each event with its id')
  t.equal(seen.filter((event) => event.type === 'text.delta').map((event) => (event.data as { text: string }).text).join(''), 'Archiving it. ', 'the text as it came')

  const paused = await admin.assistant.run(s.projectId, session.id, run.id)
  t.match(paused, { status: 'awaiting_approval', approvals: [{ callId: 'call_1', toolName: 'work_item_archive', decision: null }] })
  t.match(await admin.assistant.decide(s.projectId, session.id, run.id, 'call_9', { decision: 'approve' }).catch((error: unknown) => error),
    { status: 409, code: 'APP_ASSISTANT_APPROVAL_NOT_PENDING' }, 'a call the run does not wait on is refused')
  t.match(await admin.assistant.decide(s.projectId, session.id, run.id, 'call_1', { decision: 'approve' }), { status: 'queued' })
  const rest: AssistantRunEvent[] = []
  for await (const event of admin.assistant.followRun(s.projectId, session.id, run.id, { after: seen.at(-1)?.id })) rest.push(event)
  t.same(rest.filter((event) => event.type !== 'text.delta').map((event) => event.type), ['tool.result', 'step.finished', 'run.completed'], 'followed on from the last id')
  t.type((await s.must('GET', `${s.lp}/work-items/${itemId}`, s.owner.auth)).archivedAt, 'string', 'the approved call ran')
  t.same((await admin.assistant.messages(s.projectId, session.id)).items.map((message) => message.role), ['user', 'assistant', 'tool', 'assistant'])

  const other = createAdmin({ baseUrl: s.origin, token: s.member.token })
  const refused = other.assistant.followRun(s.projectId, session.id, run.id)
  t.match(await refused.next().catch((error: unknown) => error), { status: 404, code: 'APP_ASSISTANT_SESSION_NOT_FOUND' }, 'another member\'s follow is refused, as a PlinthError')
})
