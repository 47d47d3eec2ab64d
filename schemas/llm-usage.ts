import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { Envelope } from './envelope.js'
import { DateTime, Id } from './common.js'

export const LLM_USAGE_PAGE_MAX = 100

/** A calendar month in UTC, `YYYY-MM`. */
export const MONTH = '^[0-9]{4}-(0[1-9]|1[0-2])$'

const Month = Type.String({ pattern: MONTH, description: 'A calendar month in UTC, `YYYY-MM`; the current month when left out', examples: ['2026-11'] })
const Level = Type.Union([Type.Literal('organization'), Type.Literal('project')])
const Usd = Type.Number({ description: 'USD, estimated from the prices the provider lists; calls to models without a known price count 0' })

const Totals = {
  calls: Type.Integer(),
  inputTokens: Type.Integer(),
  outputTokens: Type.Integer(),
  costUsd: Usd,
  unpricedCalls: Type.Integer({ description: 'Calls to a model whose prices are not known: their cost is not in `costUsd`' })
}

export const LlmUsageCall = Type.Object({
  id: Type.String(),
  projectId: Type.String(),
  userId: Type.String(),
  sessionId: Type.Union([Type.String(), Type.Null()]),
  runId: Type.Union([Type.String(), Type.Null()]),
  provider: Type.String(),
  model: Type.String({ description: 'The provider\'s own id of the model' }),
  credentialId: Type.Union([Type.String(), Type.Null()]),
  inputTokens: Type.Integer(),
  outputTokens: Type.Integer(),
  costUsd: Type.Union([Type.Number(), Type.Null()], { description: 'Estimated from the model\'s listed prices; null when they are not known' }),
  latencyMs: Type.Integer(),
  at: DateTime
}, { $id: 'LlmUsageCall' })

export const LlmUsage = Type.Object({
  level: Level,
  month: Type.String({ description: '`YYYY-MM`, UTC' }),
  totals: Type.Object(Totals),
  byModel: Type.Array(Type.Object({ provider: Type.String(), model: Type.String(), ...Totals }), { description: 'Most expensive first' }),
  byUser: Type.Array(Type.Object({ userId: Type.String(), ...Totals }), { description: 'Most expensive first' }),
  budgets: Type.Array(Type.Object({
    level: Level,
    monthlyUsd: Type.Number(),
    spentUsd: Type.Number({ description: 'What the level spent this month: at the organization level, every project of it' }),
    remainingUsd: Type.Number({ description: 'Never below 0; at 0 new runs are refused (402)' })
  }), { description: 'The monthly budgets in force here, each with what is left of it; both must have room for a run' })
}, { $id: 'LlmUsage' })

export const LlmUsageQuery = Type.Object({ month: Type.Optional(Month) }, { additionalProperties: false })
export const LlmUsageCallsQuery = Type.Object({
  month: Type.Optional(Month),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: LLM_USAGE_PAGE_MAX, default: 50 })),
  cursor: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'The `nextCursor` of the previous page of the same list' }))
}, { additionalProperties: false })
export const OrgLlmUsageParams = Type.Object({ orgId: Id })
export const ProjectLlmUsageParams = Type.Object({ projectId: Id })

const Page = <T extends TSchema>(item: T) => Type.Object({
  items: Type.Array(item),
  nextCursor: Type.Union([Type.String(), Type.Null()], { description: 'Pass as `cursor` for the next page; null on the last page' })
})

export const LlmUsageResponses = {
  usage: { 200: Envelope(Type.Ref(LlmUsage)) },
  calls: { 200: Envelope(Page(Type.Ref(LlmUsageCall))) }
}

export const llmUsageSchemas = [LlmUsageCall, LlmUsage]
export type LlmUsageT = Static<typeof LlmUsage>
export type LlmUsageCallT = Static<typeof LlmUsageCall>
