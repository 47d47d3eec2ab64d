import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startBenchApp } from './bench-app.js'
import { seedSearch, type SearchSeed } from './tracker-search-seed.js'

/**
 * CPU time per tracker search, in process (`npx tsx bench/tracker-search-cpu.ts`):
 * the service called BENCH_SEARCH_CALLS times per query after a warm-up,
 * process.cpuUsage around the calls. On a shared machine CPU time moves far
 * less with the load than latency does, so two builds can be compared by it.
 * DATA_DIR keeps the seeded data (bench/tracker-search-seed.ts) for the next
 * run: a copy of it lets two builds search the same file.
 */
const CALLS = Number(process.env.BENCH_SEARCH_CALLS ?? 30)
const WARM_UP = 3
const dataDir = process.env.DATA_DIR
const { app } = await startBenchApp({}, { dataDir })
const seedFile = dataDir === undefined ? null : join(dataDir, 'search-seed.json')
let seed: SearchSeed
if (seedFile !== null && existsSync(seedFile)) seed = JSON.parse(readFileSync(seedFile, 'utf8')) as SearchSeed
else {
  seed = await seedSearch(app)
  if (seedFile !== null) writeFileSync(seedFile, JSON.stringify(seed))
}

const queries: Array<[string, string]> = [['2 words', seed.pair], ['common word', seed.common], ['key', seed.key]]
for (const [name, q] of queries) {
  const call = async (): Promise<unknown> => await app.tracker.search.search(seed.actor, seed.projectId, { q, limit: 20 })
  for (let i = 0; i < WARM_UP; i++) await call()
  const times: number[] = []
  const before = process.cpuUsage()
  for (let i = 0; i < CALLS; i++) {
    const started = performance.now()
    await call()
    times.push(performance.now() - started)
  }
  const used = process.cpuUsage(before)
  times.sort((a, b) => a - b)
  const cpu = (used.user + used.system) / 1000 / CALLS
  console.log(`${name.padEnd(12)} q=${JSON.stringify(q).padEnd(16)} cpu ${cpu.toFixed(2)} ms/search  wall p50 ${times[Math.floor(CALLS / 2)].toFixed(1)} ms, max ${times[CALLS - 1].toFixed(1)} ms`)
}
await app.close()
process.exit(0)
