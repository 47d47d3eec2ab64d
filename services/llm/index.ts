import type { Cursors } from '../collections/query.js'
import type { Clock } from '../platform/clock.js'
import type { SecretBox } from '../platform/crypto.js'
import type { IdGenerator } from '../platform/ids.js'
import { AddressGuard, type ResolveAll } from '../outbound/internal-addresses.js'
import type { Store } from '../store/types.js'
import type { LlmConfig } from './config.js'
import { LlmCredentials } from './credentials.js'
import { LlmModels } from './models.js'
import { LlmResolution } from './resolution.js'
import { LlmSettings } from './settings.js'
import { LlmUsageLedger } from './usage.js'

/** What the LLM family is built from. */
export interface LlmPorts {
  store: Store
  clock: Clock
  newId: IdGenerator
  secrets: SecretBox
  config: LlmConfig
  /** Seals the usage list's page cursors. */
  cursors: Cursors
  /** Tests answer host names themselves; the system resolver otherwise. */
  resolveAll?: ResolveAll
}

export interface LlmServices {
  credentials: LlmCredentials
  settings: LlmSettings
  resolution: LlmResolution
  /** The AI SDK model of a resolved call, its requests through the address guard. */
  models: LlmModels
  /** One row per model call, the monthly roll-ups, and the budget check made before a run. */
  usage: LlmUsageLedger
}

/** The LLM family's services, their indexes made. */
export async function buildLlmServices (ports: LlmPorts): Promise<LlmServices> {
  const { store, clock, newId, secrets, config } = ports
  const guard = new AddressGuard({ allowedHosts: config.allowedHosts, ...(ports.resolveAll === undefined ? {} : { resolveAll: ports.resolveAll }) })
  const credentials = new LlmCredentials(store, { clock, newId, secrets, guard, timeoutMs: config.timeoutMs })
  const settings = new LlmSettings(store, { clock })
  const resolution = new LlmResolution({ credentials, settings, defaults: { maxOutputTokens: config.defaultMaxOutputTokens, maxToolSteps: config.defaultMaxToolSteps } })
  // A model may think a while before its first byte, and pause between steps of a stream.
  const models = new LlmModels(guard, { headersTimeoutMs: config.timeoutMs * 4, idleTimeoutMs: config.timeoutMs * 4, maxResponseBytes: 32 * 1024 * 1024 })
  const usage = new LlmUsageLedger(store, { clock, newId, cursors: ports.cursors, credentials, resolution })
  await Promise.all([credentials.init(), settings.init(), usage.init()])
  return { credentials, settings, resolution, models, usage }
}
