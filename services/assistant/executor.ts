import { APICallError } from 'ai'
import type { TSchema } from '@sinclair/typebox'
import type { MessagePartT, PendingApprovalT, RunUsageT, StopReason } from '../../schemas/assistant.js'
import type { LlmModels } from '../llm/models.js'
import type { LlmResolution, ModelCall } from '../llm/resolution.js'
import { projectScope } from '../llm/scope.js'
import type { Clock } from '../platform/clock.js'
import { AppError } from '../platform/errors.js'
import { needsApproval, type ToolCaller, type ToolDefinition, type ToolRegistry } from '../tools/registry.js'
import type { AssistantConfig } from './config.js'
import type { AssistantUsageLedger } from './ledger.js'
import { functionTools, modelPrompt, toolInput } from './model-step.js'
import type { AssistantRuns, RunRecord } from './runs.js'
import type { AssistantSessions } from './sessions.js'

type AnyTool = ToolDefinition<TSchema, TSchema, unknown>

/** A run ended by a cap or a failure, with its reason. */
class RunStop extends Error {
  constructor (readonly reason: StopReason, message: string, readonly failed: boolean) {
    super(message)
  }
}

export interface ExecutorDeps {
  clock: Clock
  config: AssistantConfig
  sessions: AssistantSessions
  runs: AssistantRuns
  resolution: LlmResolution
  models: LlmModels
  tools: ToolRegistry<any>
  ledger?: AssistantUsageLedger
}

/**
 * Runs an assistant run a stretch at a time: from its start (or an
 * approval) to its end or its next pause. Each step is one model call whose
 * tool calls this executor makes itself through the registry, as the run's
 * caller with their access read at that call; a call needing approval (`needsApproval`) is not
 * made but parks the run until a person decides it.
 */
export class RunExecutor {
  // Runs working on this node, so a cancel stops the model call at once.
  private readonly working = new Map<string, AbortController>()

  constructor (private readonly deps: ExecutorDeps) {}

  /** Stops this node's work on a run (a cancel); other nodes see the status at their next step. */
  abort (runId: string): void {
    this.working.get(runId)?.abort(new Error('cancelled'))
  }

  /** One stretch of the run; `attempt` above 1 means a worker died in the stretch before, which is then ended as interrupted. */
  async execute (runId: string, attempt: number): Promise<void> {
    const { runs } = this.deps
    const run = await runs.byId(runId)
    if (run === null || (run.status !== 'queued' && run.status !== 'running')) return
    if (attempt > 1) {
      await this.finish(run, 'failed', 'interrupted', 'The run was cut off (the server running it stopped) and was not resumed')
      return
    }
    // A first start takes `run.started`'s id in its own write.
    const started = await runs.transition(runId, ['queued'], 'running', {}, run.eventCount === 0)
    if (started === null) return
    const controller = new AbortController()
    this.working.set(runId, controller)
    const wallTime = AbortSignal.timeout(this.deps.config.maxWallMs)
    const signal = AbortSignal.any([controller.signal, wallTime])
    let call: ModelCall | null = null
    try {
      if (run.eventCount === 0) await runs.announce(started, 'run.started', { runId, model: started.model })
      call = await this.deps.resolution.call(projectScope(started.organizationId, started.projectId), started.model)
      await this.decided(started)
      await this.steps(started, call, signal)
    } catch (error) {
      if (controller.signal.aborted) return
      if (wallTime.aborted) {
        await this.finish(started, 'failed', 'max_wall_time', `The run worked longer than ${this.deps.config.maxWallMs / 1000} s and was stopped`)
        return
      }
      if (error instanceof RunStop) {
        await this.finish(started, error.failed ? 'failed' : 'completed', error.reason, error.failed ? error.message : null)
        return
      }
      await this.finish(started, 'failed', error instanceof APICallError ? 'provider_error' : 'error', this.scrub(describe(error), call))
    } finally {
      this.working.delete(runId)
    }
  }

  /** The model steps, until the model stops calling tools, a call waits for approval, or a cap is reached. */
  private async steps (run: RunRecord, call: ModelCall, signal: AbortSignal): Promise<void> {
    const { runs, sessions } = this.deps
    const tools = functionTools(this.deps.tools.list() as AnyTool[])
    for (;;) {
      const current = await runs.byId(run._id)
      if (current === null || current.status !== 'running') return
      if (current.usage.steps >= call.maxToolSteps) throw new RunStop('max_steps', `Stopped after ${call.maxToolSteps} steps`, false)
      const remaining = call.maxOutputTokens - current.usage.outputTokens
      if (remaining <= 0) throw new RunStop('max_output_tokens', `Stopped after ${call.maxOutputTokens} output tokens`, false)
      const history = await sessions.history(run.sessionId)
      const startedAt = this.deps.clock.nowMs()
      // No retries (a provider's refusal ends the run with its reason); an error the provider answers is thrown here.
      const { stream } = await this.deps.models.open(call).doStream({
        prompt: modelPrompt(call.systemPrompt, history),
        ...(tools.length === 0 ? {} : { tools, toolChoice: { type: 'auto' as const } }),
        maxOutputTokens: remaining,
        ...(call.temperature === null ? {} : { temperature: call.temperature }),
        abortSignal: signal
      })
      let text = ''
      const toolCalls: Array<{ toolCallId: string, toolName: string, input: unknown }> = []
      let usage: RunUsageT = { inputTokens: 0, outputTokens: 0, steps: 1 }
      let finishReason = 'unknown'
      for await (const part of stream) {
        if (signal.aborted) throw signal.reason
        if (part.type === 'text-delta') {
          text += part.delta
          await runs.emit(run._id, 'text.delta', { text: part.delta })
        } else if (part.type === 'tool-call') {
          toolCalls.push({ toolCallId: part.toolCallId, toolName: part.toolName, input: toolInput(part.input) })
        } else if (part.type === 'finish') {
          usage = { inputTokens: part.usage.inputTokens.total ?? 0, outputTokens: part.usage.outputTokens.total ?? 0, steps: 1 }
          finishReason = part.finishReason.unified
        } else if (part.type === 'error') {
          throw part.error
        }
      }
      await runs.addUsage(run._id, usage)
      await this.deps.ledger?.record({
        organizationId: run.organizationId,
        projectId: run.projectId,
        userId: run.createdBy,
        sessionId: run.sessionId,
        runId: run._id,
        provider: call.credential.provider,
        model: call.model,
        credentialId: call.credential._id,
        inputTokens: usage.inputTokens,
        outputTokens: usage.outputTokens,
        latencyMs: this.deps.clock.nowMs() - startedAt,
        at: this.deps.clock.now()
      })
      const parts: MessagePartT[] = [...(text === '' ? [] : [{ type: 'text' as const, text }]), ...toolCalls.map((c) => ({ type: 'tool-call' as const, ...c }))]
      if (parts.length > 0) await sessions.append(run.sessionId, run._id, 'assistant', parts)
      await runs.emit(run._id, 'step.finished', { usage, finishReason })
      if (toolCalls.length === 0) {
        if (finishReason === 'length') throw new RunStop('max_output_tokens', `Stopped after ${call.maxOutputTokens} output tokens`, false)
        throw new RunStop('end_turn', '', false)
      }
      const results: MessagePartT[] = []
      const waiting: PendingApprovalT[] = []
      for (const toolCall of toolCalls) {
        const definition = this.deps.tools.get(toolCall.toolName) as AnyTool | undefined
        await runs.emit(run._id, 'tool.call', toolCall)
        if (definition !== undefined && needsApproval(definition)) {
          waiting.push({ callId: toolCall.toolCallId, toolName: toolCall.toolName, input: toolCall.input, permission: definition.permission, decision: null, decidedBy: null, reason: null })
          continue
        }
        results.push(await this.callTool(run, toolCall))
      }
      if (results.length > 0) await sessions.append(run.sessionId, run._id, 'tool', results)
      if (waiting.length > 0) {
        const parked = await runs.transition(run._id, ['running'], 'awaiting_approval', { approvals: waiting })
        if (parked !== null) await runs.announce(parked, 'approval.required', { approvals: waiting })
        return
      }
    }
  }

  /** The decided calls of the pause the run comes back from: the approved ones made now, the denied ones told to the model as denied. */
  private async decided (run: RunRecord): Promise<void> {
    if (run.approvals.length === 0) return
    const results: MessagePartT[] = []
    for (const approval of run.approvals) {
      if (approval.decision === 'approve') {
        results.push(await this.callTool(run, { toolCallId: approval.callId, toolName: approval.toolName, input: approval.input }))
      } else {
        const output = { type: 'execution-denied', reason: `A person denied this call${approval.reason === null ? '' : `: ${approval.reason}`}` }
        await this.deps.runs.emit(run._id, 'tool.result', { toolCallId: approval.callId, toolName: approval.toolName, output })
        results.push({ type: 'tool-result', toolCallId: approval.callId, toolName: approval.toolName, output })
      }
    }
    await this.deps.sessions.append(run.sessionId, run._id, 'tool', results)
    await this.deps.runs.update(run._id, 'running', { approvals: [] })
  }

  /** One tool call through the registry, as the run's caller; a refusal goes to the model in the platform's envelope. */
  private async callTool (run: RunRecord, toolCall: { toolCallId: string, toolName: string, input: unknown }): Promise<MessagePartT> {
    const caller: ToolCaller = {
      userId: run.createdBy,
      projectId: run.projectId,
      ...(run.scopes === null ? {} : { scopes: run.scopes }),
      ...(run.origin === undefined ? {} : { origin: { channel: 'assistant', ...run.origin } })
    }
    let output: { type: 'json' | 'error-json', value: unknown }
    try {
      output = { type: 'json', value: await this.deps.tools.call(toolCall.toolName, caller, toolCall.input) ?? null }
    } catch (error) {
      if (!(error instanceof AppError)) throw error
      output = { type: 'error-json', value: { success: false, message: error.message, code: error.code, ...(error.details === undefined ? {} : { details: error.details }) } }
    }
    const size = Buffer.byteLength(JSON.stringify(output.value))
    if (size > this.deps.config.maxToolOutputBytes) {
      throw new RunStop('max_tool_output', `The tool ${toolCall.toolName} answered ${size} bytes, more than the ${this.deps.config.maxToolOutputBytes} a run hands to the model`, true)
    }
    await this.deps.runs.emit(run._id, 'tool.result', { toolCallId: toolCall.toolCallId, toolName: toolCall.toolName, output })
    return { type: 'tool-result', toolCallId: toolCall.toolCallId, toolName: toolCall.toolName, output }
  }

  /** Ends the run (only if it is still running or queued), frees the session and says so in its last event. */
  async finish (run: RunRecord, status: 'completed' | 'failed', stopReason: StopReason, error: string | null): Promise<void> {
    const ended = await this.deps.runs.transition(run._id, ['running', 'queued'], status, { stopReason, error, approvals: [] })
    if (ended === null) return
    await this.deps.sessions.release(run.sessionId, run._id)
    await this.deps.runs.announce(ended, status === 'completed' ? 'run.completed' : 'run.failed', { stopReason, error, usage: ended.usage })
  }

  /** A provider's message never carries the key back to a client. */
  private scrub (message: string, call: ModelCall | null): string {
    const key = call?.target.apiKey
    return key === null || key === undefined || key === '' ? message : message.split(key).join('[key]')
  }
}

function describe (error: unknown): string {
  if (APICallError.isInstance(error)) {
    const status = error.statusCode === undefined ? '' : ` ${error.statusCode}`
    return `The provider answered${status}: ${error.message}`
  }
  if (error instanceof AppError) return error.message
  return error instanceof Error ? error.message : String(error)
}
