import type { AddressGuard } from '../outbound/internal-addresses.js'
import { outboundRequest } from '../outbound/http.js'
import type { LlmProviderName } from '../../schemas/llm.js'

/**
 * What this server asks of a model provider over its own wire format, through
 * the one outbound path (outboundRequest: the address guard, pinned
 * resolution, no redirects, a deadline, a capped read). Today: the model
 * list, which is also how a credential is checked. OpenAI and every
 * OpenAI-compatible server answer `GET {base}/models` with `{ data: [{ id }] }`;
 * Anthropic answers `GET {base}/models` with `{ data: [{ id, display_name }] }`
 * for an `x-api-key` and an `anthropic-version`.
 */

export const DEFAULT_BASE_URLS: Record<Exclude<LlmProviderName, 'openai-compatible'>, string> = {
  openai: 'https://api.openai.com/v1',
  anthropic: 'https://api.anthropic.com/v1'
}

export const ANTHROPIC_VERSION = '2023-06-01'

/** Where and how one provider is called. */
export interface ProviderTarget {
  provider: LlmProviderName
  baseUrl: string
  apiKey: string | null
}

export interface ProviderModel {
  model: string
  displayName: string | null
  contextWindow: number | null
  inputPricePerMillion: number | null
  outputPricePerMillion: number | null
}

export type ModelListing = { ok: true, models: ProviderModel[] } | { ok: false, message: string }

const MAX_MODEL_LIST_BYTES = 8 * 1024 * 1024
const MAX_MODELS = 2000

/** The headers a provider reads its key from. */
export function authHeaders (target: ProviderTarget): Record<string, string> {
  if (target.provider === 'anthropic') return { 'anthropic-version': ANTHROPIC_VERSION, ...(target.apiKey === null ? {} : { 'x-api-key': target.apiKey }) }
  return target.apiKey === null ? {} : { authorization: `Bearer ${target.apiKey}` }
}

/** The provider as a refusal names it: `Anthropic`, `OpenAI`, or the compatible server's origin. */
export function providerTitle (target: ProviderTarget): string {
  if (target.provider === 'openai') return 'OpenAI'
  if (target.provider === 'anthropic') return 'Anthropic'
  return new URL(target.baseUrl).origin
}

const positive = (value: unknown): number | null => typeof value === 'number' && Number.isFinite(value) && value > 0 ? Math.round(value) : null

/** A price per token (OpenRouter writes them as decimal strings) as USD per million tokens. */
function perMillion (value: unknown): number | null {
  const perToken = typeof value === 'string' ? Number(value) : value
  return typeof perToken === 'number' && Number.isFinite(perToken) && perToken >= 0 ? Math.round(perToken * 1e6 * 1e6) / 1e6 : null
}

/**
 * One entry of a model list, with what the servers that say so call the
 * context window: `context_length` (OpenRouter), `max_model_len` (vLLM),
 * `meta.n_ctx_train` (llama.cpp), `context_window` (Groq and others),
 * `max_input_tokens` (Anthropic).
 */
function modelOf (entry: unknown): ProviderModel | null {
  if (typeof entry !== 'object' || entry === null) return null
  const item = entry as Record<string, unknown>
  if (typeof item.id !== 'string' || item.id === '' || item.id.length > 200 || /\s/.test(item.id)) return null
  const meta = typeof item.meta === 'object' && item.meta !== null ? item.meta as Record<string, unknown> : {}
  const pricing = typeof item.pricing === 'object' && item.pricing !== null ? item.pricing as Record<string, unknown> : {}
  const displayName = typeof item.display_name === 'string' ? item.display_name : typeof item.name === 'string' ? item.name : null
  return {
    model: item.id,
    displayName: displayName?.slice(0, 200) ?? null,
    contextWindow: positive(item.context_length) ?? positive(item.max_model_len) ?? positive(meta.n_ctx_train) ?? positive(item.context_window) ?? positive(item.max_input_tokens),
    inputPricePerMillion: perMillion(pricing.prompt),
    outputPricePerMillion: perMillion(pricing.completion)
  }
}

/** What a provider's error body says, briefly: `{ error: { message } }` (OpenAI, Anthropic) or `{ error: "…" }`. */
function saidIn (body: Buffer): string | null {
  try {
    const parsed = JSON.parse(body.toString('utf8')) as { error?: unknown, message?: unknown }
    const error = parsed.error as { message?: unknown } | string | undefined
    const said = typeof error === 'string' ? error : typeof error?.message === 'string' ? error.message : typeof parsed.message === 'string' ? parsed.message : null
    return said === null ? null : said.slice(0, 200)
  } catch {
    return null
  }
}

/** The models a provider offers for these credentials, or why it would not say. */
export async function listModels (guard: AddressGuard, target: ProviderTarget, timeoutMs: number): Promise<ModelListing> {
  const title = providerTitle(target)
  const base = target.baseUrl.replace(/\/+$/, '')
  const url = target.provider === 'anthropic' ? `${base}/models?limit=1000` : `${base}/models`
  const result = await outboundRequest(guard, { method: 'GET', url, headers: { accept: 'application/json', ...authHeaders(target) } }, { timeoutMs, maxResponseBytes: MAX_MODEL_LIST_BYTES })
  const origin = new URL(target.baseUrl).origin
  if (result.kind === 'refused') return { ok: false, message: `${origin} is not called: its host reaches ${result.address}, a ${result.internal} address; the operator may allow it with LLM_ALLOWED_HOSTS` }
  if (result.kind === 'failed') return { ok: false, message: `Could not reach ${origin}: ${result.code}` }
  if (result.status === 401 || result.status === 403) return { ok: false, message: `${title} refused the key (${result.status})` }
  if (result.status < 200 || result.status > 299) {
    // What a server says is shown to readers of the credential: a key it echoes back is cut out.
    const said = target.apiKey === null ? saidIn(result.body) : saidIn(result.body)?.replaceAll(target.apiKey, '[key]') ?? null
    return { ok: false, message: `${title} answered ${result.status}${said === null ? '' : `: ${said}`}` }
  }
  if (result.truncated) return { ok: false, message: `${title} answered a model list larger than ${MAX_MODEL_LIST_BYTES} bytes` }
  let data: unknown
  try {
    data = (JSON.parse(result.body.toString('utf8')) as { data?: unknown }).data
  } catch {
    data = undefined
  }
  if (!Array.isArray(data)) return { ok: false, message: `${title} answered ${result.status} without a model list at ${base}/models` }
  const models = data.slice(0, MAX_MODELS).map(modelOf).filter((model): model is ProviderModel => model !== null)
  return { ok: true, models }
}
