import { createAdmin, localStorageAdapter, PlinthError, type PlatformSession } from '@plinth/sdk/admin'
import { Collection } from '@plinth/sdk/client'

const SESSION_KEY = 'plinth.console.session'

/**
 * The console's one way to the API: the SDK's admin client on this same
 * origin. Its platform session is kept in sessionStorage (gone with the tab)
 * by the SDK, which refreshes it before it expires and again when the server
 * refuses an expired token, so a long visit is not sent back to sign-in.
 * Records go through the client entry's Collection, which takes the admin's
 * credential: the data API lets a platform admin act with their `records.*`
 * permissions.
 */
export const admin = createAdmin({
  baseUrl: location.origin,
  retry: { retries: 0 },
  storage: localStorageAdapter(sessionStorage),
  storageKey: SESSION_KEY
})

/** The session the SDK keeps, read as it stands (sessionStorage answers at once). */
export function currentSession (): PlatformSession | null {
  const kept = sessionStorage.getItem(SESSION_KEY)
  if (kept === null) return null
  try {
    return JSON.parse(kept) as PlatformSession
  } catch {
    return null
  }
}

export function records (projectId: string, name: string): Collection<Record<string, unknown>> {
  return new Collection<Record<string, unknown>>(admin.http, projectId, name)
}

/** What to show for a failure: the API's own message and code when it sent one. */
export function messageOf (error: unknown): string {
  if (error instanceof PlinthError) return error.code.startsWith('APP_') ? `${error.message} (${error.code})` : error.message
  return error instanceof Error ? error.message : String(error)
}
