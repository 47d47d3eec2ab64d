import { startBenchApp } from './bench-app.js'
import { BENCH_ZONE, BENCH_RECORDS } from './dns-zone.js'

/**
 * The real app with its built-in DNS server on a free port, serving the bench zone from its Store. dnsperf on
 * loopback is exempt from response-rate limiting, as a deployment's own monitoring would be: the figure is
 * the server's, not the limit's.
 */
const { app } = await startBenchApp({ DNS_PORT: '0', DNS_HOST: '127.0.0.1', DNS_RRL_EXEMPT: '127.0.0.1' })
await app.ready()
const zone = await app.dns.zones.create('bench', { name: BENCH_ZONE })
await app.dns.records.change(zone, { create: BENCH_RECORDS })
process.send?.({ dnsPort: app.dns.server.address()?.port })
