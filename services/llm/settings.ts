import type { Clock } from '../platform/clock.js'
import { isoStringOrNull } from '../platform/iso-dates.js'
import type { Store, StoreCollection } from '../store/types.js'
import type { LlmSettingsPatchT, LlmSettingsT } from '../../schemas/llm.js'
import { llmErrors } from './errors.js'
import { scopeKey, type LlmScope } from './scope.js'

export const LLM_SETTINGS = 'llm_settings'

/** What one level sets; null leaves the value to the level above. */
export type SettingValues = {
  defaultModel: string | null
  allowedModels: string[] | null
  temperature: number | null
  maxOutputTokens: number | null
  systemPrompt: string | null
  maxToolSteps: number | null
  monthlyBudgetUsd: number | null
  allowProjectCredentials: boolean | null
}

type SettingsRecord = SettingValues & {
  /** The scope's key (`org:<id>`, `project:<id>`): one document per level. */
  _id: string
  orgId: string
  updatedAt: Date
}

export const UNSET: SettingValues = {
  defaultModel: null,
  allowedModels: null,
  temperature: null,
  maxOutputTokens: null,
  systemPrompt: null,
  maxToolSteps: null,
  monthlyBudgetUsd: null,
  allowProjectCredentials: null
}

const FIELDS = Object.keys(UNSET) as Array<keyof SettingValues>

/** LLM settings of organizations and projects, one document per level. */
export class LlmSettings {
  private readonly records: StoreCollection<SettingsRecord>

  constructor (store: Store, private readonly deps: { clock: Clock }) {
    this.records = store.collection<SettingsRecord>(LLM_SETTINGS)
  }

  async init (): Promise<void> {
    await this.records.createIndex({ orgId: 1 })
  }

  /** What the level sets, unset fields null. */
  async values (scope: LlmScope): Promise<SettingValues & { updatedAt: Date | null }> {
    const record = await this.records.findOne({ _id: scopeKey(scope) }) as SettingsRecord | null
    if (record === null) return { ...UNSET, updatedAt: null }
    const values = { ...UNSET, updatedAt: record.updatedAt }
    for (const field of FIELDS) Object.assign(values, { [field]: record[field] ?? null })
    return values
  }

  async get (scope: LlmScope): Promise<LlmSettingsT> {
    const { updatedAt, ...values } = await this.values(scope)
    return { level: scope.level, ...values, updatedAt: isoStringOrNull(updatedAt) }
  }

  async update (scope: LlmScope, patch: LlmSettingsPatchT): Promise<LlmSettingsT> {
    if (scope.level === 'project' && patch.allowProjectCredentials !== undefined && patch.allowProjectCredentials !== null) {
      throw llmErrors.settingsInvalid({ problem: 'Whether projects may bring their own credentials is the organization\'s setting', path: 'body.allowProjectCredentials', issue: 'is set by the organization only' })
    }
    const set: Partial<SettingsRecord> = { orgId: scope.orgId, updatedAt: this.deps.clock.now() }
    for (const field of FIELDS) {
      const value = patch[field]
      if (value !== undefined) Object.assign(set, { [field]: field === 'systemPrompt' && value === '' ? null : value })
    }
    await this.records.updateOne({ _id: scopeKey(scope) }, { $set: set }, { upsert: true })
    return await this.get(scope)
  }

  async deleteAllForProject (projectId: string): Promise<void> {
    await this.records.deleteOne({ _id: `project:${projectId}` })
  }

  async deleteAllForOrganization (orgId: string): Promise<void> {
    await this.records.deleteMany({ orgId })
  }
}
