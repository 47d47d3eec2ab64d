import t from 'tap'
import { Type } from '@sinclair/typebox'
import { functionTools, modelPrompt, toolInput } from '../../../services/assistant/model-step.js'
import type { MessageRecord } from '../../../services/assistant/sessions.js'

const at = new Date('2026-11-29T12:00:00Z')
const message = (seq: number, role: MessageRecord['role'], content: MessageRecord['content']): MessageRecord =>
  ({ _id: `m${seq}`, sessionId: 's1', seq, runId: 'r1', role, content, createdAt: at })

t.test('the prompt: system first, parts as stored, consecutive tool messages (a step\'s results, then a pause\'s) in one', async (t) => {
  const call = { type: 'tool-call' as const, toolName: 'list_items', input: { limit: 1 } }
  const result = (id: string, value: unknown): MessageRecord['content'][number] => ({ type: 'tool-result', toolCallId: id, toolName: 'list_items', output: { type: 'json', value } })
  const history = [
    message(1, 'user', [{ type: 'text', text: 'List two things' }]),
    message(2, 'assistant', [{ type: 'text', text: 'Looking.' }, { ...call, toolCallId: 'c1' }, { ...call, toolCallId: 'c2' }]),
    message(3, 'tool', [result('c1', [1])]),
    message(4, 'tool', [result('c2', [2])]),
    message(5, 'assistant', [{ type: 'text', text: 'Done.' }])
  ]
  const prompt = modelPrompt('Be brief.', history)
  t.same(prompt.map((m) => m.role), ['system', 'user', 'assistant', 'tool', 'assistant'])
  t.same(prompt[0], { role: 'system', content: 'Be brief.' })
  t.same(prompt[3].content, [result('c1', [1]), result('c2', [2])], 'both results, in order, in one tool message')
  t.same(history[2].content, [result('c1', [1])], 'the stored history is not changed by the merge')
  t.same(modelPrompt('', history.slice(0, 1)), [{ role: 'user', content: [{ type: 'text', text: 'List two things' }] }], 'no system prompt, no system message')
})

t.test('tools are offered as function tools, their input schema without $id, an approval-bound one saying so', async (t) => {
  const base = { title: 'T', output: Type.Object({}), permission: 'tracker.read', run: async () => ({}) }
  const tools = functionTools([
    { ...base, name: 'read_it', description: 'Reads it.', input: Type.Object({ id: Type.String() }, { $id: 'ReadIt' }), risk: 'read' },
    { ...base, name: 'drop_it', description: 'Drops it.', input: Type.Object({}), risk: 'critical' }
  ] as any)
  t.same(tools[0], { type: 'function', name: 'read_it', description: 'Reads it.', inputSchema: { type: 'object', properties: { id: { type: 'string' } }, required: ['id'] } })
  t.notOk('$id' in (tools[0] as { inputSchema: object }).inputSchema)
  t.match((tools[1] as { description: string }).description, /A person must approve the call before it runs/)
})

t.test('a tool call\'s input: JSON parsed, empty as an empty object, anything else handed on as text', async (t) => {
  t.same(toolInput('{"title":"Fix it"}'), { title: 'Fix it' })
  t.same(toolInput('  '), {})
  t.equal(toolInput('{"title":'), '{"title":')
})
