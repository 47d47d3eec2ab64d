import type { Clock } from '../clock.js'
import type { IdGenerator } from '../ids.js'
import type { Store, StoreCollection } from '../store/types.js'
import { isoString } from '../iso-dates.js'
import { HOSTING_LIMITS, type LogLineT } from '../../schemas/hosting.js'
import type { LogSink, LogStream } from './runtime.js'

export type LogKind = 'build' | 'runtime'

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

// How often a sink trims its log back to the lines kept.
const TRIM_EVERY = 500

/**
 * Build and runtime logs, kept in the Store per app and kind, the newest
 * `logLinesKept` lines of each deployment. Every line passes the app's mask
 * before it is kept or shown. Followers on this node get lines as they are
 * written.
 */
export class AppLogs {
  private readonly lines: StoreCollection<LogRecord>
  private readonly listeners = new Map<string, Set<Listener>>()
  private lastSeq = 0

  constructor (store: Store, private readonly deps: { clock: Clock, newId: IdGenerator, onError: (error: unknown) => void }) {
    this.lines = store.collection<LogRecord>('hosting_logs')
  }

  async init (): Promise<void> {
    await this.lines.createIndex({ appId: 1, kind: 1, seq: 1 })
    await this.lines.createIndex({ deploymentId: 1, kind: 1, seq: 1 })
  }

  /** Ever increasing on this node, and past any earlier run's (it starts from the clock). */
  private nextSeq (): number {
    this.lastSeq = Math.max(this.lastSeq + 1, this.deps.clock.nowMs() * 1000)
    return this.lastSeq
  }

  /** A sink for one deployment's build or one instance; writes keep their order and never throw into the driver. */
  sink (target: { appId: string, deploymentId: string, instanceId: string | null, kind: LogKind }, mask: (line: string) => string): LogSink & { flushed: () => Promise<void> } {
    let chain = Promise.resolve()
    let written = 0
    const write = (raw: string, stream: LogStream): void => {
      const line = mask(raw).slice(0, HOSTING_LIMITS.logLineChars)
      const record: LogRecord = { _id: this.deps.newId(), ...target, seq: this.nextSeq(), at: this.deps.clock.now(), stream, line }
      for (const listener of this.listeners.get(`${target.appId}:${target.kind}`) ?? []) listener({ ...this.view(record), deploymentId: target.deploymentId })
      written++
      const trim = written % TRIM_EVERY === 0
      chain = chain.then(async () => {
        await this.lines.insertOne(record)
        if (trim) await this.trim(target.deploymentId, target.kind)
      }).catch(this.deps.onError)
    }
    return { write, flushed: async () => { await chain } }
  }

  private async trim (deploymentId: string, kind: LogKind): Promise<void> {
    const [boundary] = await this.lines.find({ deploymentId, kind }, { sort: { seq: -1 }, skip: HOSTING_LIMITS.logLinesKept, limit: 1 }).toArray()
    if (boundary !== undefined) await this.lines.deleteMany({ deploymentId, kind, seq: { $lte: boundary.seq } })
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

  /** Calls `listener` with every line written on this node from now on; the returned function stops it. */
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
    await this.lines.deleteMany({ appId })
  }

  private view (record: LogRecord): LogLineT {
    return { seq: record.seq, at: isoString(record.at), instanceId: record.instanceId, stream: record.stream, line: record.line }
  }
}
