import type { ApprovalBodyT, PostMessageBodyT } from '../../schemas/assistant.js'
import type { Cursors } from '../collections/query.js'
import type { LlmServices } from '../llm/index.js'
import { projectScope } from '../llm/scope.js'
import type { Clock } from '../platform/clock.js'
import { commonErrors } from '../platform/errors.js'
import type { IdGenerator } from '../platform/ids.js'
import type { Store } from '../store/types.js'
import type { ToolRegistry } from '../tools/registry.js'
import type { AssistantConfig } from './config.js'
import { assistantErrors } from './errors.js'
import { RunExecutor } from './executor.js'
import type { AssistantUsageLedger } from './ledger.js'
import { ACTIVE_STATUSES, AssistantRuns, type RunOrigin, type RunRecord } from './runs.js'
import { AssistantSessions, type MessageRecord, type SessionRecord } from './sessions.js'

/** The job that works a run a stretch at a time (its start, or after an approval). */
export const ASSISTANT_RUN_JOB = 'assistant.run'

export interface AssistantPorts {
  store: Store
  clock: Clock
  newId: IdGenerator
  cursors: Cursors
  config: AssistantConfig
  llm: Pick<LlmServices, 'resolution' | 'models'>
  tools: ToolRegistry<any>
  /** Puts a run's next stretch on the durable job queue. */
  enqueue: (runId: string) => Promise<void>
  ledger?: AssistantUsageLedger
  /** How often a follower on another node than the run looks for new events. */
  pollMs?: number
}

/** Who posts a message: the run's tools act as them, their access read at each call. */
export interface AssistantCaller {
  userId: string
  scopes?: string[]
  /** The credential and address of the request: a run's tool calls are audited as made through them. */
  origin?: RunOrigin
}

/** Sessions, runs and the run executor, with the operations the routes call. */
export class Assistant {
  readonly sessions: AssistantSessions
  readonly runs: AssistantRuns
  readonly executor: RunExecutor

  constructor (private readonly ports: AssistantPorts) {
    this.sessions = new AssistantSessions(ports.store, { clock: ports.clock, newId: ports.newId, cursors: ports.cursors })
    this.runs = new AssistantRuns(ports.store, { clock: ports.clock, cursors: ports.cursors, ...(ports.pollMs === undefined ? {} : { pollMs: ports.pollMs }) })
    this.executor = new RunExecutor({
      clock: ports.clock,
      config: ports.config,
      sessions: this.sessions,
      runs: this.runs,
      resolution: ports.llm.resolution,
      models: ports.llm.models,
      tools: ports.tools,
      ...(ports.ledger === undefined ? {} : { ledger: ports.ledger })
    })
  }

  async init (): Promise<void> {
    await Promise.all([this.sessions.init(), this.runs.init()])
  }

  /**
   * The user's message and a queued run answering it. Refused before
   * anything is written when no model resolves or a budget has no room;
   * refused 409 when the session has an active run.
   */
  async start (session: SessionRecord, organizationId: string, caller: AssistantCaller, body: PostMessageBodyT): Promise<{ message: MessageRecord, run: RunRecord }> {
    const { clock, newId } = this.ports
    const call = await this.ports.llm.resolution.call(projectScope(organizationId, session.projectId), body.model)
    await this.ports.ledger?.assertRoom({ organizationId, projectId: session.projectId }, clock.now())
    const runId = newId()
    await this.sessions.claim(session, runId)
    const now = clock.now()
    const run: RunRecord = {
      _id: runId,
      sessionId: session._id,
      projectId: session.projectId,
      organizationId,
      status: 'queued',
      model: call.ref,
      stopReason: null,
      error: null,
      usage: { inputTokens: 0, outputTokens: 0, steps: 0 },
      approvals: [],
      createdBy: caller.userId,
      scopes: caller.scopes ?? null,
      ...(caller.origin === undefined ? {} : { origin: caller.origin }),
      eventCount: 0,
      createdAt: now,
      updatedAt: now,
      finishedAt: null
    }
    try {
      await this.runs.insert(run)
      const message = await this.sessions.append(session._id, runId, 'user', [{ type: 'text', text: body.content }])
      await this.ports.enqueue(runId)
      return { message, run }
    } catch (error) {
      await this.sessions.release(session._id, runId)
      throw error
    }
  }

  async run (session: SessionRecord, runId: string): Promise<RunRecord> {
    const run = await this.runs.find(session._id, runId)
    if (run === null) throw assistantErrors.runNotFound()
    return run
  }

  /** Cancels a run that has not ended: its status first (so its own end cannot win), then this node's model call. */
  async cancel (session: SessionRecord, runId: string): Promise<RunRecord> {
    const run = await this.run(session, runId)
    const cancelled = await this.runs.transition(run._id, ACTIVE_STATUSES, 'cancelled', { stopReason: 'cancelled', approvals: [] })
    if (cancelled === null) throw assistantErrors.runFinished({ status: run.status })
    this.executor.abort(run._id)
    await this.sessions.release(session._id, run._id)
    await this.runs.announce(cancelled, 'run.cancelled', { stopReason: 'cancelled', usage: cancelled.usage })
    return cancelled
  }

  /**
   * A person's decision on a destructive tool call the run waits on. The
   * approver must hold the tool's permission now; once every call of the
   * pause is decided, the run goes back on the queue.
   */
  async decide (session: SessionRecord, runId: string, callId: string, approver: AssistantCaller, body: ApprovalBodyT): Promise<RunRecord> {
    const run = await this.run(session, runId)
    const approval = run.approvals.find((candidate) => candidate.callId === callId && candidate.decision === null)
    if (run.status !== 'awaiting_approval' || approval === undefined) throw assistantErrors.approvalNotPending({ callId })
    if (body.decision === 'approve') {
      const permitted = await this.ports.tools.permits(approval.toolName, { userId: approver.userId, projectId: run.projectId, ...(approver.scopes === undefined ? {} : { scopes: approver.scopes }) })
      if (!permitted) throw commonErrors.forbidden({ permission: approval.permission })
    }
    const approvals = run.approvals.map((candidate) => candidate === approval ? { ...candidate, decision: body.decision, decidedBy: approver.userId, reason: body.decision === 'deny' ? body.reason ?? null : null } : candidate)
    const all = approvals.every((candidate) => candidate.decision !== null)
    // Conditional on the approvals as read: two people deciding at once cannot both write over each other.
    const updated = all
      ? await this.runs.transition(run._id, ['awaiting_approval'], 'queued', { approvals })
      : await this.runs.update(run._id, 'awaiting_approval', { approvals })
    if (updated === null) throw assistantErrors.approvalNotPending({ callId })
    if (all) await this.ports.enqueue(run._id)
    return updated
  }

  async deleteSession (session: SessionRecord): Promise<void> {
    const current = await this.sessions.get(session._id)
    if (current.activeRunId !== null) await this.cancel(session, current.activeRunId).catch(() => {})
    await this.runs.deleteForSessions([session._id])
    await this.sessions.delete(session)
  }

  async deleteAllForProject (projectId: string): Promise<void> {
    const ids = await this.sessions.deleteAllForProject(projectId)
    await this.runs.deleteForSessions(ids)
  }
}

export async function buildAssistantServices (ports: AssistantPorts): Promise<Assistant> {
  const assistant = new Assistant(ports)
  await assistant.init()
  return assistant
}
