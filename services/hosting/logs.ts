import type { Clock } from '../platform/clock.js'
import type { IdGenerator } from '../platform/ids.js'
import type { PagedWrites, Store, StoreCollection } from '../store/types.js'
import { isoString } from '../platform/iso-dates.js'
import { HOSTING_LIMITS, type LogLineT } from '../../schemas/hosting.js'
import type { LogSink, LogStream } from './runtime.js'

export type LogKind = 'build' | 'runtime'
const KINDS: LogKind[] = ['build', 'runtime']

type LogRecord = {
  _id: string
  appId: string
  deploymentId: string
  instanceId: string | null
  kind: LogKind
  seq: number
  at: Date
  stream: LogStream
  line: string
}

export interface LogQuery { deploymentId?: string, after?: number, limit?: number }
type Listener = (line: LogLineT & { deploymentId: string }) => void

/** What is taken in and kept (HOSTING_LOG_* in the configuration). */
export interface LogLimits {
  /** Lines one sink (an instance or a build) may log a second, with a second's worth as a burst. */
  linesPerSecond: number
  /** Lines one sink may have waiting for the Store. */
  bufferLines: number
  /** Lines kept per app and kind, the newest. */
  retentionLines: number
  /** Lines older than this are deleted by `prune`. */
  retentionMs: number
}

/** The job that applies the retention to every app's logs. */
export const LOGS_PRUNE_JOB = 'hosting.logs.prune'
export const LOGS_PRUNE_EVERY_MS = 60 * 60_000

/** Characters of log lines waiting for the Store on this node, all sinks together: the bound of the memory a flood can take. */
export const MAX_PENDING_CHARS = 16 * 1024 * 1024
/** Lines written to the Store in one insert, at most. */
const BATCH_LINES = 500
/** A sink trims its app's log back to the retention after this many lines. */
const TRIM_EVERY = 500
/** A marker for dropped lines is written at most this often, before the next line kept. */
const MARKER_EVERY_MS = 1000

interface Dropped { rate: number, buffer: number }

function droppedMarker (dropped: Dropped, linesPerSecond: number): string {
  const total = dropped.rate + dropped.buffer
  const why = [
    dropped.rate > 0 ? `more than ${linesPerSecond} lines a second` : null,
    dropped.buffer > 0 ? 'more than the log store took in time' : null
  ].filter((reason) => reason !== null).join(', and ')
  return `${total} line${total === 1 ? '' : 's'} dropped (${why})`
}

/**
 * Build and runtime logs, kept in the Store per app and kind. Each sink (one
 * build, one instance) takes in at most `linesPerSecond` lines a second and
 * holds at most `bufferLines` waiting for the Store, written in batches; a
 * line past either is dropped, and the count is written as a
 * `N lines dropped` line before the next line kept (and when a build ends).
 * Every line passes the app's mask before it is kept or shown. Followers on
 * this node get lines as they are kept. The newest `retentionLines` per app
 * and kind are kept, none older than `retentionMs`.
 */
export class AppLogs {
  private readonly lines: StoreCollection<LogRecord>
  /** Retention and an app's deletion touch any number of lines: a page per write. */
  private readonly sweep: PagedWrites
  private readonly listeners = new Map<string, Set<Listener>>()
  private lastSeq = 0
  private pendingChars = 0

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, onError: (error: unknown) => void, limits: LogLimits }) {
    this.lines = store.collection<LogRecord>('hosting_logs')
    this.sweep = store.extensions.sweep('hosting_logs')
  }

  async init (): Promise<void> {
    await this.lines.createIndex({ appId: 1, kind: 1, seq: 1 })
    await this.lines.createIndex({ deploymentId: 1, kind: 1, seq: 1 })
    await this.lines.createIndex({ at: 1 })
  }

  /**
   * Ever increasing on this node, and past any earlier run's (it starts from
   * the clock, which should be the Store's, so the lines of instances on
   * different nodes interleave in the order they were written).
   */
  private nextSeq (): number {
    this.lastSeq = Math.max(this.lastSeq + 1, this.deps.clock.nowMs() * 1000)
    return this.lastSeq
  }

  /** A sink for one deployment's build or one instance; writes keep their order, never throw into the driver and never wait. */
  sink (target: { appId: string, deploymentId: string, instanceId: string | null, kind: LogKind }, mask: (line: string) => string): LogSink & { flushed: () => Promise<void> } {
    const { linesPerSecond, bufferLines } = this.deps.limits
    let tokens = linesPerSecond
    let refilledAt = this.deps.clock.nowMs()
    let markedAt = -Infinity
    let dropped: Dropped = { rate: 0, buffer: 0 }
    let buffer: LogRecord[] = []
    let draining: Promise<void> | null = null
    let sinceTrim = 0

    const keep = (line: string, stream: LogStream): void => {
      const record: LogRecord = { _id: this.deps.newId(), ...target, seq: this.nextSeq(), at: this.deps.clock.now(), stream, line }
      for (const listener of this.listeners.get(`${target.appId}:${target.kind}`) ?? []) listener({ ...this.view(record), deploymentId: target.deploymentId })
      buffer.push(record)
      this.pendingChars += line.length
      // A microtask, so the lines of one burst of output go to the Store in one insert.
      draining ??= Promise.resolve().then(drain)
    }
    const mark = (): void => {
      if (dropped.rate + dropped.buffer === 0) return
      keep(droppedMarker(dropped, linesPerSecond), 'system')
      dropped = { rate: 0, buffer: 0 }
      markedAt = this.deps.clock.nowMs()
    }
    const drain = async (): Promise<void> => {
      while (buffer.length > 0) {
        const batch = buffer.length <= BATCH_LINES ? buffer : buffer.slice(0, BATCH_LINES)
        buffer = batch === buffer ? [] : buffer.slice(BATCH_LINES)
        try {
          await this.lines.insertMany(batch)
          sinceTrim += batch.length
        } catch (error) {
          this.deps.onError(error)
          dropped.buffer += batch.length
        } finally {
          for (const record of batch) this.pendingChars -= record.line.length
        }
        if (sinceTrim >= TRIM_EVERY) {
          sinceTrim = 0
          await this.trim(target.appId, target.kind).catch(this.deps.onError)
        }
      }
      draining = null
    }
    const write = (raw: string, stream: LogStream): void => {
      const now = this.deps.clock.nowMs()
      tokens = Math.min(linesPerSecond, tokens + (now - refilledAt) * linesPerSecond / 1000)
      refilledAt = now
      if (tokens < 1) { dropped.rate++; return }
      if (buffer.length >= bufferLines || this.pendingChars >= MAX_PENDING_CHARS) { dropped.buffer++; return }
      tokens--
      if (now - markedAt >= MARKER_EVERY_MS) mark()
      keep(mask(raw).slice(0, HOSTING_LIMITS.logLineChars), stream)
    }
    const flushed = async (): Promise<void> => {
      mark()
      // Lines kept while one drain ran start the next.
      for (let pending = draining; pending !== null; pending = draining) await pending
    }
    return { write, flushed }
  }

  /** Deletes all but the newest `retentionLines` of the app's log of one kind; answers how many went. */
  private async trim (appId: string, kind: LogKind): Promise<number> {
    const [boundary] = await this.lines.find({ appId, kind }, { sort: { seq: -1 }, skip: this.deps.limits.retentionLines, limit: 1, projection: { seq: 1 } }).toArray()
    if (boundary === undefined) return 0
    return await this.sweep.deleteMany({ appId, kind, seq: { $lte: boundary.seq } })
  }

  /** The retention, for every app: lines older than `retentionMs`, then all but each app's and kind's newest `retentionLines`. */
  async prune (): Promise<{ deleted: number }> {
    const cutoff = new Date(this.deps.clock.nowMs() - this.deps.limits.retentionMs)
    let deleted = await this.sweep.deleteMany({ at: { $lt: cutoff } })
    // One app at a time, found by walking the (appId, kind, seq) index past the last one.
    let next = await this.appAfter('')
    while (next !== null) {
      for (const kind of KINDS) deleted += await this.trim(next, kind)
      next = await this.appAfter(next)
    }
    return { deleted }
  }

  private async appAfter (appId: string): Promise<string | null> {
    const [next] = await this.lines.find({ appId: { $gt: appId } }, { sort: { appId: 1 }, limit: 1, projection: { appId: 1 } }).toArray()
    return next?.appId ?? null
  }

  /** Oldest first, after `after`; without `after`, the newest `limit` lines. */
  async read (appId: string, kind: LogKind, query: LogQuery): Promise<LogLineT[]> {
    const limit = query.limit ?? HOSTING_LIMITS.logPageMax
    const filter = { appId, kind, ...(query.deploymentId === undefined ? {} : { deploymentId: query.deploymentId }), ...(query.after === undefined ? {} : { seq: { $gt: query.after } }) }
    const records = query.after === undefined
      ? (await this.lines.find(filter, { sort: { seq: -1 }, limit }).toArray()).reverse()
      : await this.lines.find(filter, { sort: { seq: 1 }, limit }).toArray()
    return records.map((record) => this.view(record))
  }

  /** Calls `listener` with every line kept on this node from now on; the returned function stops it. */
  follow (appId: string, kind: LogKind, listener: Listener): () => void {
    const key = `${appId}:${kind}`
    const set = this.listeners.get(key) ?? new Set()
    set.add(listener)
    this.listeners.set(key, set)
    return () => {
      set.delete(listener)
      if (set.size === 0) this.listeners.delete(key)
    }
  }

  async deleteForApp (appId: string): Promise<void> {
    await this.sweep.deleteMany({ appId })
  }

  private view (record: LogRecord): LogLineT {
    return { seq: record.seq, at: isoString(record.at), instanceId: record.instanceId, stream: record.stream, line: record.line }
  }
}
