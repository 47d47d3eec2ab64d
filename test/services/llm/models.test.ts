import t from 'tap'
import { generateText, jsonSchema, stepCountIs, streamText, tool } from 'ai'
import { AddressGuard } from '../../../services/outbound/internal-addresses.js'
import { LlmModels } from '../../../services/llm/models.js'
import type { ModelCall } from '../../../services/llm/resolution.js'
import type { LlmProviderName } from '../../../schemas/llm.js'
import { startScriptedProvider } from '../../fixtures/scripted-provider.js'

const limits = { headersTimeoutMs: 2000, idleTimeoutMs: 2000, maxResponseBytes: 1_000_000 }

function call (provider: LlmProviderName, baseUrl: string, apiKey: string | null): ModelCall {
  return {
    ref: `p:${'scripted-model'}`,
    model: 'scripted-model',
    credential: { name: 'p' } as ModelCall['credential'],
    target: { provider, baseUrl, apiKey },
    temperature: null,
    maxOutputTokens: 100,
    maxToolSteps: 5,
    systemPrompt: '',
    budgets: []
  }
}

const echo = tool({
  description: 'Answers its input',
  inputSchema: jsonSchema<{ word: string }>({ type: 'object', properties: { word: { type: 'string' } }, required: ['word'], additionalProperties: false }),
  execute: async ({ word }) => ({ echoed: word })
})

/** The error a stream ends in, as its `error` part carries it. */
async function streamError (model: ReturnType<LlmModels['open']>): Promise<string> {
  const result = streamText({ model, prompt: 'hi', maxRetries: 0, onError: () => {} })
  for await (const part of result.fullStream) if (part.type === 'error') return String((part.error as Error).message)
  return 'no error'
}

const WIRES = { 'openai-compatible': 'OpenAI chat completions streaming', openai: 'OpenAI Responses API streaming', anthropic: 'Anthropic messages streaming' } as const
const PATHS = { 'openai-compatible': '/v1/chat/completions', openai: '/v1/responses', anthropic: '/v1/messages' } as const

for (const provider of ['openai-compatible', 'openai', 'anthropic'] as const) {
  const wire = WIRES[provider]
  t.test(`${wire} on a scripted loopback provider: a tool call, its result sent back, then text, through the guard`, async (t) => {
    const server = await startScriptedProvider([
      { toolCalls: [{ id: 'call_1', name: 'echo', input: { word: 'plinth' } }], usage: { input: 12, output: 7 } },
      { text: 'The tool said plinth.', usage: { input: 30, output: 6 } }
    ])
    t.teardown(server.close)
    const models = new LlmModels(new AddressGuard({ allowedHosts: ['127.0.0.1'] }), limits)
    const result = streamText({ model: models.open(call(provider, `${server.url}/v1`, 'sk-scripted-secret')), prompt: 'Echo plinth', tools: { echo }, stopWhen: stepCountIs(3) })
    let text = ''
    for await (const part of result.textStream) text += part
    t.equal(text, 'The tool said plinth.')
    const steps = await result.steps
    t.equal(steps.length, 2)
    t.same(steps[0].toolCalls.map((c) => [c.toolName, c.input]), [['echo', { word: 'plinth' }]])
    t.same(steps[0].toolResults.map((r) => r.output), [{ echoed: 'plinth' }])
    const usage = await result.totalUsage
    t.equal(usage.inputTokens, 42)
    t.equal(usage.outputTokens, 13)
    t.equal(server.requests.length, 2)
    const [first, second] = server.requests
    t.equal(first.path, PATHS[provider])
    t.equal(first.body.stream, true)
    if (provider === 'anthropic') {
      t.equal(first.headers['x-api-key'], 'sk-scripted-secret')
      t.match(JSON.stringify(second.body.messages), /"tool_result"/, 'the tool result went back as a tool_result block')
    } else if (provider === 'openai') {
      t.equal(first.headers.authorization, 'Bearer sk-scripted-secret')
      t.match(first.body.tools, [{ type: 'function', name: 'echo' }], 'tools as Responses function tools')
      t.match(second.body.input, [{ role: 'user' }, { type: 'function_call', call_id: 'call_1', name: 'echo' }, { type: 'function_call_output', call_id: 'call_1', output: /plinth/ }])
    } else {
      t.equal(first.headers.authorization, 'Bearer sk-scripted-secret')
      t.match(second.body.messages, [{ role: 'user' }, { role: 'assistant', tool_calls: [{ id: 'call_1' }] }, { role: 'tool', tool_call_id: 'call_1' }])
    }
  })
}

t.test('OpenAI Responses API without streaming on a scripted loopback provider: text, a tool call and usage from one response object', async (t) => {
  const server = await startScriptedProvider([
    { text: 'Let me echo.', toolCalls: [{ id: 'call_9', name: 'echo', input: { word: 'whole' } }], usage: { input: 21, output: 8 } },
    { text: 'Echoed whole.', usage: { input: 40, output: 4 } }
  ])
  t.teardown(server.close)
  const models = new LlmModels(new AddressGuard({ allowedHosts: ['127.0.0.1'] }), limits)
  const result = await generateText({ model: models.open(call('openai', `${server.url}/v1`, 'sk-scripted-secret')), prompt: 'Echo whole', tools: { echo }, stopWhen: stepCountIs(3), maxRetries: 0 })
  t.equal(result.text, 'Echoed whole.')
  t.same(result.steps.map((step) => [step.text, step.finishReason, step.usage.inputTokens, step.usage.outputTokens]), [['Let me echo.', 'tool-calls', 21, 8], ['Echoed whole.', 'stop', 40, 4]])
  t.same(result.steps[0].toolResults.map((r) => [r.toolCallId, r.output]), [['call_9', { echoed: 'whole' }]])
  t.same(server.requests.map((request) => [request.path, request.body.stream ?? false]), [['/v1/responses', false], ['/v1/responses', false]])
})

t.test('a provider on an internal address the operator did not allow is never called', async (t) => {
  const server = await startScriptedProvider([{ text: 'never' }])
  t.teardown(server.close)
  const models = new LlmModels(new AddressGuard({ allowedHosts: [] }), limits)
  t.match(await streamError(models.open(call('openai-compatible', server.url, null))), /reaches 127\.0\.0\.1, a loopback address/)
  t.equal(server.requests.length, 0)
})

t.test('a provider error status and a provider that never answers both end the call with a reason', async (t) => {
  const server = await startScriptedProvider([{ status: 429, message: 'slow down' }, { hang: true }])
  t.teardown(server.close)
  const models = new LlmModels(new AddressGuard({ allowedHosts: ['127.0.0.1'] }), { ...limits, headersTimeoutMs: 300 })
  t.match(await streamError(models.open(call('openai-compatible', server.url, null))), /slow down/)
  t.match(await streamError(models.open(call('openai-compatible', server.url, null))), /no answer within 300 ms/)
})

t.test('a model is made once for its provider, base URL, key, credential and model id, and reused; a change to any of them is another model that calls with it (OpenAI chat completions streaming on a scripted loopback provider)', async (t) => {
  const server = await startScriptedProvider([{ text: 'one' }, { text: 'two' }])
  t.teardown(server.close)
  const models = new LlmModels(new AddressGuard({ allowedHosts: ['127.0.0.1'] }), limits)
  const base = call('openai-compatible', `${server.url}/v1`, 'sk-first')
  const first = models.open(base)
  t.equal(models.open({ ...base, target: { ...base.target } }), first, 'the same values, the same model')
  const others = [
    { ...base, target: { ...base.target, apiKey: 'sk-second' } },
    { ...base, target: { ...base.target, baseUrl: `${server.url}/v1/` } },
    { ...base, target: { ...base.target, provider: 'openai' as const } },
    { ...base, model: 'other-model' },
    { ...base, credential: { name: 'q' } as ModelCall['credential'] }
  ]
  for (const other of others) t.not(models.open(other), first)
  const texts: string[] = []
  for (const model of [first, models.open(others[0])]) {
    const result = streamText({ model, prompt: 'hi', maxRetries: 0 })
    let text = ''
    for await (const part of result.textStream) text += part
    texts.push(text)
  }
  t.same(texts, ['one', 'two'], 'the kept model answers again')
  t.same(server.requests.map((request) => request.headers.authorization), ['Bearer sk-first', 'Bearer sk-second'], 'each with its own key')
})
