import { execFile, fork } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { PowerDnsProvider } from '../services/dns/providers/powerdns.js'
import { applyChanges } from '../services/dns/changes.js'
import { startPowerDns } from '../test/services/dns/providers/pdns-server.js'
import { BENCH_QUESTIONS, BENCH_RECORDS, BENCH_ZONE } from './dns-zone.js'
import { AddressGuard } from '../services/outbound/internal-addresses.js'

/**
 * Queries per second of the built-in server and of PowerDNS (its default
 * caches on, as deployed) answering the same zone, measured with dnsperf in
 * alternating slices so drift on a shared machine touches both alike.
 */
const run = promisify(execFile)
const SECONDS = Math.max(2, Math.round(Number(process.env.BENCH_DURATION ?? 8) / 2))
const SLICES = 2
const BAR = 50

const dir = mkdtempSync(join(tmpdir(), 'plinth-bench-pdns-'))
const questions = join(dir, 'questions.txt')
writeFileSync(questions, `${BENCH_QUESTIONS.join('\n')}\n`)
const pdns = await startPowerDns(dir, { caches: true })
const provider = new PowerDnsProvider({ guard: new AddressGuard({ allowedHosts: ['127.0.0.1'] }), endpoint: pdns.apiUrl, serverId: 'localhost', apiKey: pdns.apiKey })
const zone = { id: 'bench', name: BENCH_ZONE, externalId: await provider.createZone({ id: 'bench', name: BENCH_ZONE, nameservers: ['ns1.plinth.localhost', 'ns2.plinth.localhost'] }) }
const { records } = await provider.readZone(zone)
await provider.replaceRRsets(zone, applyChanges('bench', BENCH_ZONE, records, { create: BENCH_RECORDS }, BENCH_RECORDS.length).rrsets)

const builtin = fork(new URL('./dns-serve.ts', import.meta.url).pathname, [], { execArgv: ['--import', 'tsx'], stdio: 'inherit' })
const [{ dnsPort }] = await once(builtin, 'message') as [{ dnsPort: number }]
// A reference, not a bar: what one Node thread does with dgram alone, doing no DNS work at all.
const echo = fork(new URL('./dns-echo.ts', import.meta.url).pathname, [], { execArgv: ['--import', 'tsx'], stdio: 'inherit' })
const [{ dnsPort: echoPort }] = await once(echo, 'message') as [{ dnsPort: number }]

async function qps (port: number): Promise<{ qps: number, lost: number }> {
  const { stdout } = await run('dnsperf', ['-s', '127.0.0.1', '-p', String(port), '-d', questions, '-l', String(SECONDS), '-c', '4', '-q', '200'], { timeout: (SECONDS + 30) * 1000 })
  const rate = /Queries per second:\s+([\d.]+)/.exec(stdout)
  const lost = /Queries lost:\s+(\d+)/.exec(stdout)
  if (rate === null) throw new Error(`dnsperf said: ${stdout}`)
  return { qps: Number(rate[1]), lost: Number(lost?.[1] ?? 0) }
}

try {
  await qps(dnsPort)
  await qps(pdns.dnsPort)
  await qps(echoPort)
  const ours: number[] = []
  const theirs: number[] = []
  const echoes: number[] = []
  let lost = 0
  for (let i = 0; i < SLICES; i++) {
    const a = await qps(dnsPort)
    const b = await qps(pdns.dnsPort)
    const c = await qps(echoPort)
    ours.push(a.qps)
    theirs.push(b.qps)
    echoes.push(c.qps)
    lost += a.lost + b.lost
  }
  const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length
  const share = 100 * mean(ours) / mean(theirs)
  console.log(`${'DNS built-in server (dnsperf, UDP)'.padEnd(34)} ${mean(ours).toFixed(0).padStart(8)} q/s  ${share.toFixed(0)}% of PowerDNS ${mean(theirs).toFixed(0)} q/s, same zone, same run  [bar: ≥ ${BAR}%: ${share >= BAR ? 'met' : 'MISSED'}]${lost > 0 ? `  (${lost} queries lost)` : ''}`)
  console.log(`${'  reference: Node dgram echo'.padEnd(34)} ${mean(echoes).toFixed(0).padStart(8)} q/s  (one thread, no DNS work: the built-in server is ${(100 * mean(ours) / mean(echoes)).toFixed(0)}% of it, PowerDNS ${(100 * mean(theirs) / mean(echoes)).toFixed(0)}%)`)
} finally {
  builtin.kill('SIGTERM')
  echo.kill('SIGTERM')
  await pdns.stop()
  rmSync(dir, { recursive: true, force: true })
}
