import { collectDefaultMetrics, Gauge, Histogram, Registry } from 'prom-client'

/** What the registry reads when scraped, from the families that own it. */
export interface MetricsSources {
  jobs: () => Promise<{ due: number, running: number, oldestDueSeconds: number }>
}

// Seconds: from a cached read (~0.1 ms) to a slow export or a long poll.
const LATENCY_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

/**
 * The server's Prometheus metrics, in a registry of its own (several apps in
 * one process, as in the tests, never mix). Labels take only bounded values:
 * a route's template (`/api/p/:projectId/:table/:id`), never a URL or an id.
 */
export class PlatformMetrics {
  readonly registry = new Registry()
  private readonly requests: Histogram<'method' | 'route' | 'status'>

  constructor (sources: MetricsSources) {
    collectDefaultMetrics({ register: this.registry, prefix: 'plinth_' })
    this.requests = new Histogram({
      name: 'plinth_http_request_duration_seconds',
      help: 'HTTP requests by method, route template and status, from the request\'s arrival to the last byte of the answer',
      labelNames: ['method', 'route', 'status'],
      buckets: LATENCY_BUCKETS,
      registers: [this.registry]
    })
    // One read of the queue serves the three gauges of a scrape.
    let read: { at: number, backlog: ReturnType<MetricsSources['jobs']> } | null = null
    const backlog = async (): Promise<Awaited<ReturnType<MetricsSources['jobs']>>> => {
      if (read === null || Date.now() - read.at > 1000) read = { at: Date.now(), backlog: sources.jobs() }
      return await read.backlog
    }
    const jobGauge = (name: string, help: string, read: (b: Awaited<ReturnType<MetricsSources['jobs']>>) => number): Gauge =>
      new Gauge({ name, help, registers: [this.registry], async collect () { this.set(read(await backlog())) } })
    jobGauge('plinth_jobs_due', 'Jobs due and waiting for a worker, across the deployment', (b) => b.due)
    jobGauge('plinth_jobs_running', 'Jobs a worker holds now, across the deployment', (b) => b.running)
    jobGauge('plinth_jobs_oldest_due_age_seconds', 'How long the oldest due job has waited for a worker', (b) => b.oldestDueSeconds)
  }

  /** One answered request; `route` is the route's template, or `unmatched` for a path no route has. */
  request (method: string, route: string, status: number, seconds: number): void {
    this.requests.observe({ method, route, status: String(status) }, seconds)
  }

  async text (): Promise<{ contentType: string, body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() }
  }
}
