import { readFileSync, writeFileSync } from 'node:fs'
import { Session } from 'node:inspector/promises'
import { benchOwner, benchPosts, startBenchApp } from './bench-app.js'
import { trackerActor } from '../services/tracker/access.js'

/**
 * CPU time per tracker create, in process (`npx tsx bench/tracker-create-cpu.ts`):
 * BENCH_CREATE_CONCURRENCY (default 8) creates in flight at once, as eight
 * connections keep a server busy, first as the service call the route makes
 * (`workItems.create`), then as the whole route through `app.inject` (auth,
 * the audit hook, serialization; no socket), then, as the floor, a plain
 * record create under an owner rule (`record`; BENCH_CREATE_ONLY=route,record
 * picks kinds). process.cpuUsage around each
 * round, and the write syscalls the process made (/proc/self/io: WAL frames
 * and checkpoints), per create. Rounds alternate the two; medians printed.
 */
const CONCURRENCY = Number(process.env.BENCH_CREATE_CONCURRENCY ?? 8)
const PER_ROUND = Number(process.env.BENCH_CREATE_PER_ROUND ?? 400)
const ROUNDS = Number(process.env.BENCH_CREATE_ROUNDS ?? 5)

const { app } = await startBenchApp({ AUTH_RATE_LIMIT_MAX: '1000000' })
const { userId, orgId, accessToken } = await benchOwner(app)
const project = await app.projects.create(orgId, userId, { name: 'Create bench' })
const actor = trackerActor(userId, ['tracker.read', 'tracker.write', 'tracker.admin'])
const lp = await app.tracker.projects.create(actor, project.id, { name: 'Created by the bench', identifier: 'TNEW' })
const scope = await app.tracker.projects.scope(actor, project.id, lp.id)
const body = { title: 'bench', priority: 'high' as const }
const url = `/api/projects/${project.id}/tracker/projects/${lp.id}/work-items`

// The floor: a plain record create under an owner rule through the same Fastify, auth and store (`npm run bench`'s row).
const { endUser } = await benchPosts(app, project.id)
const recordUrl = `/api/p/${project.id}/posts`
const recordBody = { title: 'bench', status: 'draft', views: 1 }

const service = async (): Promise<void> => { await app.tracker.workItems.create(scope, body) }
const route = async (): Promise<void> => {
  const answer = await app.inject({ method: 'POST', url, headers: { authorization: `Bearer ${accessToken}` }, payload: body })
  if (answer.statusCode !== 201) throw new Error(`${answer.statusCode} ${answer.body}`)
}

const record = async (): Promise<void> => {
  const answer = await app.inject({ method: 'POST', url: recordUrl, headers: { authorization: `Bearer ${endUser.accessToken}` }, payload: recordBody })
  if (answer.statusCode !== 201) throw new Error(`${answer.statusCode} ${answer.body}`)
}

const writeCalls = (): number => Number(/syscw: (\d+)/.exec(readFileSync('/proc/self/io', 'utf8'))?.[1] ?? 0)

async function round (create: () => Promise<void>, count: number): Promise<{ cpu: number, writes: number, p50: number, p99: number }> {
  const latencies: number[] = []
  let left = count
  const before = process.cpuUsage()
  const writes = writeCalls()
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (left-- > 0) {
      const started = performance.now()
      await create()
      latencies.push(performance.now() - started)
    }
  }))
  const used = process.cpuUsage(before)
  latencies.sort((a, b) => a - b)
  return { cpu: (used.user + used.system) / count, writes: (writeCalls() - writes) / count, p50: latencies[Math.floor(count / 2)], p99: latencies[Math.floor(count * 0.99)] }
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const all = { service, route, record }
const only = process.env.BENCH_CREATE_ONLY
const kinds = only === undefined ? all : Object.fromEntries(Object.entries(all).filter(([name]) => only.split(',').includes(name)))
const seen: Record<string, Array<Awaited<ReturnType<typeof round>>>> = { service: [], route: [], record: [] }
for (const create of Object.values(kinds)) await round(create, 100)
// BENCH_CPU_PROF=<file>: a V8 CPU profile of the measured rounds only (not the start or the warm-up).
const profiler = process.env.BENCH_CPU_PROF === undefined ? null : new Session()
if (profiler !== null) {
  profiler.connect()
  await profiler.post('Profiler.enable')
  await profiler.post('Profiler.start')
}
for (let i = 0; i < ROUNDS; i++) {
  for (const [name, create] of Object.entries(kinds)) seen[name].push(await round(create, PER_ROUND))
}
if (profiler !== null) writeFileSync(process.env.BENCH_CPU_PROF as string, JSON.stringify((await profiler.post('Profiler.stop')).profile))
for (const [name, rounds] of Object.entries(seen).filter(([, rounds]) => rounds.length > 0)) {
  const pick = (key: 'cpu' | 'writes' | 'p50' | 'p99'): string => median(rounds.map((one) => one[key])).toFixed(key === 'cpu' ? 0 : 1)
  console.log(`${name.padEnd(8)} cpu ${pick('cpu')} µs/create (rounds ${rounds.map((one) => one.cpu.toFixed(0)).join(', ')}), write syscalls ${pick('writes')}/create, in-process latency at ${CONCURRENCY} in flight p50 ${pick('p50')} ms, p99 ${pick('p99')} ms`)
}
await app.close()
process.exit(0)
