import { readFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import autocannon from 'autocannon'
import { CONNECTIONS, start } from './pairs.js'

/**
 * The record feed's cost as server CPU per write rather than req/s, for a
 * shared machine where throughput is noise (`npx tsx bench/record-webhooks-cpu.ts`).
 * The server of bench/record-webhooks-serve.ts takes BENCH_WRITES creates
 * (default 4,000) into each project in turn, `ROUNDS` times (default 2); the
 * server's user+system CPU is read from /proc around each batch and, for the
 * armed project, until its deliveries have all been sent, so a figure is all
 * a write costs the server: the request, the feed, and its deliveries;
 * `drainSeconds` says how long the deliveries were still going after the writes.
 */
const WRITES = Number(process.env.BENCH_WRITES ?? 4000)
const ROUNDS = Number(process.env.ROUNDS ?? 2)
const TICK_MS = 10

function cpuMs (pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
  return (Number(fields[11]) + Number(fields[12])) * TICK_MS
}

const hello = await start('./hello.ts')
const server = await start('./record-webhooks-serve.ts', { RECEIVER: hello.address })
const pid = server.child.pid as number
const body = JSON.stringify({ title: 'bench', body: 'a note of a few words', views: 1 })

/** Waits until no delivery is queued; seconds taken. */
async function drained (): Promise<number> {
  const started = performance.now()
  for (;;) {
    const { queued } = await (await fetch(`${server.address}/bench/backlog`)).json() as { queued: number }
    if (queued === 0) return (performance.now() - started) / 1000
    await sleep(50)
  }
}

async function batch (project: string, amount: number): Promise<number> {
  await drained()
  const before = cpuMs(pid)
  const result = await autocannon({ url: `${server.address}/api/p/${server.info[project]}/notes`, method: 'POST', connections: CONNECTIONS, amount, headers: { 'content-type': 'application/json' }, body })
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`${project}: ${result.non2xx} non-2xx, ${result.errors} errors`)
  lag[project].push(await drained())
  return (cpuMs(pid) - before) / amount
}

/** Per project, how long its deliveries took to drain after its last write (deliveries yield to requests while writes go on). */
const lag: Record<string, number[]> = { quiet: [], armed: [], paused: [], fed: [] }
const PROJECTS = ['quiet', 'armed', 'paused', 'fed']

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
try {
  for (const project of PROJECTS) await batch(project, Math.min(1000, WRITES))
  const figures: Record<string, number[]> = { quiet: [], armed: [], paused: [], fed: [] }
  for (let round = 0; round < ROUNDS; round++) {
    for (const project of PROJECTS) figures[project].push(await batch(project, WRITES))
  }
  const [quiet, armed, paused, fed] = PROJECTS.map((project) => median(figures[project]))
  console.log(JSON.stringify({ writes: WRITES, rounds: ROUNDS, msPerWrite: figures, drainSeconds: lag.armed.slice(1).map((seconds) => Number(seconds.toFixed(2))) }))
  console.log(`server CPU per write: no webhook ${quiet.toFixed(3)} ms, one webhook ${armed.toFixed(3)} ms (+${(100 * (armed / quiet - 1)).toFixed(0)}%), webhook paused ${paused.toFixed(3)} ms (+${(100 * (paused / quiet - 1)).toFixed(0)}%), armed, webhook deleted (no entry kept) ${fed.toFixed(3)} ms (+${(100 * (fed / quiet - 1)).toFixed(0)}%)`)
} finally {
  server.child.kill('SIGTERM')
  hello.child.kill()
}
