import type { Clock } from '../platform/clock.js'
import type { PagedWrites, Store, StoreCollection } from '../store/types.js'
import { isoString } from '../platform/iso-dates.js'
import type { MetricsT, UsageRowT } from '../../schemas/hosting.js'
import type { ServedRequest, ServedRequestSink } from './routing.js'
import type { InstanceStats } from './runtime.js'

type UsageRecord = {
  _id: string
  appId: string
  projectId: string
  hour: Date
  instanceSeconds: number
  buildSeconds: number
  requests: number
  egressBytes: number
}

type Counter = { requests: number, status4xx: number, status5xx: number, latencies: number[], next: number }
type Pending = { projectId: string, instanceSeconds: number, buildSeconds: number, requests: number, egressBytes: number }

/** Latencies kept per app and instance for the percentiles: the most recent ones. */
const LATENCY_WINDOW = 2048
const HOUR_MS = 3_600_000

/** The job that writes what was counted in memory to the usage rows. */
export const USAGE_FLUSH_JOB = 'hosting.usage-flush'

const newCounter = (): Counter => ({ requests: 0, status4xx: 0, status5xx: 0, latencies: [], next: 0 })

function count (counter: Counter, served: ServedRequest): void {
  counter.requests++
  if (served.status >= 500) counter.status5xx++
  else if (served.status >= 400) counter.status4xx++
  if (counter.latencies.length < LATENCY_WINDOW) counter.latencies.push(served.durationMs)
  else counter.latencies[counter.next] = served.durationMs
  counter.next = (counter.next + 1) % LATENCY_WINDOW
}

function percentile (sorted: number[], p: number): number {
  if (sorted.length === 0) return 0
  return sorted[Math.min(sorted.length - 1, Math.ceil(p * sorted.length) - 1)]
}

function trafficView (counter: Counter) {
  const sorted = [...counter.latencies].sort((a, b) => a - b)
  return { requests: counter.requests, status4xx: counter.status4xx, status5xx: counter.status5xx, latencyMs: { p50: percentile(sorted, 0.5), p95: percentile(sorted, 0.95), p99: percentile(sorted, 0.99) } }
}

/**
 * What the gateway served and what ran, counted in memory on this node:
 * requests, errors and latencies per app and instance since this node
 * started (metrics), and per-hour usage added to the Store's rows by the
 * recurring flush job.
 */
export class Traffic implements ServedRequestSink {
  private readonly usage: StoreCollection<UsageRecord>
  /** An app's hourly rows, however many: deleted a page per write. */
  private readonly usageSweep: PagedWrites
  private readonly apps = new Map<string, Counter>()
  private readonly instances = new Map<string, Counter>()
  private readonly pending = new Map<string, Pending>()
  private readonly since: Date
  private lastFlush: number
  private readonly observers: Array<{ served: (served: ServedRequest) => void, removed: (appId: string) => void }> = []

  constructor (store: Store, private readonly deps: { clock: Clock, projectOf: (appId: string) => string | null }) {
    this.usage = store.collection<UsageRecord>('hosting_usage')
    this.usageSweep = store.extensions.sweep('hosting_usage')
    this.since = deps.clock.now()
    this.lastFlush = deps.clock.nowMs()
  }

  async init (): Promise<void> {
    await this.usage.createIndex({ appId: 1, hour: 1 })
    await this.usage.createIndex({ projectId: 1 })
  }

  /** Also told of each request and each app's removal (the Prometheus registry, when metrics are on). */
  observe (observer: { served: (served: ServedRequest) => void, removed: (appId: string) => void }): void {
    this.observers.push(observer)
  }

  /** The gateway's report of one request. */
  record (served: ServedRequest): void {
    for (const observer of this.observers) observer.served(served)
    let app = this.apps.get(served.appId)
    if (app === undefined) { app = newCounter(); this.apps.set(served.appId, app) }
    count(app, served)
    if (served.instanceId !== null) {
      let instance = this.instances.get(served.instanceId)
      if (instance === undefined) { instance = newCounter(); this.instances.set(served.instanceId, instance) }
      count(instance, served)
    }
    const pending = this.pendingFor(served.appId, this.deps.projectOf(served.appId) ?? '')
    pending.requests++
    pending.egressBytes += served.bytesOut
  }

  addBuildSeconds (app: { _id: string, projectId: string }, seconds: number): void {
    this.pendingFor(app._id, app.projectId).buildSeconds += seconds
  }

  private pendingFor (appId: string, projectId: string): Pending {
    let pending = this.pending.get(appId)
    if (pending === undefined) { pending = { projectId, instanceSeconds: 0, buildSeconds: 0, requests: 0, egressBytes: 0 }; this.pending.set(appId, pending) }
    if (pending.projectId === '' && projectId !== '') pending.projectId = projectId
    return pending
  }

  async metrics (appId: string, instances: Array<{ id: string, stats: InstanceStats | null }>): Promise<MetricsT> {
    return {
      app: trafficView(this.apps.get(appId) ?? newCounter()),
      instances: instances.map(({ id, stats }) => ({ instanceId: id, ...trafficView(this.instances.get(id) ?? newCounter()), cpuSeconds: stats?.cpuSeconds ?? null, memoryBytes: stats?.memoryBytes ?? null })),
      since: isoString(this.since)
    }
  }

  /**
   * Adds what was counted since the last flush to the hour's rows, with the
   * instance-seconds of the instances running now (each counted from the
   * later of its start and the last flush).
   */
  async flush (running: Array<{ appId: string, projectId: string, startedAt: Date | null }>): Promise<{ apps: number }> {
    const now = this.deps.clock.nowMs()
    for (const instance of running) {
      const from = Math.max(this.lastFlush, instance.startedAt?.getTime() ?? now)
      this.pendingFor(instance.appId, instance.projectId).instanceSeconds += Math.max(0, now - from) / 1000
    }
    this.lastFlush = now
    const hour = new Date(Math.floor(now / HOUR_MS) * HOUR_MS)
    const batch = [...this.pending.entries()]
    this.pending.clear()
    for (const [appId, pending] of batch) {
      await this.usage.updateOne(
        { _id: `${appId}:${hour.getTime()}` },
        { $setOnInsert: { appId, projectId: pending.projectId, hour }, $inc: { instanceSeconds: pending.instanceSeconds, buildSeconds: pending.buildSeconds, requests: pending.requests, egressBytes: pending.egressBytes } },
        { upsert: true }
      )
    }
    return { apps: batch.length }
  }

  async usageRows (appId: string, hours: number): Promise<UsageRowT[]> {
    const from = new Date(Math.floor(this.deps.clock.nowMs() / HOUR_MS) * HOUR_MS - (hours - 1) * HOUR_MS)
    const rows = await this.usage.find({ appId, hour: { $gte: from } }, { sort: { hour: 1 } }).toArray()
    return rows.map((row) => ({ hour: isoString(row.hour), instanceSeconds: Math.round(row.instanceSeconds * 1000) / 1000, buildSeconds: Math.round(row.buildSeconds * 1000) / 1000, requests: row.requests, egressBytes: row.egressBytes }))
  }

  async deleteForApp (appId: string): Promise<void> {
    for (const observer of this.observers) observer.removed(appId)
    this.apps.delete(appId)
    this.pending.delete(appId)
    await this.usageSweep.deleteMany({ appId })
  }
}
