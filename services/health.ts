import { AppError } from './errors.js'
import type { Store } from './store/types.js'

const PING_TIMEOUT_MS = 2000

export async function checkReadiness (store: Store): Promise<{ status: 'ready', store: Store['engine'] }> {
  let timer: NodeJS.Timeout | undefined
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error('timeout')), PING_TIMEOUT_MS)
  })
  try {
    await Promise.race([store.ping(), timeout])
  } catch {
    throw new AppError('APP_STORE_UNAVAILABLE', 503, `The ${store.engine} store is not answering`, { retryAfterSeconds: 5 })
  } finally {
    clearTimeout(timer)
  }
  return { status: 'ready', store: store.engine }
}
