import { fork, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import autocannon from 'autocannon'

/**
 * The hosting gateway's bar: requests/s through the gateway to a hello-world
 * app against the same app asked directly, in the same run. The app, the
 * gateway and the load generator (this process) each have their own
 * process; the two targets alternate in slices after a warm-up of each, so
 * drift in a shared machine's speed touches both alike.
 */
const DURATION = Number(process.env.BENCH_DURATION ?? 8)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)
const SLICES = 3
const BAR = 50

async function child (script: string, message?: { port: number }): Promise<{ process: ChildProcess, port: number }> {
  const started = fork(new URL(script, import.meta.url).pathname, [], { execArgv: ['--import', 'tsx'], stdio: 'inherit' })
  if (message !== undefined) started.send(message)
  const [{ port }] = await once(started, 'message') as [{ port: number }]
  return { process: started, port }
}

async function load (port: number, seconds: number): Promise<autocannon.Result> {
  return await autocannon({ url: `http://127.0.0.1:${port}/`, connections: CONNECTIONS, duration: seconds, headers: { host: 'hello.bench' } })
}

const hello = await child('./gateway-hello.ts')
const gateway = await child('./gateway-serve.ts', { port: hello.port })
const bare = await child('./gateway-bare-proxy.ts', { port: hello.port })
try {
  await load(hello.port, 1)
  await load(gateway.port, 1)
  await load(bare.port, 1)
  const slice = Math.max(1, Math.round(DURATION / SLICES))
  const direct: autocannon.Result[] = []
  const through: autocannon.Result[] = []
  const reference: autocannon.Result[] = []
  for (let i = 0; i < SLICES; i++) {
    direct.push(await load(hello.port, slice))
    through.push(await load(gateway.port, slice))
    reference.push(await load(bare.port, slice))
  }
  const rate = (results: autocannon.Result[]) => results.reduce((sum, r) => sum + r.requests.total, 0) / results.reduce((sum, r) => sum + r.duration, 0)
  const p99 = (results: autocannon.Result[]) => Math.max(...results.map((r) => r.latency.p99))
  const errors = (results: autocannon.Result[]) => results.reduce((sum, r) => sum + r.errors + r.non2xx, 0)
  const share = 100 * rate(through) / rate(direct)
  console.log(`${'gateway → node:http hello-world'.padEnd(34)} ${rate(through).toFixed(0).padStart(8)} req/s  p99 ${String(p99(through)).padStart(4)} ms  ` +
    `${share.toFixed(0)}% of the app asked directly (${rate(direct).toFixed(0)} req/s, p99 ${p99(direct)} ms)  [bar: ≥ ${BAR}%: ${share >= BAR ? 'met' : 'MISSED'}]` +
    `${errors(through) + errors(direct) > 0 ? `  (${errors(through) + errors(direct)} errors)` : ''}`)
  console.log(`${'  reference: bare node:http proxy'.padEnd(34)} ${rate(reference).toFixed(0).padStart(8)} req/s  p99 ${String(p99(reference)).padStart(4)} ms  ` +
    `${(100 * rate(reference) / rate(direct)).toFixed(0)}% of the app asked directly; the gateway is ${(100 * rate(through) / rate(reference)).toFixed(0)}% of it`)
} finally {
  for (const started of [gateway, bare, hello]) started.process.kill('SIGTERM')
  await Promise.all([gateway, bare, hello].map(async (started) => await once(started.process, 'exit')))
}
