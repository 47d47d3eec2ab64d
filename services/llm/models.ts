import { createAnthropic } from '@ai-sdk/anthropic'
import { createOpenAI } from '@ai-sdk/openai'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import type { LanguageModel } from 'ai'
import type { AddressGuard } from '../outbound/internal-addresses.js'
import { guardedFetch } from '../outbound/guarded-fetch.js'
import type { ModelCall } from './resolution.js'

/** How long a provider may take to answer, and to fall silent while it streams; how much it may send. */
export interface ProviderCallLimits {
  headersTimeoutMs: number
  idleTimeoutMs: number
  maxResponseBytes: number
}

/**
 * The AI SDK's model for one resolved call: OpenAI (its Responses API, the
 * SDK's default for OpenAI), Anthropic (messages) or any OpenAI-compatible
 * server (chat completions, with usage asked for in the stream). Every
 * request goes through `guardedFetch`, never the SDK's own `fetch`.
 */
export class LlmModels {
  private readonly fetch: typeof fetch

  constructor (guard: AddressGuard, limits: ProviderCallLimits) {
    this.fetch = guardedFetch(guard, limits)
  }

  open (call: ModelCall): LanguageModel {
    const { target } = call
    const base = { baseURL: target.baseUrl.replace(/\/+$/, ''), fetch: this.fetch }
    if (target.provider === 'anthropic') return createAnthropic({ ...base, apiKey: target.apiKey ?? '' })(call.model)
    if (target.provider === 'openai') return createOpenAI({ ...base, apiKey: target.apiKey ?? '' })(call.model)
    return createOpenAICompatible({ ...base, name: call.credential.name, includeUsage: true, ...(target.apiKey === null ? {} : { apiKey: target.apiKey }) }).chatModel(call.model)
  }
}
