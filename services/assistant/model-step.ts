import type { TSchema } from '@sinclair/typebox'
import type { LlmModel } from '../llm/models.js'
import { needsApproval, type ToolDefinition } from '../tools/registry.js'
import type { MessageRecord } from './sessions.js'

/**
 * One model step through the provider model's own `doStream` (the AI SDK's
 * language-model interface, which `streamText` wraps): the run makes its own
 * tool calls and keeps its own history, so the wrapper's multi-step loop,
 * tool execution and the second branch it tees off the stream to parse every
 * chunk for its own promises were work in the first event's way
 * (bench/README.md, issue 32). What the wrapper did that a run needs is here:
 * the prompt in the interface's shape, the tools as function tools, a tool
 * call's input parsed as it does.
 */

type StepOptions = Parameters<LlmModel['doStream']>[0]
type StepTools = NonNullable<StepOptions['tools']>
type Prompt = StepOptions['prompt']
type ContentOf<Role> = Extract<Prompt[number], { role: Role }>['content']

function plainSchema (schema: TSchema): Record<string, unknown> {
  return JSON.parse(JSON.stringify(schema, (key, value: unknown) => key === '$id' ? undefined : value))
}

/** The registry's tools as the model is offered them; one that a person must approve says so. */
export function functionTools (definitions: Array<ToolDefinition<TSchema, TSchema, unknown>>): StepTools {
  return definitions.map((definition) => ({
    type: 'function' as const,
    name: definition.name,
    description: definition.description + (needsApproval(definition) ? ' (A person must approve the call before it runs.)' : ''),
    inputSchema: plainSchema(definition.input)
  }))
}

/**
 * The session's messages as the prompt: the system prompt first, each
 * message's parts as stored (they are the interface's parts), and tool
 * results of consecutive tool messages (a step's, then a pause's decided
 * calls) in one message, as the SDK's own conversion does.
 */
export function modelPrompt (system: string, history: MessageRecord[]): Prompt {
  const prompt: Prompt = system === '' ? [] : [{ role: 'system', content: system }]
  for (const message of history) {
    const last = prompt.at(-1)
    if (message.role === 'tool' && last?.role === 'tool') last.content.push(...message.content as ContentOf<'tool'>)
    else if (message.role === 'tool') prompt.push({ role: 'tool', content: [...message.content as ContentOf<'tool'>] })
    else if (message.role === 'user') prompt.push({ role: 'user', content: message.content as ContentOf<'user'> })
    else prompt.push({ role: 'assistant', content: message.content as ContentOf<'assistant'> })
  }
  return prompt
}

/**
 * A tool call's input as the provider streamed it (JSON text): an empty one
 * is an empty object; text that is not JSON is handed on as it is, for the
 * registry's validation to refuse to the model.
 */
export function toolInput (text: string): unknown {
  if (text.trim() === '') return {}
  try {
    return JSON.parse(text)
  } catch {
    return text
  }
}
