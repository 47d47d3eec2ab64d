import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { buildApp } from '../app.js'
import { loadConfig } from '../services/config.js'
import { BENCH_ZONE, BENCH_RECORDS } from './dns-zone.js'

/** The real app with its built-in DNS server on a free port, serving the bench zone from its Store. */
const dataDir = mkdtempSync(join(tmpdir(), 'plinth-bench-dns-'))
const app = await buildApp(loadConfig({ ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'silent', DNS_PORT: '0', DNS_HOST: '127.0.0.1', GATEWAY_PORT: 'off' }))
process.once('SIGTERM', () => {
  void app.close().finally(() => {
    rmSync(dataDir, { recursive: true, force: true })
    process.exit(0)
  })
})
await app.ready()
const zone = await app.dns.zones.create('bench', { name: BENCH_ZONE })
await app.dns.records.change('bench', zone.id, { create: BENCH_RECORDS })
process.send?.({ dnsPort: app.dns.server.address()?.port })
