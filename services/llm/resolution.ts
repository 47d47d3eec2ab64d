import type { LlmLevel, LlmModelT, LlmResolvedT, LlmSource } from '../../schemas/llm.js'
import { credentialView, modelViews, type CredentialRecord, type LlmCredentials } from './credentials.js'
import { llmErrors } from './errors.js'
import type { ProviderTarget } from './providers.js'
import { organizationScope, type LlmScope } from './scope.js'
import type { LlmSettings, SettingValues } from './settings.js'

/** The platform's own values, where neither level sets one (LLM_DEFAULT_* in the configuration). */
export interface PlatformDefaults {
  maxOutputTokens: number
  maxToolSteps: number
}

/** Whether an allowed-models list lets a model (or a `<credential>:*` pattern) through. */
export function listAllows (list: readonly string[], ref: string): boolean {
  return list.some((entry) => entry === ref || (entry.endsWith(':*') && ref.startsWith(entry.slice(0, -1))))
}

/** Two allowed-models lists as one: what both let through. Null is every model. */
export function intersectAllowed (outer: readonly string[] | null, inner: readonly string[] | null): string[] | null {
  if (outer === null) return inner === null ? null : [...inner]
  if (inner === null) return [...outer]
  const both = [
    ...inner.filter((entry) => listAllows(outer, entry)),
    ...outer.filter((entry) => !entry.endsWith(':*') && listAllows(inner, entry))
  ]
  return [...new Set(both)]
}

/** Everything a call at a level is made with: the contract's view, and the stored credentials behind it. */
export interface Resolution {
  view: LlmResolvedT
  /** The credentials calls use, by name (a project's shadowing its organization's where allowed). */
  credentials: Map<string, CredentialRecord>
  allows: (ref: string) => boolean
}

/** What one model call is made with: the credential and key, and the resolved values. */
export interface ModelCall {
  /** `<credential>:<model>`. */
  ref: string
  /** The provider's own id of the model. */
  model: string
  credential: CredentialRecord
  target: ProviderTarget
  temperature: number | null
  maxOutputTokens: number
  maxToolSteps: number
  systemPrompt: string
  budgets: LlmResolvedT['budgets']
}

function pick<T> (project: T | null, organization: T | null, platform: T): { value: T, source: LlmSource } {
  if (project !== null) return { value: project, source: 'project' }
  if (organization !== null) return { value: organization, source: 'organization' }
  return { value: platform, source: 'platform' }
}

/**
 * The one resolution of LLM configuration, used by the routes and by the
 * assistant: scalars project → organization → platform; allowed models only
 * narrow (organization ∩ project); a project's credential shadows its
 * organization's of the same name only where the organization allows
 * project credentials; system prompts join organization then project;
 * budgets stack.
 */
export class LlmResolution {
  constructor (private readonly deps: { credentials: LlmCredentials, settings: LlmSettings, defaults: PlatformDefaults }) {}

  async resolve (scope: LlmScope): Promise<Resolution> {
    const { credentials, settings, defaults } = this.deps
    const orgScope = organizationScope(scope.orgId)
    const [org, orgCredentials] = await Promise.all([settings.values(orgScope), credentials.recordsIn(orgScope)])
    const project: SettingValues | null = scope.level === 'project' ? await settings.values(scope) : null
    const projectCredentials = scope.level === 'project' ? await credentials.recordsIn(scope) : []
    const p = <K extends keyof SettingValues>(field: K): SettingValues[K] | null => project === null ? null : project[field]

    const allowProjectCredentials = pick(null, org.allowProjectCredentials, false)
    const effective = new Map(orgCredentials.map((record) => [record.name, record]))
    const warnings: LlmResolvedT['warnings'] = []
    if (allowProjectCredentials.value) for (const record of projectCredentials) effective.set(record.name, record)
    else if (projectCredentials.length > 0) {
      warnings.push({ code: 'project-credentials-ignored', message: `The organization does not allow project credentials: ${projectCredentials.map((record) => record.name).join(', ')} ${projectCredentials.length === 1 ? 'is' : 'are'} not used` })
    }

    const allowedLists: Array<[LlmLevel, string[] | null]> = [['organization', org.allowedModels], ['project', p('allowedModels')]]
    const allowedValue = intersectAllowed(org.allowedModels, p('allowedModels'))
    const allows = (ref: string): boolean => allowedLists.every(([, list]) => list === null || listAllows(list, ref))
    const prompts: Array<[LlmLevel, string | null]> = [['organization', org.systemPrompt], ['project', p('systemPrompt')]]
    const budgets: Array<[LlmLevel, number | null]> = [['organization', org.monthlyBudgetUsd], ['project', p('monthlyBudgetUsd')]]

    const defaultModel = pick(p('defaultModel'), org.defaultModel, null as string | null)
    if (defaultModel.value !== null) {
      if (!allows(defaultModel.value)) warnings.push({ code: 'default-model-not-allowed', message: `The default model ${defaultModel.value} is not among the allowed models` })
      const name = defaultModel.value.slice(0, defaultModel.value.indexOf(':'))
      if (!effective.has(name)) warnings.push({ code: 'default-model-no-credential', message: `The default model ${defaultModel.value} names the credential ${name}, which is not usable here` })
    }
    for (const record of effective.values()) {
      if (record.lastCheck?.ok === false) warnings.push({ code: 'credential-check-failed', message: `The credential ${record.name} failed its last check: ${record.lastCheck.message}` })
    }

    const view: LlmResolvedT = {
      level: scope.level,
      defaultModel,
      temperature: pick(p('temperature'), org.temperature, null as number | null),
      maxOutputTokens: pick(p('maxOutputTokens'), org.maxOutputTokens, defaults.maxOutputTokens),
      maxToolSteps: pick(p('maxToolSteps'), org.maxToolSteps, defaults.maxToolSteps),
      allowProjectCredentials,
      allowedModels: { value: allowedValue, sources: allowedLists.filter(([, list]) => list !== null).map(([level]) => level) },
      systemPrompt: {
        value: prompts.flatMap(([, prompt]) => prompt === null ? [] : [prompt]).join('\n\n'),
        sources: prompts.filter(([, prompt]) => prompt !== null).map(([level]) => level)
      },
      budgets: budgets.flatMap(([level, monthlyUsd]) => monthlyUsd === null ? [] : [{ level, monthlyUsd }]),
      credentials: [...effective.values()].sort((a, b) => a.name.localeCompare(b.name)).map(credentialView),
      warnings
    }
    return { view, credentials: effective, allows }
  }

  /** The models of the credentials usable at a level (or of the one named), cached from their last check. */
  async models (scope: LlmScope, credentialId?: string): Promise<LlmModelT[]> {
    const { credentials, allows } = await this.resolve(scope)
    if (credentialId !== undefined) {
      const record = [...credentials.values()].find((candidate) => candidate._id === credentialId) ?? await this.deps.credentials.record(scope, credentialId)
      return modelViews(record, allows)
    }
    return [...credentials.values()].flatMap((record) => modelViews(record, allows))
  }

  /** What a call to `model` (or the default model) at a level is made with; refused when no model is named, it is not allowed or its credential is not usable here. */
  async call (scope: LlmScope, model?: string): Promise<ModelCall> {
    const { view, credentials, allows } = await this.resolve(scope)
    const ref = model ?? view.defaultModel.value
    if (ref === null) throw llmErrors.noModel()
    if (!allows(ref)) throw llmErrors.modelNotAllowed({ model: ref })
    const separator = ref.indexOf(':')
    const name = separator < 0 ? ref : ref.slice(0, separator)
    const credential = credentials.get(name)
    if (credential === undefined || separator < 0) throw llmErrors.noCredential({ name })
    return {
      ref,
      model: ref.slice(separator + 1),
      credential,
      target: this.deps.credentials.target(credential),
      temperature: view.temperature.value,
      maxOutputTokens: view.maxOutputTokens.value,
      maxToolSteps: view.maxToolSteps.value,
      systemPrompt: view.systemPrompt.value,
      budgets: view.budgets
    }
  }
}
