import { fork, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import autocannon from 'autocannon'

/**
 * The measuring machinery every scenario group shares: servers in processes
 * of their own (so the load generator does not share their event loop),
 * autocannon, and each figure's ratio to a bare Fastify hello-world measured
 * in the same run.
 */
export const DURATION = Number(process.env.BENCH_DURATION ?? 8)
export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 32)
// A regular expression over scenario names, to re-measure a few while working on them.
export const ONLY = new RegExp(process.env.BENCH_ONLY ?? '')
export const WARMUP_SECONDS = 1
export const SLICES = 3

/** User and system CPU time of a process so far, in ms, from /proc/<pid>/stat (Linux; 10 ms ticks). */
export function cpuMs (pid: number | undefined): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
  return (Number(fields[11]) + Number(fields[12])) * 10
}

export interface Started { child: ChildProcess, address: string, info: Record<string, string> }

// BENCH_CPU_PROF=<dir>: each server writes a V8 CPU profile there when it exits, to see where a row's time goes.
const PROFILE = process.env.BENCH_CPU_PROF === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]

/** A bench server script forked with tsx; it reports `{ address, … }` once it listens. */
export async function start (script: string, env: Record<string, string> = {}): Promise<Started> {
  const child = fork(new URL(script, import.meta.url).pathname, [], { execArgv: ['--import', 'tsx', ...PROFILE], stdio: 'inherit', env: { ...process.env, ...env } })
  const [info] = await once(child, 'message') as [Record<string, string>]
  return { child, address: info.address, info }
}

export interface Scenario {
  name: string
  path: string
  method?: 'GET' | 'POST'
  body?: string
  headers?: Record<string, string>
  duration?: number
  connections?: number
  /** The issue's bar: at least this share of the hello-world, and when given a p99 under this many ms. */
  bar?: { percent: number, p99?: number }
}
export interface Measured { name: string, rps: number, p50: number, p99: number, errors: number }

export const helloWorld: Scenario = { name: 'fastify hello-world (ceiling)', path: '/' }

export async function load (base: string, scenario: Scenario, duration: number): Promise<autocannon.Result> {
  return await autocannon({
    url: base + scenario.path,
    method: scenario.method ?? 'GET',
    connections: scenario.connections ?? CONNECTIONS,
    duration,
    headers: { ...(scenario.body === undefined ? {} : { 'content-type': 'application/json' }), ...scenario.headers },
    ...(scenario.body === undefined ? {} : { body: scenario.body })
  })
}

export function summary (name: string, results: autocannon.Result[]): Measured {
  const seconds = results.reduce((sum, result) => sum + result.duration, 0)
  const requests = results.reduce((sum, result) => sum + result.requests.total, 0)
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
  return {
    name,
    rps: requests / seconds,
    p50: median(results.map((result) => result.latency.p50)),
    p99: Math.max(...results.map((result) => result.latency.p99)),
    errors: results.reduce((sum, result) => sum + result.errors + result.non2xx, 0)
  }
}

/**
 * The scenario and the hello-world ceiling, each measured warm (the first
 * second pays for JIT compilation and cold caches), then in alternating
 * slices, so that drift in this shared machine's speed touches both alike.
 */
export async function measurePair (ceiling: Started, server: Started, scenario: Scenario): Promise<{ measured: Measured, ceiling: Measured, postCeiling: Measured | null, serverBusy: number }> {
  // A POST scenario is also compared with a hello-world that parses the same JSON body.
  const helloPost: Scenario | null = scenario.method === 'POST' ? { name: 'fastify hello-world POST', path: '/', method: 'POST', body: scenario.body } : null
  await load(ceiling.address, helloWorld, WARMUP_SECONDS)
  if (helloPost !== null) await load(ceiling.address, helloPost, WARMUP_SECONDS)
  await load(server.address, scenario, WARMUP_SECONDS)
  const slice = Math.max(1, Math.round((scenario.duration ?? DURATION) / SLICES))
  const hello: autocannon.Result[] = []
  const posts: autocannon.Result[] = []
  const own: autocannon.Result[] = []
  // The measured server's own CPU while the hello-world is asked: work a previous row left (a checkpoint, a job)
  // takes the cores from the ceiling and so moves the share, as a neighbour does.
  let serverMs = 0
  for (let i = 0; i < SLICES; i++) {
    const before = cpuMs(server.child.pid)
    hello.push(await load(ceiling.address, helloWorld, slice))
    serverMs += cpuMs(server.child.pid) - before
    if (helloPost !== null) posts.push(await load(ceiling.address, helloPost, slice))
    own.push(await load(server.address, scenario, slice))
  }
  const helloSeconds = hello.reduce((sum, result) => sum + result.duration, 0)
  return { measured: summary(scenario.name, own), ceiling: summary(helloWorld.name, hello), postCeiling: helloPost === null ? null : summary(helloPost.name, posts), serverBusy: serverMs / helloSeconds / 10 }
}

function barText (bar: Scenario['bar'], share: number, p99: number): string {
  if (bar === undefined) return ''
  const met = share >= bar.percent && (bar.p99 === undefined || p99 < bar.p99)
  return `  [bar: ≥ ${bar.percent}%${bar.p99 === undefined ? '' : `, p99 < ${bar.p99} ms`}: ${met ? 'met' : 'MISSED'}]`
}

/** One printed row: req/s, latencies, the share of the hello-world (and of a hello-world POST), the bar. */
export function line (m: Measured, ceiling: number, postCeiling: number | null, bar: Scenario['bar'], serverBusy = 0): string {
  const post = postCeiling === null ? '' : `; ${(100 * m.rps / postCeiling).toFixed(0)}% of a hello-world POST of the same body (${postCeiling.toFixed(0)} req/s)`
  const share = 100 * m.rps / ceiling
  // Whole percents, but a tenth where a share is small enough for whole percents to read as nothing.
  return `${m.name.padEnd(34)} ${m.rps.toFixed(0).padStart(8)} req/s  p50 ${String(m.p50).padStart(4)} ms  p99 ${String(m.p99).padStart(4)} ms  ` +
    `${share.toFixed(share < 10 ? 1 : 0).padStart(3)}% of hello-world (${ceiling.toFixed(0)} req/s)${post}${barText(bar, share, m.p99)}${m.errors > 0 ? `  (${m.errors} errors)` : ''}` +
    (serverBusy >= 5 ? `  (the server itself used ${serverBusy.toFixed(0)}% of a core while the hello-world was asked)` : '')
}

/** Runs a scenario list against one server and the hello-world ceiling, one printed row each. */
export async function runScenarios (ceiling: Started, server: Started, scenarios: Scenario[]): Promise<void> {
  for (const scenario of scenarios.filter((s) => ONLY.test(s.name))) {
    const { measured, ceiling: hello, postCeiling, serverBusy } = await measurePair(ceiling, server, scenario)
    console.log(line(measured, hello.rps, postCeiling?.rps ?? null, scenario.bar, serverBusy))
  }
}
