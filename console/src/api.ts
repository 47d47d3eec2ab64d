import { createAdmin, PlinthError } from '@plinth/sdk/admin'
import { Collection } from '@plinth/sdk/client'

/**
 * The console's one way to the API: the SDK's admin client on this same
 * origin, signed in with the platform session kept in sessionStorage (gone
 * with the tab). Records go through the client entry's Collection, which
 * takes the admin's credential: the data API lets a platform admin act with
 * their `records.*` permissions.
 */
export const admin = createAdmin({ baseUrl: location.origin, retry: { retries: 0 } })

const SESSION_KEY = 'plinth.console.session'

export interface ConsoleSession { accessToken: string, refreshToken: string, email: string }

export function currentSession (): ConsoleSession | null {
  const kept = sessionStorage.getItem(SESSION_KEY)
  if (kept === null) return null
  try {
    return JSON.parse(kept) as ConsoleSession
  } catch {
    return null
  }
}

export function keepSession (session: ConsoleSession | null): void {
  if (session === null) sessionStorage.removeItem(SESSION_KEY)
  else sessionStorage.setItem(SESSION_KEY, JSON.stringify(session))
  admin.useToken(session?.accessToken ?? null)
}

admin.useToken(currentSession()?.accessToken ?? null)

export function records (projectId: string, name: string): Collection<Record<string, unknown>> {
  return new Collection<Record<string, unknown>>(admin.http, projectId, name)
}

/** What to show for a failure: the API's own message and code when it sent one. */
export function messageOf (error: unknown): string {
  if (error instanceof PlinthError) return error.code.startsWith('APP_') ? `${error.message} (${error.code})` : error.message
  return error instanceof Error ? error.message : String(error)
}
