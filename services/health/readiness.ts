import { commonErrors } from '../platform/errors.js'
import type { Store } from '../store/types.js'

const PING_TIMEOUT_MS = 2000

export interface Readiness { status: 'ready', store: Store['engine'] }

/** The store answers within PING_TIMEOUT_MS, or the probe is refused with 503. */
export async function checkReadiness (store: Store): Promise<Readiness> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error('timeout')), PING_TIMEOUT_MS)
  })
  try {
    await Promise.race([store.ping(), timeout])
  } catch {
    throw commonErrors.storeUnavailable({ engine: store.engine })
  } finally {
    clearTimeout(timer)
  }
  return { status: 'ready', store: store.engine }
}
