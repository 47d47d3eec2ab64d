import type { Cursors } from '../collections/query.js'
import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import { isoString } from '../platform/iso-dates.js'
import type { PagedWrites, Store, StoreCollection } from '../store/types.js'
import { keysetPage, NEWEST_FIRST, type Page, type PageRequest } from '../webhooks/paging.js'
import type { LlmUsageCallT, LlmUsageT } from '../../schemas/llm-usage.js'
import type { LlmLevel } from '../../schemas/llm.js'
import type { LlmCredentials } from './credentials.js'
import { llmErrors } from './errors.js'
import type { LlmResolution } from './resolution.js'
import { organizationScope, projectScope, type LlmScope } from './scope.js'

export const LLM_USAGE = 'llm_usage'

/** What one model call used, as the assistant reports it after the call. */
export interface ModelCallUsage {
  organizationId: string
  projectId: string
  userId: string
  sessionId?: string
  runId?: string
  provider: string
  /** The provider's own id of the model (ModelCall.model). */
  model: string
  /** The credential the call went through: its cached model list holds the prices the cost is estimated from. */
  credentialId?: string
  inputTokens: number
  outputTokens: number
  /** Left out, it is estimated from the credential's listed prices of the model (null when they are not known). */
  costUsd?: number | null
  latencyMs: number
  at: Date
}

// A type, not an interface: the Store takes documents with an index signature.
type UsageRecord = {
  _id: string
  orgId: string
  projectId: string
  userId: string
  sessionId: string | null
  runId: string | null
  provider: string
  model: string
  credentialId: string | null
  inputTokens: number
  outputTokens: number
  costUsd: number | null
  latencyMs: number
  at: Date
  /** `YYYY-MM` of `at` in UTC: the roll-ups' key. */
  month: string
}

type Totals = LlmUsageT['totals']

/** The calendar month (UTC) of an instant, `YYYY-MM`. */
export function monthOf (at: Date): string {
  return isoString(at).slice(0, 7)
}

// Sums of many small fractions: kept to a millionth of a dollar, so 0.1 + 0.2 reads 0.3.
const usd = (value: number): number => Math.round(value * 1e6) / 1e6
const none = (): Totals => ({ calls: 0, inputTokens: 0, outputTokens: 0, costUsd: 0, unpricedCalls: 0 })

function add (totals: Totals, record: Pick<UsageRecord, 'inputTokens' | 'outputTokens' | 'costUsd'>): void {
  totals.calls++
  totals.inputTokens += record.inputTokens
  totals.outputTokens += record.outputTokens
  if (record.costUsd === null) totals.unpricedCalls++
  else totals.costUsd = usd(totals.costUsd + record.costUsd)
}

const byCost = (a: Totals, b: Totals): number => b.costUsd - a.costUsd || b.calls - a.calls

/**
 * The LLM usage ledger: one row per model call, and the monthly roll-ups of a
 * project and of an organization summed from those rows on an index
 * (`orgId, month` and `projectId, month`). Summing rather than keeping
 * counters is deliberate: a call is one insert, so a crash between two writes
 * cannot leave a counter ahead of or behind the rows, and there is nothing a
 * replay could count twice. A month holds thousands of calls, not millions,
 * and the sum reads only the four fields it needs.
 */
export class LlmUsageLedger {
  private readonly records: StoreCollection<UsageRecord>
  /** A level's whole history goes page by page: it holds more calls than one write may remove. */
  private readonly sweep: PagedWrites

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, cursors: Cursors, credentials: LlmCredentials, resolution: LlmResolution }) {
    this.records = store.collection<UsageRecord>(LLM_USAGE)
    this.sweep = store.extensions.sweep(LLM_USAGE)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ orgId: 1, month: 1 })
    await this.records.createIndex({ projectId: 1, month: 1 })
  }

  /** Files one call, its cost estimated from the prices its credential's model list gives (null when unknown). */
  async record (call: ModelCallUsage): Promise<void> {
    const inputTokens = Math.max(0, Math.round(call.inputTokens))
    const outputTokens = Math.max(0, Math.round(call.outputTokens))
    await this.records.insertOne({
      _id: this.deps.newId(),
      orgId: call.organizationId,
      projectId: call.projectId,
      userId: call.userId,
      sessionId: call.sessionId ?? null,
      runId: call.runId ?? null,
      provider: call.provider,
      model: call.model,
      credentialId: call.credentialId ?? null,
      inputTokens,
      outputTokens,
      costUsd: call.costUsd !== undefined ? call.costUsd : await this.estimate(call.credentialId, call.model, inputTokens, outputTokens),
      latencyMs: Math.max(0, Math.round(call.latencyMs)),
      at: call.at,
      month: monthOf(call.at)
    })
  }

  /**
   * Refuses (APP_LLM_BUDGET_EXCEEDED) when the organization's or the project's
   * monthly budget has nothing left for the month of `at`: called before a run
   * makes its first model call.
   */
  async assertRoom (scope: { organizationId: string, projectId: string }, at: Date): Promise<void> {
    const month = monthOf(at)
    for (const budget of await this.budgets(projectScope(scope.organizationId, scope.projectId), month)) {
      if (budget.remainingUsd <= 0) throw llmErrors.budgetExceeded({ level: budget.level, monthlyUsd: budget.monthlyUsd, spentUsd: budget.spentUsd, month })
    }
  }

  /** A level's roll-up of a month: totals, by model, by user, and its budgets with what is left. */
  async usage (scope: LlmScope, month = monthOf(this.deps.clock.now())): Promise<LlmUsageT> {
    const totals = none()
    const byModel = new Map<string, LlmUsageT['byModel'][number]>()
    const byUser = new Map<string, LlmUsageT['byUser'][number]>()
    for (const record of await this.rows(scope, month, { provider: 1, model: 1, userId: 1 })) {
      add(totals, record)
      const modelKey = `${record.provider}\n${record.model}`
      add(byModel.get(modelKey) ?? byModel.set(modelKey, { provider: record.provider, model: record.model, ...none() }).get(modelKey) as Totals, record)
      add(byUser.get(record.userId) ?? byUser.set(record.userId, { userId: record.userId, ...none() }).get(record.userId) as Totals, record)
    }
    return {
      level: scope.level,
      month,
      totals,
      byModel: [...byModel.values()].sort(byCost),
      byUser: [...byUser.values()].sort(byCost),
      budgets: await this.budgets(scope, month, totals.costUsd)
    }
  }

  /** A level's calls of a month, newest first. */
  async calls (scope: LlmScope, month: string, page: PageRequest): Promise<Page<LlmUsageCallT>> {
    const { docs, nextCursor } = await keysetPage(this.records, this.filter(scope, month), NEWEST_FIRST, page, this.deps.cursors, 'llm-usage-calls')
    return { items: docs.map(callView), nextCursor }
  }

  async deleteAllForProject (projectId: string): Promise<void> {
    await this.sweep.deleteMany({ projectId })
  }

  async deleteAllForOrganization (orgId: string): Promise<void> {
    await this.sweep.deleteMany({ orgId })
  }

  private filter (scope: LlmScope, month: string): Record<string, string> {
    return scope.level === 'organization' ? { orgId: scope.orgId, month } : { projectId: scope.projectId, month }
  }

  private async rows (scope: LlmScope, month: string, extra: Record<string, 1> = {}): Promise<UsageRecord[]> {
    return await this.records.find(this.filter(scope, month), { projection: { _id: 0, inputTokens: 1, outputTokens: 1, costUsd: 1, ...extra } }).toArray() as UsageRecord[]
  }

  private async spent (scope: LlmScope, month: string): Promise<number> {
    const totals = none()
    for (const record of await this.rows(scope, month)) add(totals, record)
    return totals.costUsd
  }

  /** The budgets in force at a level (both levels for a project: they stack), each with what its level spent in the month. */
  private async budgets (scope: LlmScope, month: string, spentHere?: number): Promise<LlmUsageT['budgets']> {
    const { view } = await this.deps.resolution.resolve(scope)
    const levels: Record<LlmLevel, LlmScope> = { organization: organizationScope(scope.orgId), project: scope }
    return await Promise.all(view.budgets.map(async ({ level, monthlyUsd }) => {
      const spentUsd = level === scope.level && spentHere !== undefined ? spentHere : await this.spent(levels[level], month)
      return { level, monthlyUsd, spentUsd, remainingUsd: usd(Math.max(0, monthlyUsd - spentUsd)) }
    }))
  }

  private async estimate (credentialId: string | undefined, model: string, inputTokens: number, outputTokens: number): Promise<number | null> {
    if (credentialId === undefined) return null
    const listed = (await this.deps.credentials.byId(credentialId))?.models.find((candidate) => candidate.model === model)
    if (listed === undefined || listed.inputPricePerMillion === null || listed.outputPricePerMillion === null) return null
    return usd((inputTokens * listed.inputPricePerMillion + outputTokens * listed.outputPricePerMillion) / 1e6)
  }
}

function callView (record: UsageRecord): LlmUsageCallT {
  return {
    id: record._id,
    projectId: record.projectId,
    userId: record.userId,
    sessionId: record.sessionId,
    runId: record.runId,
    provider: record.provider,
    model: record.model,
    credentialId: record.credentialId,
    inputTokens: record.inputTokens,
    outputTokens: record.outputTokens,
    costUsd: record.costUsd,
    latencyMs: record.latencyMs,
    at: isoString(record.at)
  }
}
