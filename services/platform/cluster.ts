import cluster, { type Worker } from 'node:cluster'
import type { Config } from '../config.js'

/**
 * WORKERS > 1: this process is the primary of a `node:cluster`. It serves no
 * request; it forks the API processes, which share the listening port through
 * it, restarts one that dies and drains them all on SIGTERM.
 *
 * The first worker is the lead: it alone runs what must be one in the whole
 * deployment on this machine (the DNS server, git over SSH, the hosting gateway
 * and supervisor, the metrics listener). It starts alone, and the others only
 * once it listens, so a fresh DATA_DIR is initialised (store schema, master key)
 * by one process and a start-up failure (a bad variable, a port taken) shows as
 * the one line the worker printed and this process's exit with its code.
 *
 * PORT=0 is bound once, by the lead's listen, and shared: node:cluster keys a
 * shared handle by address, port and the how-many-th listen on them in the
 * worker, so every worker's first listen(0) on HOST gets the lead's handle
 * (and its port) for as long as one worker holds it. That is why the lead's
 * single listeners bind outside the cluster (`exclusive`): one of them on
 * port 0 and the same address would otherwise take that first place.
 * Probing a free port here and passing it on left a window in which another
 * process could take it before the lead bound it.
 */

/** Set in a worker's environment by the primary: "1" in the lead. */
export const LEAD_VARIABLE = 'PLINTH_WORKER_LEAD'

/** A worker that dies is forked again after RESTART_BASE_MS · 2^(n-1) (at most RESTART_MAX_MS), n its slot's deaths in a row. */
const RESTART_BASE_MS = 200
const RESTART_MAX_MS = 30_000
/** A worker that served this long before dying starts its slot's count again. */
const STABLE_AFTER_MS = 60_000

/** What a worker sends the primary once its API listens, with the port it listens on. */
export const READY_MESSAGE = 'plinth:ready'
interface Ready { type: typeof READY_MESSAGE, port: number }
const isReady = (message: unknown): message is Ready => (message as Ready | null)?.type === READY_MESSAGE

type Log = (level: 'info' | 'warn' | 'error', details: Record<string, unknown>, message: string) => void

/** This process runs the single listeners: it is not a cluster worker, or it is the lead. */
export function isLead (env: NodeJS.ProcessEnv = process.env): boolean {
  return cluster.isPrimary || env[LEAD_VARIABLE] === '1'
}

/** In a worker: tells the primary that the API listens, and on which port. */
export function reportReady (port: number): void {
  if (cluster.isWorker) process.send?.({ type: READY_MESSAGE, port } satisfies Ready)
}

interface Slot { index: number, worker: Worker | null, ready: boolean, startedAt: number, deaths: number, timer: NodeJS.Timeout | null }

export function runPrimary (count: number, drainTimeoutMs: number, log: Log = jsonLog): void {
  const slots: Slot[] = Array.from({ length: count }, (_, index) => ({ index, worker: null, ready: false, startedAt: 0, deaths: 0, timer: null }))
  let starting = true
  let draining = false
  let startFailed = false
  let exitCode = 0
  // The port the API was bound to; `port` what workers are forked to listen on (undefined: PORT as given).
  let bound: number | undefined
  let port: number | undefined

  const fork = (slot: Slot): void => {
    slot.timer = null
    slot.ready = false
    slot.startedAt = Date.now()
    const worker = cluster.fork({ [LEAD_VARIABLE]: slot.index === 0 ? '1' : '0', ...(port !== undefined ? { PORT: String(port) } : {}) })
    slot.worker = worker
    worker.on('message', (message: unknown) => {
      if (!isReady(message)) return
      slot.ready = true
      bound = message.port
      // A SIGTERM during the start: the workers already forked drain; none is started after it.
      if (draining) return
      if (!starting) { log('info', { worker: slot.index, pid: worker.process.pid, port: message.port }, 'worker replaced'); return }
      const next = slots.find((other) => other.worker === null)
      if (next !== undefined) { fork(next); return }
      starting = false
      log('info', { workers: count, port: message.port }, 'all workers listening')
    })
    worker.on('exit', (code, signal) => {
      slot.worker = null
      if (draining) {
        // A worker still starting has no drain installed yet: ended by the SIGTERM passed on, it had nothing to finish.
        const stoppedWhileStarting = !slot.ready && signal === 'SIGTERM'
        if (code !== 0 && !stoppedWhileStarting && !startFailed) exitCode = 1
        finishIfDone()
        return
      }
      if (starting) {
        // Not a crash to retry: the worker printed why it could not start; stop the others and exit as it did.
        draining = true
        startFailed = true
        for (const other of slots) other.worker?.process.kill('SIGTERM')
        exitCode = code ?? 1
        finishIfDone()
        return
      }
      // With PORT=0 the shared handle closes with the last worker that listened, and a worker started from then on, or
      // one still starting (forked to listen(0)), would bind another port than clients know. Those still starting are
      // stopped; every worker forked from then on names the port (one handle keyed by it, shared while any worker lives).
      if (port === undefined && bound !== undefined && slots.every((other) => other.worker === null || !other.ready)) {
        port = bound
        for (const other of slots) other.worker?.process.kill('SIGKILL')
      }
      if (Date.now() - slot.startedAt >= STABLE_AFTER_MS) slot.deaths = 0
      slot.deaths++
      const delayMs = Math.min(RESTART_BASE_MS * 2 ** (slot.deaths - 1), RESTART_MAX_MS)
      log('warn', { worker: slot.index, pid: worker.process.pid, code, signal, restartInMs: delayMs }, 'worker died; restarting it')
      slot.timer = setTimeout(() => { fork(slot) }, delayMs)
    })
  }

  const finishIfDone = (): void => {
    if (slots.some((slot) => slot.worker !== null)) return
    process.exit(exitCode)
  }

  const drain = (signal: string): void => {
    if (draining) return
    draining = true
    log('info', { signal, workers: slots.filter((slot) => slot.worker !== null).length }, 'draining every worker')
    for (const slot of slots) {
      if (slot.timer !== null) clearTimeout(slot.timer)
      slot.worker?.process.kill('SIGTERM')
    }
    // Each worker bounds its own drain; this only guards against one that hangs past it.
    const force = setTimeout(() => {
      log('error', {}, 'workers did not finish draining; exiting')
      for (const slot of slots) slot.worker?.process.kill('SIGKILL')
      process.exit(1)
    }, drainTimeoutMs + 5_000)
    force.unref()
    finishIfDone()
  }
  process.on('SIGTERM', () => { drain('SIGTERM') })
  process.on('SIGINT', () => { drain('SIGINT') })

  fork(slots[0])
}

/** The primary's lines in the shape of the workers' (pino's JSON), so one log reader takes both. */
function jsonLog (level: 'info' | 'warn' | 'error', details: Record<string, unknown>, message: string): void {
  const levels = { info: 30, warn: 40, error: 50 }
  process.stdout.write(JSON.stringify({ level: levels[level], time: Date.now(), pid: process.pid, role: 'primary', ...details, msg: message }) + '\n')
}

/**
 * A cluster worker other than the lead serves the API only: what must be one
 * per deployment (DNS, SSH, the hosting gateway and supervisor, the metrics
 * listener) runs in the lead.
 */
export function followerOrNot (config: Config): Config {
  if (isLead()) return config
  return {
    ...config,
    lead: false,
    dns: { ...config.dns, port: null },
    git: { ...config.git, sshPort: null },
    metrics: { ...config.metrics, listen: null },
    hosting: { ...config.hosting, gateway: { ...config.hosting.gateway, port: null, tlsPort: null } }
  }
}
