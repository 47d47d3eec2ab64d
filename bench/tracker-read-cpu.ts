import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Session } from 'node:inspector/promises'
import { benchOwner, startBenchApp } from './bench-app.js'
import { seedTrackerProject } from './tracker-seed.js'
import { LIST_FILTER } from './tracker-filter.js'

/**
 * CPU time per tracker read, in process (`DATA_DIR=/tmp/reads npx tsx bench/tracker-read-cpu.ts`):
 * the list of 50 by three conditions and the get by key through `app.inject`
 * (auth, scope, the service, serialization; no socket), eight in flight, on
 * tracker projects of BENCH_TRACKER_SIZES items. The projects are seeded
 * once into DATA_DIR (the seconds each took are printed and kept in
 * bench-tracker.json there), so later runs, of this tree or of an old one
 * unpacked beside a node_modules link, read the same file. process.cpuUsage
 * around each round of BENCH_READ_REQUESTS; medians of BENCH_READ_ROUNDS.
 */
const SIZES = (process.env.BENCH_TRACKER_SIZES ?? '10000,100000').split(',').map(Number)
const ROUNDS = Number(process.env.BENCH_READ_ROUNDS ?? 3)
const REQUESTS = Number(process.env.BENCH_READ_REQUESTS ?? 1000)
const ROWS = new RegExp(process.env.BENCH_ONLY ?? '')
const FILTER = LIST_FILTER
const dataDir = process.env.DATA_DIR
if (dataDir === undefined) throw new Error('DATA_DIR names the directory the seeded projects are kept in')

interface Seed { userId: string, projectId: string, sizes: Record<string, { lpId: string, key: string, seconds: number }> }
const seedFile = join(dataDir, 'bench-tracker.json')
const { app } = await startBenchApp({ AUTH_RATE_LIMIT_MAX: '1000000' }, { dataDir })
let seed: Seed
if (existsSync(seedFile)) seed = JSON.parse(readFileSync(seedFile, 'utf8')) as Seed
else {
  const { userId, orgId } = await benchOwner(app)
  seed = { userId, projectId: (await app.projects.create(orgId, userId, { name: 'Tracker bench' })).id, sizes: {} }
}
for (const size of SIZES.filter((one) => seed.sizes[one] === undefined)) {
  seed.sizes[size] = await seedTrackerProject(app, seed.userId, seed.projectId, size)
  console.log(`seeded ${size} items in ${seed.sizes[size].seconds.toFixed(1)} s`)
  writeFileSync(seedFile, JSON.stringify(seed))
}
const { accessToken } = await app.identity.sessions.start(seed.userId)
const base = `/api/projects/${seed.projectId}/tracker`
const rows = SIZES.flatMap((size) => [
  { name: `get by key (${size / 1000}k)`, url: `${base}/browse/${seed.sizes[size].key}` },
  { name: `list 50, 3 conditions (${size / 1000}k)`, url: `${base}/projects/${seed.sizes[size].lpId}/work-items?limit=50&filter=${FILTER}` }
]).filter((row) => ROWS.test(row.name))

async function round (url: string, count: number): Promise<number> {
  let left = count
  const before = process.cpuUsage()
  await Promise.all(Array.from({ length: 8 }, async () => {
    while (left-- > 0) {
      const answer = await app.inject({ url, headers: { authorization: `Bearer ${accessToken}` } })
      if (answer.statusCode !== 200) throw new Error(`${answer.statusCode} ${answer.body}`)
    }
  }))
  const used = process.cpuUsage(before)
  return (used.user + used.system) / count
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
for (const row of rows) await round(row.url, 200)
// BENCH_CPU_PROF=<file>: a V8 CPU profile of the measured rounds only.
const profiler = process.env.BENCH_CPU_PROF === undefined ? null : new Session()
if (profiler !== null) {
  profiler.connect()
  await profiler.post('Profiler.enable')
  await profiler.post('Profiler.start')
}
const seen = new Map(rows.map((row) => [row.name, [] as number[]]))
for (let i = 0; i < ROUNDS; i++) for (const row of rows) seen.get(row.name)?.push(await round(row.url, REQUESTS))
if (profiler !== null) writeFileSync(process.env.BENCH_CPU_PROF as string, JSON.stringify((await profiler.post('Profiler.stop')).profile))
for (const [name, values] of seen) console.log(`${name.padEnd(32)} ${median(values).toFixed(0)} µs CPU/request (rounds ${values.map((value) => value.toFixed(0)).join(', ')})`)
await app.close()
process.exit(0)
