import { fork, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import autocannon from 'autocannon'
import { DURATION, SLICES, WARMUP_SECONDS } from './pairs.js'
import { ASK } from './create-tail-probe.js'

/**
 * Issue 36's create tail, taken apart: "POST create record, 50 connections"
 * against bench/serve.ts started once per set of node flags (the default
 * young generation beside larger semi-spaces), slices alternated across them,
 * with each slice's event-loop delay, GC pauses and CPU a create from inside
 * the server. Besides the closed loop (50 connections as fast as they are
 * answered), the same at a fixed offered rate below saturation, where a
 * request's latency is its own and not the queue of the 49 before it.
 */
const VARIANTS = (process.env.BENCH_CREATE_TAIL_FLAGS ?? ';--max-semi-space-size=32').split(';').map((flags) => flags.split(' ').filter((flag) => flag !== ''))
const RATE = Number(process.env.BENCH_CREATE_TAIL_RATE ?? 1000)
const CONNECTIONS = 50

interface Server { flags: string, child: ChildProcess, info: Record<string, string> }

async function start (flags: string[]): Promise<Server> {
  const probe = new URL('./create-tail-probe.ts', import.meta.url).pathname
  const child = fork(new URL('./serve.ts', import.meta.url).pathname, [], { execArgv: [...flags, '--import', 'tsx', '--import', probe], stdio: 'inherit' })
  const [info] = await once(child, 'message') as [Record<string, string>]
  return { flags: flags.join(' ') === '' ? 'default flags' : flags.join(' '), child, info }
}

async function stats (server: Server): Promise<Record<string, number>> {
  server.child.send(ASK)
  for (;;) {
    const [message] = await once(server.child, 'message') as [Record<string, number>]
    if (message[ASK] !== undefined) return message
  }
}

async function creates (server: Server, seconds: number, rate?: number): Promise<autocannon.Result> {
  return await autocannon({
    url: `${server.info.address}/api/p/${server.info.projectId}/posts`,
    method: 'POST',
    connections: CONNECTIONS,
    duration: seconds,
    ...(rate === undefined ? {} : { overallRate: rate }),
    headers: { 'content-type': 'application/json', authorization: `Bearer ${server.info.projectToken}` },
    body: JSON.stringify({ title: 'bench', status: 'draft', views: 1 })
  })
}

const servers: Server[] = []
for (const flags of VARIANTS) servers.push(await start(flags))
const slice = Math.max(1, Math.round(DURATION / SLICES))
try {
  for (const rate of [undefined, RATE]) {
    console.log(rate === undefined ? `create tail: ${CONNECTIONS} connections, closed loop (the bench row's load)` : `create tail: ${CONNECTIONS} connections, offered ${rate} creates/s (below saturation)`)
    for (const server of servers) { await creates(server, WARMUP_SECONDS, rate); await stats(server) }
    for (let i = 0; i < SLICES; i++) {
      for (const server of servers) {
        const result = await creates(server, slice, rate)
        const inside = await stats(server)
        const n = result.requests.total
        console.log(`  ${server.flags.padEnd(28)} ${(n / result.duration).toFixed(0).padStart(6)} req/s  p50 ${result.latency.p50} ms  p99 ${result.latency.p99} ms  max ${result.latency.max} ms` +
          ` | event-loop delay p99 ${inside.delayP99.toFixed(0)} ms, max ${inside.delayMax.toFixed(0)} ms | GC ${inside.gcs} pauses, ${inside.gcMs.toFixed(0)} ms, longest ${inside.gcMax.toFixed(1)} ms` +
          ` | CPU a create ${(inside.mainCpuMs / n).toFixed(3)} ms main thread, ${(inside.processCpuMs / n).toFixed(3)} ms process${result.errors + result.non2xx > 0 ? `  (${result.errors + result.non2xx} errors)` : ''}`)
      }
    }
  }
} finally {
  for (const server of servers) server.child.kill()
}
// A handle of the load generator's outlived its last rate-limited run and kept this process (and `npm run bench`) waiting.
process.exit(0)
