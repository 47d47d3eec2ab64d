import { setTimeout as sleep } from 'node:timers/promises'
import { StoreBusyError } from '../errors.js'

/**
 * How a connection (connection.ts) takes the database file's write lock:
 * BEGIN IMMEDIATE, turned into StoreBusyError when another holds the lock;
 * retried between event-loop turns until the busy timeout; and, first, the
 * group-commit turns held by this process's other connections to the file
 * committed so they do not wait on each other.
 */

/** How long a write waits for the file's write lock, in all, when the opener does not say (STORE_BUSY_TIMEOUT_MS). */
export const DEFAULT_BUSY_TIMEOUT_MS = 5_000

/**
 * SQLite's own busy handler sleeps synchronously, holding the event loop; it
 * only bridges short waits (and reads meeting a recovery). Longer waits for
 * the write lock are taken between event-loop turns by `retryWhileBusy`.
 */
export const SYNC_BUSY_TIMEOUT_MS = 50
/** Opening is synchronous and rare: it may wait long for another process's lock. */
export const OPEN_BUSY_TIMEOUT_MS = 10_000
const RETRY_PAUSE_MAX_MS = 50

/** A connection that may hold the write lock across an event-loop turn (its group commit). */
export interface TurnHolder {
  commitWriteTurn: () => void
}

/**
 * This process's open connections, by database file. A connection holds the
 * write lock across an event-loop turn (the group commit), and SQLite's busy
 * handler would wait for it without ever letting that turn end: a deadlock
 * that ends in SQLITE_BUSY. So a connection about to write first lets its
 * siblings on the same file commit the turns they hold.
 */
const holdersByFile = new Map<string, Set<TurnHolder>>()

export function joinFile (fileKey: string, holder: TurnHolder): void {
  const holders = holdersByFile.get(fileKey) ?? new Set()
  holders.add(holder)
  holdersByFile.set(fileKey, holders)
}

export function leaveFile (fileKey: string, holder: TurnHolder): void {
  const holders = holdersByFile.get(fileKey)
  holders?.delete(holder)
  if (holders?.size === 0) holdersByFile.delete(fileKey)
}

/** Siblings in this process commit the group-commit turns they hold, which would otherwise wait on this one's busy handler. */
export function yieldLock (fileKey: string, self: TurnHolder): void {
  for (const holder of holdersByFile.get(fileKey) ?? []) if (holder !== self) holder.commitWriteTurn()
}

function isBusy (error: unknown): boolean {
  const code = (error as { code?: unknown }).code
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY')
}

/** Runs BEGIN IMMEDIATE (`begin`); a lock held elsewhere is a StoreBusyError. */
export function beginImmediate (begin: () => void): void {
  try {
    begin()
  } catch (error) {
    if (isBusy(error)) throw new StoreBusyError()
    throw error
  }
}

/**
 * `attempt`, retried while it throws StoreBusyError, with short jittered
 * pauses that leave the event loop free, until `busyTimeoutMs`; then the
 * StoreBusyError. Only a failed BEGIN is retried, so nothing of a write ran
 * when it is.
 */
export async function retryWhileBusy<T> (attempt: () => T, busyTimeoutMs: number): Promise<T> {
  const deadline = Date.now() + busyTimeoutMs
  for (let tries = 0; ; tries++) {
    try {
      return attempt()
    } catch (error) {
      if (!(error instanceof StoreBusyError) || Date.now() >= deadline) throw error
    }
    await sleep(Math.min(RETRY_PAUSE_MAX_MS, 2 ** tries) * (0.5 + Math.random()))
  }
}
