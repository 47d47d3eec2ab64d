/** One model call of a run, as the usage ledger records it. */
export interface AssistantModelCall {
  organizationId: string
  projectId: string
  userId: string
  sessionId: string
  runId: string
  /** `<credential>:<model>`. */
  model: string
  inputTokens: number
  outputTokens: number
  latencyMs: number
  at: Date
}

/**
 * What the assistant needs of the LLM usage ledger (services/llm/usage.ts):
 * a row per model call, and a refusal before a run when a budget has no room.
 * Optional: without one, runs keep their own usage and nothing is refused.
 */
export interface AssistantUsageLedger {
  record: (call: AssistantModelCall) => Promise<void>
  assertRoom: (scope: { organizationId: string, projectId: string }, at: Date) => Promise<void>
}
