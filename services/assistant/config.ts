import { Type, type Static } from '@sinclair/typebox'
import { integer, type Env } from '../platform/config-env.js'

/**
 * The assistant's settings (services/assistant/, docs/assistant.md), each
 * with the variable it is read from, as `loadConfig().assistant`. Steps and
 * output tokens come from the resolved LLM settings (docs/llm.md); these are
 * the caps no setting of a project reaches.
 */
export const AssistantConfig = Type.Object({
  maxWallMs: Type.Integer({ minimum: 1000, variable: 'ASSISTANT_MAX_RUN_SECONDS', description: 'How long a run may work between two pauses (its start, an approval) before it stops as failed with `max_wall_time`; a provider that hangs ends here' }),
  maxToolOutputBytes: Type.Integer({ minimum: 1024, variable: 'ASSISTANT_MAX_TOOL_OUTPUT_BYTES', description: 'The largest tool answer (as JSON) a run hands to the model; a larger one stops the run as failed with `max_tool_output`' })
})
export type AssistantConfig = Static<typeof AssistantConfig>

export function parseAssistantConfig (env: Env): AssistantConfig {
  return {
    maxWallMs: integer(env, 'ASSISTANT_MAX_RUN_SECONDS', 300, 1, 3600) * 1000,
    maxToolOutputBytes: integer(env, 'ASSISTANT_MAX_TOOL_OUTPUT_BYTES', 65_536, 1024, 16 * 1024 * 1024)
  }
}
