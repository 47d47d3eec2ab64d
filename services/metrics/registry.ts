import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client'

/** What the registry reads when scraped, from the families that own it. */
export interface MetricsSources {
  jobs: () => Promise<{ due: number, running: number, oldestDueSeconds: number }>
}

// Question types a label may name; any other is `OTHER`, so a client sending odd types cannot grow the series.
const DNS_TYPES = new Set(['A', 'AAAA', 'CNAME', 'MX', 'TXT', 'NS', 'SOA', 'SRV', 'CAA', 'PTR', 'ANY', 'AXFR', 'IXFR', 'HTTPS', 'SVCB', 'DS', 'DNSKEY'])
// RFC 1035 §4.1.1 and RFC 6895: the rcodes the server answers with.
const DNS_RCODES = ['NOERROR', 'FORMERR', 'SERVFAIL', 'NXDOMAIN', 'NOTIMP', 'REFUSED']

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
  private readonly storeOperations: Histogram<'engine' | 'operation'>
  private readonly dnsQueries: Counter<'qtype' | 'rcode'>
  private readonly gitRuns: Histogram<'service' | 'transport' | 'outcome'>
  private readonly instanceEvents: Counter<'driver' | 'event'>
  private readonly instancesRunning: Gauge<'driver'>
  private readonly gatewayRequests: Histogram<'app' | 'status_class'>
  private runningInstances: (() => Promise<Record<string, number>>) | null = null

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

    this.storeOperations = new Histogram({
      name: 'plinth_store_operation_duration_seconds',
      help: 'Store operations by engine and operation (the port\'s method), from the call to its answer',
      labelNames: ['engine', 'operation'],
      buckets: [0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1, 5],
      registers: [this.registry]
    })
    this.dnsQueries = new Counter({
      name: 'plinth_dns_queries_total',
      help: 'Queries the built-in DNS server answered, by question type (OTHER past a fixed list) and response code',
      labelNames: ['qtype', 'rcode'],
      registers: [this.registry]
    })
    this.gitRuns = new Histogram({
      name: 'plinth_git_operation_duration_seconds',
      help: 'Git runs serving a client (an HTTP request, or a whole SSH session) by service, transport and outcome, from start to exit',
      labelNames: ['service', 'transport', 'outcome'],
      buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300],
      registers: [this.registry]
    })
    this.instanceEvents = new Counter({
      name: 'plinth_hosting_instance_events_total',
      help: 'What hosting supervision saw of instances, by driver: crashed, restarted (a restart became healthy), gave-up',
      labelNames: ['driver', 'event'],
      registers: [this.registry]
    })
    this.gatewayRequests = new Histogram({
      name: 'plinth_gateway_request_duration_seconds',
      help: 'Requests the hosting gateway answered, by app (its id: one series set per app, removed with the app) and status class, from arrival to the end of the answer (to the 101 for a tunnel)',
      labelNames: ['app', 'status_class'],
      buckets: LATENCY_BUCKETS,
      registers: [this.registry]
    })
    const source = (): typeof this.runningInstances => this.runningInstances
    this.instancesRunning = new Gauge({
      name: 'plinth_hosting_instances_running',
      help: 'Hosted app instances running across the deployment, by driver',
      labelNames: ['driver'],
      registers: [this.registry],
      async collect () {
        const read = source()
        if (read === null) return
        this.reset()
        for (const [driver, count] of Object.entries(await read())) this.set({ driver }, count)
      }
    })
  }

  /** `operation` is one of the Store port's method names (services/store/timed.ts): a bounded set. */
  storeOperation (engine: string, operation: string, seconds: number): void {
    this.storeOperations.observe({ engine, operation }, seconds)
  }

  /** One query the DNS server answered. */
  dnsQuery (qtype: string, rcode: number): void {
    this.dnsQueries.inc({ qtype: DNS_TYPES.has(qtype) ? qtype : 'OTHER', rcode: DNS_RCODES[rcode] ?? 'OTHER' })
  }

  /** One git run serving a client ended; `ok` when git exited 0. */
  gitRun (service: 'upload-pack' | 'receive-pack', transport: 'http' | 'ssh', seconds: number, ok: boolean): void {
    this.gitRuns.observe({ service, transport, outcome: ok ? 'ok' : 'failed' }, seconds)
  }

  hostingInstanceEvent (driver: 'process' | 'container', event: 'crashed' | 'restarted' | 'gave-up'): void {
    this.instanceEvents.inc({ driver, event })
  }

  /** One answer the gateway gave an app's client; `status_class` is `2xx` … `5xx`, so an app has at most five series. */
  gatewayRequest (appId: string, status: number, seconds: number): void {
    this.gatewayRequests.observe({ app: appId, status_class: `${Math.min(5, Math.max(1, Math.floor(status / 100)))}xx` }, seconds)
  }

  /** An app was deleted: its series go with it, so the label set stays as bounded as the apps that exist. */
  gatewayAppRemoved (appId: string): void {
    for (const statusClass of ['1xx', '2xx', '3xx', '4xx', '5xx']) this.gatewayRequests.remove({ app: appId, status_class: statusClass })
  }

  /** Where the running-instances gauge reads its counts when scraped (hosting, registered after this registry). */
  watchRunningInstances (read: () => Promise<Record<string, number>>): void {
    this.runningInstances = read
  }

  /** One answered request; `route` is the route's template, or `unmatched` for a path no route has. */
  request (method: string, route: string, status: number, seconds: number): void {
    this.requests.observe({ method, route, status: String(status) }, seconds)
  }

  async text (): Promise<{ contentType: string, body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() }
  }
}
