import { fork, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { Agent, request } from 'node:http'
import autocannon from 'autocannon'
import { DURATION, SLICES, WARMUP_SECONDS } from './pairs.js'
import { ASK } from './create-tail-probe.js'

/**
 * Issue 36's create tail, taken apart: "POST create record, 50 connections"
 * against bench/serve.ts started once per set of node flags (the default
 * young generation beside larger semi-spaces), slices alternated across them,
 * with each slice's event-loop delay, GC pauses and CPU a create from inside
 * the server. Besides the closed loop (50 connections as fast as they are
 * answered), the same at fixed offered rates, open loop: one request every
 * 1/rate s over 50 kept-alive connections, each timed from when it was due
 * (not from when a connection was free to send it), so a stall counts against
 * every request it delayed rather than hiding them (coordinated omission).
 */
const VARIANTS = (process.env.BENCH_CREATE_TAIL_FLAGS ?? ';--max-semi-space-size=32').split(';').map((flags) => flags.split(' ').filter((flag) => flag !== ''))
const RATES = (process.env.BENCH_CREATE_TAIL_RATES ?? '500,1000,2000').split(',').map(Number)
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

interface Run { total: number, seconds: number, p50: number, p99: number, max: number, errors: number }

const BODY = JSON.stringify({ title: 'bench', status: 'draft', views: 1 })

async function closedLoop (server: Server, seconds: number): Promise<Run> {
  const result = await autocannon({
    url: `${server.info.address}/api/p/${server.info.projectId}/posts`,
    method: 'POST',
    connections: CONNECTIONS,
    duration: seconds,
    headers: { 'content-type': 'application/json', authorization: `Bearer ${server.info.projectToken}` },
    body: BODY
  })
  return { total: result.requests.total, seconds: result.duration, p50: result.latency.p50, p99: result.latency.p99, max: result.latency.max, errors: result.errors + result.non2xx }
}

/**
 * Request i is due at start + i/rate; a 1 ms timer sends whatever is due. A request that finds
 * the 50 connections busy waits in the agent's queue, and that wait is part of its latency.
 */
async function openLoop (server: Server, seconds: number, rate: number): Promise<Run> {
  const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS })
  const url = new URL(`${server.info.address}/api/p/${server.info.projectId}/posts`)
  const headers = { 'content-type': 'application/json', 'content-length': Buffer.byteLength(BODY), authorization: `Bearer ${server.info.projectToken}` }
  const total = Math.round(seconds * rate)
  const latencies: number[] = []
  let errors = 0
  let sent = 0
  const start = performance.now()
  const send = (due: number): Promise<void> => new Promise((resolve) => {
    const req = request(url, { method: 'POST', agent, headers }, (res) => {
      res.resume()
      res.on('end', () => { latencies.push(performance.now() - due); if (res.statusCode !== 201) errors++; resolve() })
    })
    req.on('error', () => { errors++; resolve() })
    req.end(BODY)
  })
  const inFlight: Array<Promise<void>> = []
  await new Promise<void>((resolve) => {
    const tick = (): void => {
      const dueNow = Math.min(total, Math.floor((performance.now() - start) * rate / 1000) + 1)
      for (; sent < dueNow; sent++) inFlight.push(send(start + sent * 1000 / rate))
      if (sent < total) setTimeout(tick, 1); else resolve()
    }
    tick()
  })
  await Promise.all(inFlight)
  const elapsed = (performance.now() - start) / 1000
  agent.destroy()
  latencies.sort((a, b) => a - b)
  const at = (q: number): number => Math.round(latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? 0)
  return { total, seconds: elapsed, p50: at(0.5), p99: at(0.99), max: at(1), errors }
}

const creates = async (server: Server, seconds: number, rate?: number): Promise<Run> =>
  rate === undefined ? await closedLoop(server, seconds) : await openLoop(server, seconds, rate)

const servers: Server[] = []
for (const flags of VARIANTS) servers.push(await start(flags))
const slice = Math.max(1, Math.round(DURATION / SLICES))
try {
  for (const rate of [undefined, ...RATES]) {
    console.log(rate === undefined ? `create tail: ${CONNECTIONS} connections, closed loop (the bench row's load)` : `create tail: ${CONNECTIONS} connections, open loop, one create every ${(1000 / rate).toFixed(1)} ms (${rate}/s offered), timed from when each was due`)
    for (const server of servers) { await creates(server, WARMUP_SECONDS, rate); await stats(server) }
    for (let i = 0; i < SLICES; i++) {
      for (const server of servers) {
        const result = await creates(server, slice, rate)
        const inside = await stats(server)
        const n = result.total
        console.log(`  ${server.flags.padEnd(28)} ${(n / result.seconds).toFixed(0).padStart(6)} req/s  p50 ${result.p50} ms  p99 ${result.p99} ms  max ${result.max} ms` +
          ` | event-loop delay p99 ${inside.delayP99.toFixed(0)} ms, max ${inside.delayMax.toFixed(0)} ms | GC ${inside.gcs} pauses, ${inside.gcMs.toFixed(0)} ms, longest ${inside.gcMax.toFixed(1)} ms` +
          ` | CPU a create ${(inside.mainCpuMs / n).toFixed(3)} ms main thread, ${(inside.processCpuMs / n).toFixed(3)} ms process${result.errors > 0 ? `  (${result.errors} errors)` : ''}`)
      }
    }
  }
} finally {
  for (const server of servers) server.child.kill()
}
// A handle of the load generator's outlived its last rate-limited run and kept this process (and `npm run bench`) waiting.
process.exit(0)
