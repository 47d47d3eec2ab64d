import { Type, type Static } from '@sinclair/typebox'
import { allowedHostList, integer, type Env } from '../platform/config-env.js'

/**
 * The LLM family's settings (services/llm/, docs/llm.md), each with the
 * variable it is read from, as `loadConfig().llm`. The platform defaults are
 * where resolution ends when neither the project nor its organization sets a
 * value.
 */
export const LlmConfig = Type.Object({
  allowedHosts: Type.Array(Type.String(), { variable: 'LLM_ALLOWED_HOSTS', description: 'Host names, *.suffix wildcards, addresses and CIDR ranges a credential\'s base URL may reach although they are internal (a local Ollama, vLLM or llama.cpp server); every other internal address is refused' }),
  timeoutMs: Type.Integer({ minimum: 1000, variable: 'LLM_TIMEOUT_SECONDS', description: 'How long a call to a provider\'s model list may take, from connecting to the last byte read' }),
  defaultMaxOutputTokens: Type.Integer({ minimum: 1, variable: 'LLM_DEFAULT_MAX_OUTPUT_TOKENS', description: 'Max output tokens where neither the project nor its organization sets them' }),
  defaultMaxToolSteps: Type.Integer({ minimum: 1, variable: 'LLM_DEFAULT_MAX_TOOL_STEPS', description: 'Max tool steps of one run where neither the project nor its organization sets them' })
})
export type LlmConfig = Static<typeof LlmConfig>

export function parseLlmConfig (env: Env): LlmConfig {
  return {
    allowedHosts: allowedHostList(env, 'LLM_ALLOWED_HOSTS'),
    timeoutMs: integer(env, 'LLM_TIMEOUT_SECONDS', 15, 1, 300) * 1000,
    defaultMaxOutputTokens: integer(env, 'LLM_DEFAULT_MAX_OUTPUT_TOKENS', 4096, 1, 1_000_000),
    defaultMaxToolSteps: integer(env, 'LLM_DEFAULT_MAX_TOOL_STEPS', 10, 1, 100)
  }
}
