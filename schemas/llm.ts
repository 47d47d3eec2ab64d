import { Type, type Static, type TSchema } from '@sinclair/typebox'
import { Created, Envelope } from './envelope.js'
import { DateTime, Deleted, Id } from './common.js'

export const LLM_PROVIDERS = ['openai', 'anthropic', 'openai-compatible'] as const
export const LLM_MAX_CREDENTIALS = 20
export const LLM_MAX_ALLOWED_MODELS = 200
export const LLM_MAX_SYSTEM_PROMPT = 20_000

/** A credential's name: the provider id of model references (`openai:gpt-4o`), as the AI SDK's provider registry names them. */
const CredentialName = Type.String({ minLength: 1, maxLength: 40, pattern: '^[a-z0-9][a-z0-9-]*$', description: 'Lower case letters, digits and dashes; models are named `<name>:<model>`', examples: ['openai'] })

/** `<credential>:<model>`; the model part may hold `:` and `/` (`ollama:llama3.1:8b`). */
export const MODEL_REF = '^[a-z0-9][a-z0-9-]*:[^\\s]{1,200}$'
const ModelRef = Type.String({ minLength: 3, maxLength: 241, pattern: MODEL_REF, description: '`<credential name>:<model id>`', examples: ['openai:gpt-4o'] })
const AllowedModel = Type.String({ minLength: 3, maxLength: 241, pattern: MODEL_REF, description: '`<credential name>:<model id>`, or `<credential name>:*` for all of its models' })

const Provider = Type.Union(LLM_PROVIDERS.map((provider) => Type.Literal(provider)), { description: '`openai-compatible` is any server speaking OpenAI\'s API (Ollama, vLLM, llama.cpp, LiteLLM, OpenRouter) at `baseUrl`' })
const Level = Type.Union([Type.Literal('organization'), Type.Literal('project')])
const Source = Type.Union([Type.Literal('platform'), Type.Literal('organization'), Type.Literal('project')])

export const LlmCheck = Type.Object({
  ok: Type.Boolean(),
  message: Type.String({ description: 'How many models the provider listed, or why it could not: `Anthropic refused the key (401)`, `Could not reach http://10.0.0.5:11434: ECONNREFUSED`' }),
  modelCount: Type.Union([Type.Integer(), Type.Null()]),
  checkedAt: DateTime
}, { $id: 'LlmCheck' })

export const LlmCredential = Type.Object({
  id: Type.String(),
  level: Level,
  name: CredentialName,
  label: Type.String(),
  provider: Provider,
  baseUrl: Type.String({ description: 'Where the provider is called; the provider\'s own API unless set' }),
  keyHint: Type.Union([Type.String(), Type.Null()], { description: 'The key masked (`sk-…abcd`); the key itself is sealed at rest and never returned. Null without a key' }),
  lastCheck: Type.Union([Type.Ref(LlmCheck), Type.Null()], { description: 'The last check or model refresh; null until one runs, and again after the key or base URL changes' }),
  createdAt: DateTime,
  updatedAt: DateTime
}, { $id: 'LlmCredential' })

export const LlmModel = Type.Object({
  id: Type.String({ description: '`<credential name>:<model id>`, as settings and calls name it' }),
  credentialId: Type.String(),
  credentialName: Type.String(),
  level: Level,
  provider: Provider,
  model: Type.String({ description: 'The id the provider gave' }),
  displayName: Type.Union([Type.String(), Type.Null()]),
  contextWindow: Type.Union([Type.Integer(), Type.Null()], { description: 'Tokens, where the provider says' }),
  inputPricePerMillion: Type.Union([Type.Number(), Type.Null()], { description: 'USD per million input tokens, where the provider says' }),
  outputPricePerMillion: Type.Union([Type.Number(), Type.Null()], { description: 'USD per million output tokens, where the provider says' }),
  allowed: Type.Boolean({ description: 'Whether the allowed models at this level let it be used' }),
  fetchedAt: DateTime
}, { $id: 'LlmModel' })

const settingFields = {
  defaultModel: Type.Union([ModelRef, Type.Null()]),
  allowedModels: Type.Union([Type.Array(AllowedModel, { maxItems: LLM_MAX_ALLOWED_MODELS, uniqueItems: true }), Type.Null()], { description: 'Null allows every model; a project\'s list only narrows its organization\'s' }),
  temperature: Type.Union([Type.Number({ minimum: 0, maximum: 2 }), Type.Null()]),
  maxOutputTokens: Type.Union([Type.Integer({ minimum: 1, maximum: 1_000_000 }), Type.Null()]),
  systemPrompt: Type.Union([Type.String({ maxLength: LLM_MAX_SYSTEM_PROMPT }), Type.Null()], { description: 'The organization\'s comes first, then the project\'s' }),
  maxToolSteps: Type.Union([Type.Integer({ minimum: 1, maximum: 100 }), Type.Null()]),
  monthlyBudgetUsd: Type.Union([Type.Number({ minimum: 0, maximum: 1_000_000_000 }), Type.Null()], { description: 'Budgets stack: a run needs room in both the project\'s and its organization\'s' }),
  allowProjectCredentials: Type.Union([Type.Boolean(), Type.Null()], { description: 'Organization only: whether projects may bring their own credentials (default false)' })
}

export const LlmSettings = Type.Object({
  level: Level,
  ...settingFields,
  updatedAt: Type.Union([DateTime, Type.Null()])
}, { $id: 'LlmSettings', description: 'What this level sets; null leaves a value to the level above' })

export const LlmSettingsPatch = Type.Partial(Type.Object(settingFields), { additionalProperties: false, minProperties: 1, description: 'The fields to change; null clears one back to the level above' })

const resolved = <T extends TSchema>(value: T) => Type.Object({ value, source: Source })

export const LlmResolved = Type.Object({
  level: Level,
  defaultModel: resolved(Type.Union([Type.String(), Type.Null()])),
  temperature: resolved(Type.Union([Type.Number(), Type.Null()])),
  maxOutputTokens: resolved(Type.Integer()),
  maxToolSteps: resolved(Type.Integer()),
  allowProjectCredentials: resolved(Type.Boolean()),
  allowedModels: Type.Object({
    value: Type.Union([Type.Array(Type.String()), Type.Null()], { description: 'Null: every model' }),
    sources: Type.Array(Level, { description: 'The levels whose lists were intersected' })
  }),
  systemPrompt: Type.Object({ value: Type.String(), sources: Type.Array(Level, { description: 'The levels whose prompts were joined, in order' }) }),
  budgets: Type.Array(Type.Object({ level: Level, monthlyUsd: Type.Number() }), { description: 'Every budget a run must have room in' }),
  credentials: Type.Array(Type.Ref(LlmCredential), { description: 'The credentials calls here use: a project\'s shadows its organization\'s of the same name where the organization allows project credentials' }),
  warnings: Type.Array(Type.Object({
    code: Type.Union([Type.Literal('default-model-not-allowed'), Type.Literal('default-model-no-credential'), Type.Literal('credential-check-failed'), Type.Literal('project-credentials-ignored')]),
    message: Type.String()
  }))
}, { $id: 'LlmResolved', description: 'Every value with where it came from: the project, its organization or the platform default' })

export const CreateLlmCredentialBody = Type.Object({
  name: CredentialName,
  label: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Defaults to the name' })),
  provider: Provider,
  apiKey: Type.Optional(Type.String({ minLength: 1, maxLength: 1024, description: 'Write-only; required for OpenAI and Anthropic' })),
  baseUrl: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: 'Required for `openai-compatible` (`http://ollama.internal:11434/v1`); OpenAI defaults to https://api.openai.com/v1, Anthropic to https://api.anthropic.com/v1' }))
}, { additionalProperties: false })

export const UpdateLlmCredentialBody = Type.Object({
  label: Type.Optional(Type.String({ minLength: 1, maxLength: 100 })),
  apiKey: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 1024 }), Type.Null()], { description: 'A new key, or null to remove it (openai-compatible only)' })),
  baseUrl: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 2048 }), Type.Null()], { description: 'Null goes back to the provider\'s own API' }))
}, { additionalProperties: false, minProperties: 1 })

export const OrgLlmParams = Type.Object({ orgId: Id })
export const ProjectLlmParams = Type.Object({ projectId: Id })
export const OrgLlmCredentialParams = Type.Object({ orgId: Id, credentialId: Id })
export const ProjectLlmCredentialParams = Type.Object({ projectId: Id, credentialId: Id })
export const LlmModelsQuery = Type.Object({ credentialId: Type.Optional(Id) }, { additionalProperties: false })

export const LlmResponses = {
  credentialList: { 200: Envelope(Type.Array(Type.Ref(LlmCredential))) },
  credentialCreated: { 201: Created(Type.Ref(LlmCredential)) },
  credential: { 200: Envelope(Type.Ref(LlmCredential)) },
  check: { 200: Envelope(Type.Ref(LlmCheck)) },
  deleted: { 200: Envelope(Deleted) },
  models: { 200: Envelope(Type.Array(Type.Ref(LlmModel))) },
  settings: { 200: Envelope(Type.Ref(LlmSettings)) },
  resolved: { 200: Envelope(Type.Ref(LlmResolved)) }
}

export const llmSchemas = [LlmCheck, LlmCredential, LlmModel, LlmSettings, LlmResolved]
export type LlmProviderName = typeof LLM_PROVIDERS[number]
export type LlmLevel = Static<typeof Level>
export type LlmSource = Static<typeof Source>
export type LlmCheckT = Static<typeof LlmCheck>
export type LlmCredentialT = Static<typeof LlmCredential>
export type LlmModelT = Static<typeof LlmModel>
export type LlmSettingsT = Static<typeof LlmSettings>
export type LlmSettingsPatchT = Static<typeof LlmSettingsPatch>
export type LlmResolvedT = Static<typeof LlmResolved>
export type CreateLlmCredentialT = Static<typeof CreateLlmCredentialBody>
export type UpdateLlmCredentialT = Static<typeof UpdateLlmCredentialBody>
