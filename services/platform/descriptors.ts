import type { EventEmitter } from 'node:events'
import { closeSync, openSync, readFileSync } from 'node:fs'

/**
 * File descriptors: every connection, upstream socket, pipe and open file
 * takes one, and a process with none left accepts nothing. Node raises the
 * soft limit (RLIMIT_NOFILE) to the hard one as it starts, so the hard limit
 * is what an operator sets (systemd's LimitNOFILE=, `docker run --ulimit`,
 * `ulimit -Hn`); the server logs what it got, the gateway (which
 * unauthenticated clients can fill) keeps off the part of it left for the rest
 * of the server, and running short is never a reason to exit.
 */

export interface DescriptorLimit {
  soft: number
  hard: number
}

/** The process's RLIMIT_NOFILE, from /proc/self/limits (Node has no getrlimit); null where that cannot be read. */
export function readDescriptorLimit (): DescriptorLimit | null {
  let text: string
  try {
    text = readFileSync('/proc/self/limits', 'utf8')
  } catch {
    return null
  }
  const match = /^Max open files\s+(\d+)\s+(\d+)/m.exec(text)
  return match === null ? null : { soft: Number(match[1]), hard: Number(match[2]) }
}

/** Descriptors the gateway leaves to the rest of the server (the API's clients, the store, builds, instances' pipes, git): a quarter of the limit, from 64 to 4,096. */
export function descriptorHeadroom (limit: number): number {
  return Math.min(4096, Math.max(64, Math.floor(limit / 4)))
}

export function isDescriptorShortage (error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code
  return code === 'EMFILE' || code === 'ENFILE'
}

export interface PressureOptions {
  /** The soft limit. */
  limit: number
  /** How many descriptors below the limit count as near it. */
  headroom: number
  /** The first time new connections are refused for; doubled while the pressure lasts, up to `mostBackoffMs`. */
  firstBackoffMs?: number
  mostBackoffMs?: number
  /** Called as pressure begins (not again until it has eased): the moment to let idle connections go. */
  onPressed?: (details: { lowestFree: number | null, limit: number, backoffMs: number }) => void
}

const FIRST_BACKOFF_MS = 250
const MOST_BACKOFF_MS = 8000

/**
 * Whether the process is near its descriptor limit, asked by a listener as
 * each connection arrives. The kernel hands out the lowest free descriptor,
 * so a probe that opens /dev/null learns a number below which every one is
 * taken: at or past `limit - headroom` the process is near the limit (failing
 * to open one at all, it is there). Once near, the answer stays yes for a
 * back-off that doubles while the next probes still find the process near,
 * so a flood is refused without a probe per connection; the first probe that
 * finds room ends it.
 */
export class DescriptorPressure {
  private pressedUntil = 0
  private backoffMs: number
  private readonly firstBackoffMs: number
  private readonly mostBackoffMs: number
  private pressing = false

  constructor (private readonly options: PressureOptions, private readonly now: () => number = () => performance.now()) {
    this.firstBackoffMs = options.firstBackoffMs ?? FIRST_BACKOFF_MS
    this.mostBackoffMs = options.mostBackoffMs ?? MOST_BACKOFF_MS
    this.backoffMs = this.firstBackoffMs
  }

  pressed (): boolean {
    const now = this.now()
    if (now < this.pressedUntil) return true
    const lowestFree = lowestFreeDescriptor()
    if (lowestFree !== null && lowestFree < this.options.limit - this.options.headroom) {
      this.pressing = false
      this.backoffMs = this.firstBackoffMs
      return false
    }
    this.pressedUntil = now + this.backoffMs
    if (!this.pressing) this.options.onPressed?.({ lowestFree, limit: this.options.limit, backoffMs: this.backoffMs })
    this.pressing = true
    this.backoffMs = Math.min(this.backoffMs * 2, this.mostBackoffMs)
    return true
  }
}

/** The descriptor the next open would get; null when none is left. */
function lowestFreeDescriptor (): number | null {
  let fd: number
  try {
    fd = openSync('/dev/null', 'r')
  } catch (error) {
    if (isDescriptorShortage(error)) return null
    throw error
  }
  closeSync(fd)
  return fd
}

/**
 * A listener's 'error' once it listens (a failed accept, on runtimes that
 * report one: libuv ≥ 1.46 closes what it cannot accept and says nothing) is
 * logged, never thrown: unheard, it would end the whole server.
 */
export function keepListening (server: EventEmitter, name: string, log: (details: object, message: string) => void): void {
  server.on('error', (error: Error) => { log({ err: error, listener: name }, 'listener error; still listening') })
}

export interface ShortageLog {
  error: (details: object, message: string) => void
  fatal: (details: object, message: string) => void
}

/**
 * The server's last line: an uncaught exception or unhandled rejection that
 * is a descriptor shortage (EMFILE, ENFILE) from any socket, scan or spawn is
 * logged and the server goes on, since an exit would give up its ports (and an
 * app that waited for that could take them); anything else still ends the
 * process, as Node would.
 */
export function surviveDescriptorShortage (log: ShortageLog): void {
  process.on('uncaughtException', (error, origin) => {
    if (isDescriptorShortage(error)) {
      log.error({ err: error, origin }, 'out of file descriptors: an operation failed; the server goes on')
      return
    }
    log.fatal({ err: error, origin }, 'uncaught exception; exiting')
    process.exit(1)
  })
}
