import { createHash } from 'node:crypto'
import { createAnthropic } from '@ai-sdk/anthropic'
import { createOpenAI } from '@ai-sdk/openai'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import type { LanguageModel } from 'ai'
import { BoundedMap } from '../cache/bounded-map.js'
import type { AddressGuard } from '../outbound/internal-addresses.js'
import { guardedFetch } from '../outbound/guarded-fetch.js'
import type { ModelCall } from './resolution.js'

/** How long a provider may take to answer, and to fall silent while it streams; how much it may send. */
export interface ProviderCallLimits {
  headersTimeoutMs: number
  idleTimeoutMs: number
  maxResponseBytes: number
}

/** A provider's model as the AI SDK's language-model interface defines it (its `doStream` is what a run calls). */
export type LlmModel = Extract<LanguageModel, { specificationVersion: 'v3' }>

/** Models kept made: a run's steps and the runs after it call the same few. */
const MODELS_KEPT = 256

/**
 * The AI SDK's model for one resolved call: OpenAI (its Responses API, the
 * SDK's default for OpenAI), Anthropic (messages) or any OpenAI-compatible
 * server (chat completions, with usage asked for in the stream). Every
 * request goes through `guardedFetch`, never the SDK's own `fetch`.
 *
 * A model is made once for what defines it (provider, base URL, key,
 * credential name, model id) and reused: making one builds its response
 * schemas, which zod compiles at their first use, inside the first chunk's
 * way to the client (bench/README.md, issue 32). A changed key or base URL
 * is another model.
 */
export class LlmModels {
  private readonly fetch: typeof fetch
  private readonly made = new BoundedMap<string, LlmModel>(MODELS_KEPT)

  constructor (guard: AddressGuard, limits: ProviderCallLimits) {
    this.fetch = guardedFetch(guard, limits)
  }

  open (call: ModelCall): LlmModel {
    const { target } = call
    // Hashed: the key is not kept as a map key, only inside the provider that needs it.
    const id = createHash('sha256').update(JSON.stringify([target.provider, target.baseUrl, target.apiKey, call.credential.name, call.model])).digest('base64')
    return this.made.remember(id, () => this.make(call))
  }

  private make (call: ModelCall): LlmModel {
    const { target } = call
    const base = { baseURL: target.baseUrl.replace(/\/+$/, ''), fetch: this.fetch }
    if (target.provider === 'anthropic') return createAnthropic({ ...base, apiKey: target.apiKey ?? '' })(call.model)
    if (target.provider === 'openai') return createOpenAI({ ...base, apiKey: target.apiKey ?? '' })(call.model)
    return createOpenAICompatible({ ...base, name: call.credential.name, includeUsage: true, ...(target.apiKey === null ? {} : { apiKey: target.apiKey }) }).chatModel(call.model)
  }
}
