import { once } from 'node:events'
import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import type Database from 'better-sqlite3'

/**
 * WAL mode and its checkpoints, for the connections of one file.
 *
 * Durability: in WAL mode with synchronous=NORMAL a commit appends its frames
 * to the -wal file and returns without fsync. An acknowledged write is in the
 * operating system's page cache, so it survives the process being killed
 * (kill -9, a crash); after a power loss or a kernel crash the last commits
 * before it may be missing, never half there (the file stays consistent).
 * synchronous=FULL would fsync the WAL at every commit, on the event loop, to
 * survive power loss too: DATA_DIR on SQLite is the zero-setup store, and a
 * deployment that needs power-loss durability runs MongoDB with journaled
 * writes (docs/store.md).
 *
 * Checkpoints copy the WAL back into the database file and fsync both. SQLite
 * runs one inside the commit that crosses wal_autocheckpoint, which is on the
 * event loop: every request waiting behind that commit waited for the copy
 * and two fsyncs (issue 36: creates' p99). So the serving connections turn
 * the autocheckpoint off and a worker thread with a connection of its own
 * checkpoints PASSIVE on a timer: it copies what no reader still needs,
 * without taking the write lock, so commits carry on meanwhile. Several
 * processes on one DATA_DIR each run one; a PASSIVE checkpoint finding
 * another under way just skips its turn.
 */

/** Pages of WAL after which SQLite checkpoints inside a commit, where no checkpointer thread runs (or it failed). */
const AUTOCHECKPOINT_PAGES = 16_000
const JOURNAL_SIZE_LIMIT = 64 * 1024 * 1024

export interface CheckpointOptions {
  /** The thread starts this long after the file's first connection opens: a short-lived store (a test, a CLI) never pays for one. */
  startAfterMs?: number
  intervalMs?: number
  /**
   * Frames a PASSIVE checkpoint could not copy back (a reader still needs
   * them) beyond which the thread tries TRUNCATE, at that turn and the
   * following ones until it succeeds: once the reader lets go, it empties the
   * file. TRUNCATE takes the write lock and waits for readers while holding
   * it, so it runs without a busy timeout: it skips its turn when any reader is
   * on an old snapshot rather than holding writers off while it waits.
   */
  truncateFrames?: number
  /** Hears why the thread failed (the connections have gone back to SQLite's own checkpoints by then). */
  onError?: (error: Error) => void
}

const DEFAULTS: Required<Omit<CheckpointOptions, 'onError'>> = { startAfterMs: 1_000, intervalMs: 1_000, truncateFrames: 16_000 }
const WORKER_BUSY_TIMEOUT_MS = 2_000

/** The thread's code, evaluated as a script: it needs no TypeScript loader under tsx, tap or the build. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const Database = require(workerData.driver)
const db = new Database(workerData.file, { fileMustExist: true, timeout: workerData.busyTimeoutMs })
db.pragma('synchronous = NORMAL')
let timer
let truncating = false
const truncate = () => {
  db.pragma('busy_timeout = 0')
  try {
    return db.pragma('wal_checkpoint(TRUNCATE)')[0].busy === 0
  } finally {
    db.pragma('busy_timeout = ' + workerData.busyTimeoutMs)
  }
}
const checkpoint = () => {
  try {
    const [{ log, checkpointed }] = db.pragma('wal_checkpoint(PASSIVE)')
    if (log - checkpointed > workerData.truncateFrames) truncating = true
    const truncated = truncating && truncate()
    if (truncated) truncating = false
    parentPort.postMessage({ log, checkpointed, truncated })
  } catch (error) {
    if (!String(error.code).startsWith('SQLITE_BUSY')) throw error
  }
  timer = setTimeout(checkpoint, workerData.intervalMs)
}
parentPort.on('message', () => {
  clearTimeout(timer)
  db.close()
  parentPort.close()
})
checkpoint()
`

/** WAL mode on a new connection; checkpoints left to the file's checkpointer when `background`. */
export function useWal (db: Database.Database, background: boolean): void {
  db.pragma('journal_mode = WAL')
  db.pragma('synchronous = NORMAL')
  db.pragma(`wal_autocheckpoint = ${background ? 0 : AUTOCHECKPOINT_PAGES}`)
  db.pragma(`journal_size_limit = ${JOURNAL_SIZE_LIMIT}`)
}

interface FileCheckpointer {
  connections: Set<Database.Database>
  worker: Worker | null
  timer: NodeJS.Timeout | null
  /** Why the thread failed, once it has. */
  error: Error | null
  /** Frames in the WAL and frames checkpointed, as its last PASSIVE checkpoint answered, and whether a TRUNCATE then emptied it (tests read it). */
  last: CheckpointReport | null
}

interface CheckpointReport { log: number, checkpointed: number, truncated: boolean }

const checkpointers = new Map<string, FileCheckpointer>()

/**
 * Counts `db` among the connections of `file` (its real path) and starts the
 * file's checkpointer thread with the first. The connection has background
 * checkpoints while the thread works; should it fail, every connection of the
 * file goes back to SQLite's own. The answer detaches: the last detach stops
 * the thread and settles once it has exited.
 */
export function attachCheckpointer (file: string, db: Database.Database, options: CheckpointOptions = {}): () => Promise<void> {
  let checkpointer = checkpointers.get(file)
  if (checkpointer === undefined) {
    const settings = { ...DEFAULTS, ...options }
    const created: FileCheckpointer = { connections: new Set(), worker: null, timer: null, error: null, last: null }
    created.timer = setTimeout(() => { created.timer = null; startWorker(file, created, settings, options.onError) }, settings.startAfterMs).unref()
    checkpointers.set(file, created)
    checkpointer = created
  }
  const attached = checkpointer
  attached.connections.add(db)
  const detach = async (): Promise<void> => {
    attached.connections.delete(db)
    if (attached.connections.size > 0) return
    checkpointers.delete(file)
    if (attached.timer !== null) clearTimeout(attached.timer)
    const worker = attached.worker
    if (worker === null) return
    attached.worker = null
    const exited = once(worker, 'exit')
    // Awaited, so held: an unreferenced thread alone would let the process end with the close unsettled.
    worker.ref()
    worker.postMessage('stop')
    await exited
  }
  try {
    useWal(db, attached.error === null)
  } catch (error) {
    // A file that is no database, or locked: counted, it would keep the thread of a connection that never opened.
    void detach()
    throw error
  }
  return detach
}

function startWorker (file: string, checkpointer: FileCheckpointer, settings: Required<Omit<CheckpointOptions, 'onError'>>, onError: ((error: Error) => void) | undefined): void {
  const driver = createRequire(import.meta.url).resolve('better-sqlite3')
  const worker = new Worker(WORKER_SOURCE, {
    eval: true,
    workerData: { file, driver, busyTimeoutMs: WORKER_BUSY_TIMEOUT_MS, intervalMs: settings.intervalMs, truncateFrames: settings.truncateFrames }
  })
  // Never what keeps a process alive: one that exits without closing its store leaves a WAL the next opener recovers.
  worker.unref()
  worker.on('message', (last: CheckpointReport) => { checkpointer.last = last })
  worker.on('error', (error) => {
    checkpointer.error = error
    checkpointer.worker = null
    for (const db of checkpointer.connections) if (db.open) db.pragma(`wal_autocheckpoint = ${AUTOCHECKPOINT_PAGES}`)
    onError?.(error)
  })
  checkpointer.worker = worker
}

/** What the checkpointer of `file` last did, and whether its thread runs: for tests. */
export function checkpointerState (file: string): { running: boolean, error: Error | null, last: CheckpointReport | null } | undefined {
  const checkpointer = checkpointers.get(file)
  if (checkpointer === undefined) return undefined
  return { running: checkpointer.worker !== null, error: checkpointer.error, last: checkpointer.last }
}
