import { fork, spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import autocannon from 'autocannon'
import { haproxyInstalled, startHaproxy } from './gateway-haproxy.js'
import { InstanceNetworks, probeNetwork, type InstanceNetwork } from '../services/hosting/network/namespaces.js'

/**
 * The hosting gateway's bar: requests/s through the gateway to a hello-world
 * app against the same app asked directly, in the same run. The app, the
 * gateway and the load generator (this process) each have their own
 * process; the targets alternate in slices after a warm-up of each, so
 * drift in a shared machine's speed touches all alike. Each row also gives
 * the CPU time the proxy and the app spent per request, read from
 * /proc/<pid>/stat, which a shared machine's load moves far less than req/s.
 */
const DURATION = Number(process.env.BENCH_DURATION ?? 8)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)
const SLICES = 3
const BAR = 50
const TICK_US = 1_000_000 / 100

async function child (script: string, message?: { port: number, host?: string }, network?: InstanceNetwork): Promise<{ process: ChildProcess, port: number, stop: () => Promise<void> }> {
  const path = new URL(script, import.meta.url).pathname
  // In a namespace: nsenter execs node in it, keeping the IPC channel it inherited.
  const started = network === undefined
    ? fork(path, [], { execArgv: ['--import', 'tsx'], stdio: 'inherit' })
    : spawn('nsenter', [`--net=${network.path}`, '--', process.execPath, '--import', 'tsx', path], { stdio: ['inherit', 'inherit', 'inherit', 'ipc'], env: { ...process.env, HOST: '0.0.0.0', PORT: String(network.port) } })
  if (message !== undefined) started.send(message)
  const [{ port }] = await once(started, 'message') as [{ port: number }]
  const stop = async (): Promise<void> => {
    started.kill('SIGTERM')
    await once(started, 'exit')
  }
  return { process: started, port, stop }
}

/** User and system CPU time of a process so far, in µs (Linux only; zero elsewhere). */
function cpuUs (pid: number | undefined): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) * TICK_US
  } catch {
    return 0
  }
}

interface Target { name: string, port: number, pid: number | undefined, results: autocannon.Result[], cpu: number, appCpu: number, loaderCpu: number, app?: number | undefined }

async function load (port: number, seconds: number): Promise<autocannon.Result> {
  return await autocannon({ url: `http://127.0.0.1:${port}/`, connections: CONNECTIONS, duration: seconds, headers: { host: 'hello.bench' } })
}

const hello = await child('./gateway-hello.ts')
const gateway = await child('./gateway-serve.ts', { port: hello.port })
const bare = await child('./gateway-bare-proxy.ts', { port: hello.port })
const haproxy = haproxyInstalled() ? await startHaproxy(hello.port) : null
// The same app in a network namespace of its own, as the process driver runs instances, behind a second gateway that
// reaches it over its veth link: what the namespace costs the proxied path, against the loopback gateway row.
const networkHost = probeNetwork()
const networks = 'missing' in networkHost ? null : new InstanceNetworks(networkHost, `bench-${process.pid}`)
const network = await networks?.open('hello', { inbound: true }) ?? null
const namespaced = network === null ? null : await child('./gateway-hello.ts', undefined, network)
const namespacedGateway = network === null || namespaced === null ? null : await child('./gateway-serve.ts', { port: namespaced.port, host: network.address as string })
const target = (name: string, started: { port: number, process: ChildProcess }): Target => ({ name, port: started.port, pid: started.process.pid, results: [], cpu: 0, appCpu: 0, loaderCpu: 0 })
const direct: Target = { ...target('the app directly', hello), pid: undefined }
const targets = [direct, target('gateway', gateway), target('bare node:http proxy', bare), ...(haproxy === null ? [] : [target('haproxy', haproxy)]),
  ...(namespacedGateway === null ? [] : [{ ...target('gateway → app in its namespace', namespacedGateway), app: namespaced?.process.pid }])]
try {
  for (const { port } of targets) await load(port, 1)
  const slice = Math.max(1, Math.round(DURATION / SLICES))
  for (let i = 0; i < SLICES; i++) {
    for (const t of targets) {
      const cpu = cpuUs(t.pid)
      const appCpu = cpuUs(t.app ?? hello.process.pid)
      const loaderCpu = cpuUs(process.pid)
      t.results.push(await load(t.port, slice))
      t.cpu += cpuUs(t.pid) - cpu
      t.appCpu += cpuUs(t.app ?? hello.process.pid) - appCpu
      t.loaderCpu += cpuUs(process.pid) - loaderCpu
    }
  }
  const total = (t: Target) => t.results.reduce((sum, r) => sum + r.requests.total, 0)
  const rate = (t: Target) => total(t) / t.results.reduce((sum, r) => sum + r.duration, 0)
  const p99 = (t: Target) => Math.max(...t.results.map((r) => r.latency.p99))
  const errors = (t: Target) => t.results.reduce((sum, r) => sum + r.errors + r.non2xx, 0)
  const cpu = (t: Target) => `${t.pid === undefined ? '' : `proxy ${(t.cpu / total(t)).toFixed(1)} µs, `}app ${(t.appCpu / total(t)).toFixed(1)} µs, autocannon ${(t.loaderCpu / total(t)).toFixed(1)} µs CPU a request`
  const [, through, ...references] = targets
  const share = 100 * rate(through) / rate(direct)
  console.log(`${'gateway → node:http hello-world'.padEnd(34)} ${rate(through).toFixed(0).padStart(8)} req/s  p99 ${String(p99(through)).padStart(4)} ms  ` +
    `${share.toFixed(0)}% of the app asked directly (${rate(direct).toFixed(0)} req/s, p99 ${p99(direct)} ms)  [bar: ≥ ${BAR}%: ${share >= BAR ? 'met' : 'MISSED'}]` +
    `${errors(through) + errors(direct) > 0 ? `  (${errors(through) + errors(direct)} errors)` : ''}`)
  console.log(`${''.padEnd(34)} ${cpu(through)}; asked directly, ${cpu(direct)}`)
  for (const reference of references) {
    const versus = reference.app === undefined
      ? `the gateway is ${(100 * rate(through) / rate(reference)).toFixed(0)}% of it`
      : `${(100 * rate(reference) / rate(through)).toFixed(0)}% of the gateway to the app on loopback`
    console.log(`${reference.app === undefined ? `  reference: ${reference.name}` : reference.name}`.padEnd(34) + ` ${rate(reference).toFixed(0).padStart(8)} req/s  p99 ${String(p99(reference)).padStart(4)} ms  ` +
      `${(100 * rate(reference) / rate(direct)).toFixed(0)}% of the app asked directly; ${versus}; ${cpu(reference)}` +
      `${errors(reference) > 0 ? `  (${errors(reference)} errors)` : ''}`)
  }
  if (namespacedGateway === null) console.log(`${'  (no namespaced row:'.padEnd(34)} ${'missing' in networkHost ? networkHost.missing : ''})`)
} finally {
  await Promise.all([gateway, bare, hello, ...(haproxy === null ? [] : [haproxy]), ...(namespaced === null ? [] : [namespaced]), ...(namespacedGateway === null ? [] : [namespacedGateway])].map(async (started) => await started.stop()))
  await networks?.close('hello')
  await networks?.release()
}
