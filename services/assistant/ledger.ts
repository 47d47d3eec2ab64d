import type { LlmUsageLedger } from '../llm/usage.js'

/**
 * What the assistant needs of the LLM usage ledger (services/llm/usage.ts):
 * a row per model call, and a refusal before a run when a budget has no room.
 * Optional: without one, runs keep their own usage and nothing is refused.
 */
export type AssistantUsageLedger = Pick<LlmUsageLedger, 'record' | 'assertRoom'>
