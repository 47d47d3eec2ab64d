import { Type, type Static } from '@sinclair/typebox'
import { DateTime, Deleted, Id } from './common.js'
import { Created, Envelope, withHeaders, LOCATION } from './envelope.js'

/**
 * Assistant sessions (`/api/projects/:projectId/assistant/sessions`,
 * docs/assistant.md): sessions, their messages, runs and run events.
 */

export const ASSISTANT_LIMITS = { titleMax: 200, messageMax: 32_000, pageDefault: 50, pageMax: 100, eventPage: 500 } as const

const InProject = { projectId: Id }
export const SessionListParams = Type.Object(InProject)
export const SessionParams = Type.Object({ ...InProject, sessionId: Id })
export const RunParams = Type.Object({ ...InProject, sessionId: Id, runId: Id })
export const ApprovalParams = Type.Object({ ...InProject, sessionId: Id, runId: Id, callId: Type.String({ minLength: 1, maxLength: 200, pattern: '^[0-9A-Za-z_.:-]+$' }) })
export const PageQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: ASSISTANT_LIMITS.pageMax, default: ASSISTANT_LIMITS.pageDefault })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'The `nextCursor` of the previous page of the same list' }))
}, { additionalProperties: false })
export type PageQueryT = Static<typeof PageQuery>
export const EventsQuery = Type.Object({
  after: Type.Optional(Type.Integer({ minimum: 0, description: 'Events after this id; the `Last-Event-ID` header says the same and wins' }))
}, { additionalProperties: false })

const Title = Type.String({ minLength: 1, maxLength: ASSISTANT_LIMITS.titleMax })
export const CreateSessionBody = Type.Object({ title: Type.Optional(Title) }, { additionalProperties: false })
export const RenameSessionBody = Type.Object({ title: Title }, { additionalProperties: false })
export const PostMessageBody = Type.Object({
  content: Type.String({ minLength: 1, maxLength: ASSISTANT_LIMITS.messageMax, description: 'What the user says' }),
  model: Type.Optional(Type.String({ minLength: 3, maxLength: 300, description: 'A `<credential>:<model>` the project allows; the resolved default model otherwise' }))
}, { additionalProperties: false })
export type PostMessageBodyT = Static<typeof PostMessageBody>
export const ApprovalBody = Type.Object({
  decision: Type.Union([Type.Literal('approve'), Type.Literal('deny')]),
  reason: Type.Optional(Type.String({ maxLength: 1000, description: 'Told to the model with a denial' }))
}, { additionalProperties: false })
export type ApprovalBodyT = Static<typeof ApprovalBody>

export const AssistantSession = Type.Object({
  id: Id,
  projectId: Id,
  title: Type.String(),
  createdBy: Id,
  activeRunId: Type.Union([Id, Type.Null()], { description: 'The run that is queued, running or awaiting approval; at most one' }),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'AssistantSession' })
export type AssistantSessionT = Static<typeof AssistantSession>

const TextPart = Type.Object({ type: Type.Literal('text'), text: Type.String() })
const ToolCallPart = Type.Object({ type: Type.Literal('tool-call'), toolCallId: Type.String(), toolName: Type.String(), input: Type.Unknown() })
const ToolResultPart = Type.Object({
  type: Type.Literal('tool-result'),
  toolCallId: Type.String(),
  toolName: Type.String(),
  output: Type.Unknown({ description: 'As the model was told: `{ type: "json", value }`, `{ type: "error-json", value }` (a refusal in the envelope) or `{ type: "execution-denied", reason }`' })
})
export const MessagePart = Type.Union([TextPart, ToolCallPart, ToolResultPart])
export type MessagePartT = Static<typeof MessagePart>
export const AssistantMessage = Type.Object({
  id: Id,
  seq: Type.Integer({ description: 'Its place in the session, from 1' }),
  runId: Type.Union([Id, Type.Null()]),
  role: Type.Union([Type.Literal('user'), Type.Literal('assistant'), Type.Literal('tool')]),
  content: Type.Array(MessagePart),
  createdAt: DateTime
}, { $id: 'AssistantMessage' })
export type AssistantMessageT = Static<typeof AssistantMessage>

export const RUN_STATUSES = ['queued', 'running', 'awaiting_approval', 'completed', 'failed', 'cancelled'] as const
export type RunStatus = typeof RUN_STATUSES[number]
export const STOP_REASONS = ['end_turn', 'max_steps', 'max_output_tokens', 'max_wall_time', 'max_tool_output', 'provider_error', 'interrupted', 'cancelled', 'error'] as const
export type StopReason = typeof STOP_REASONS[number]

export const PendingApproval = Type.Object({
  callId: Type.String(),
  toolName: Type.String(),
  input: Type.Unknown(),
  permission: Type.String({ description: 'What the approver must hold' }),
  decision: Type.Union([Type.Literal('approve'), Type.Literal('deny'), Type.Null()]),
  decidedBy: Type.Union([Id, Type.Null()]),
  reason: Type.Union([Type.String(), Type.Null()], { description: 'Why it was denied, as the model is told' })
})
export type PendingApprovalT = Static<typeof PendingApproval>
export const RunUsage = Type.Object({
  inputTokens: Type.Integer(),
  outputTokens: Type.Integer(),
  steps: Type.Integer({ description: 'Model calls made' })
})
export type RunUsageT = Static<typeof RunUsage>
export const AssistantRun = Type.Object({
  id: Id,
  sessionId: Id,
  status: Type.Union(RUN_STATUSES.map((status) => Type.Literal(status))),
  model: Type.String(),
  stopReason: Type.Union([...STOP_REASONS.map((reason) => Type.Literal(reason)), Type.Null()], { description: 'Why it ended' }),
  error: Type.Union([Type.String(), Type.Null()], { description: 'What went wrong, for a failed run' }),
  usage: RunUsage,
  approvals: Type.Array(PendingApproval, { description: 'The destructive tool calls of the current pause' }),
  createdBy: Id,
  createdAt: DateTime,
  updatedAt: DateTime,
  finishedAt: Type.Union([DateTime, Type.Null()])
}, { $id: 'AssistantRun' })
export type AssistantRunT = Static<typeof AssistantRun>

export const EVENT_TYPES = ['run.started', 'text.delta', 'tool.call', 'approval.required', 'tool.result', 'step.finished', 'run.completed', 'run.failed', 'run.cancelled'] as const
export type RunEventType = typeof EVENT_TYPES[number]
export const RunEvent = Type.Object({
  id: Type.Integer({ description: 'From 1 in the run; the SSE `id`' }),
  type: Type.Union(EVENT_TYPES.map((type) => Type.Literal(type))),
  data: Type.Unknown(),
  at: DateTime
}, { $id: 'AssistantRunEvent' })
export type RunEventT = Static<typeof RunEvent>

const page = <T extends ReturnType<typeof Type.Ref>>(item: T) => Type.Object({ items: Type.Array(item), nextCursor: Type.Union([Type.String(), Type.Null()]) })
const StartedRun = Type.Object({ message: Type.Ref(AssistantMessage), run: Type.Ref(AssistantRun) })

export const AssistantResponses = {
  session: { 200: Envelope(Type.Ref(AssistantSession)) },
  sessionCreated: { 201: Created(Type.Ref(AssistantSession)) },
  sessionList: { 200: Envelope(page(Type.Ref(AssistantSession))) },
  sessionDeleted: { 200: Envelope(Deleted) },
  messageList: { 200: Envelope(page(Type.Ref(AssistantMessage))) },
  runStarted: { 202: withHeaders(Envelope(StartedRun), LOCATION) },
  run: { 200: Envelope(Type.Ref(AssistantRun)) },
  runList: { 200: Envelope(page(Type.Ref(AssistantRun))) },
  events: { 200: Envelope(Type.Object({ items: Type.Array(Type.Ref(RunEvent)), run: Type.Ref(AssistantRun) })) }
}

export const assistantSchemas = [AssistantSession, AssistantMessage, AssistantRun, RunEvent]
