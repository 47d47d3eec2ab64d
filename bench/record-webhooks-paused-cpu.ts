import { startBenchApp } from './bench-app.js'
import { notesProjects } from './notes-projects.js'

/**
 * What keeping a paused record webhook's events costs a write, in process
 * (`npx tsx bench/record-webhooks-paused-cpu.ts`): BENCH_WRITES creates
 * (default 2,000), CONCURRENT at a time (default 10, so a drain publishes
 * several writes' events as under the bench's connections), into a project
 * with no webhook and one with a paused webhook, alternated ROUNDS times;
 * CPU per write by process.cpuUsage, the feed's drain awaited in the slice.
 */
const WRITES = Number(process.env.BENCH_WRITES ?? 2000)
const ROUNDS = Number(process.env.ROUNDS ?? 3)
const CONCURRENT = Number(process.env.CONCURRENT ?? 10)

const { app } = await startBenchApp({ WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' })
const { ids: projects } = await notesProjects(app, ['quiet', 'paused'], (name) => name === 'paused' ? { url: 'http://127.0.0.1:9/', active: false } : null)
const payload = { title: 'bench', body: 'a note of a few words', views: 1 }

async function slice (name: string, amount: number): Promise<number> {
  const before = process.cpuUsage()
  for (let done = 0; done < amount; done += CONCURRENT) {
    await Promise.all(Array.from({ length: CONCURRENT }, async () => {
      const res = await app.inject({ method: 'POST', url: `/api/p/${projects[name]}/notes`, payload })
      if (res.statusCode !== 201) throw new Error(`${name}: ${res.statusCode} ${res.body}`)
    }))
  }
  await app.auxiliary.feed.settled()
  const used = process.cpuUsage(before)
  return (used.user + used.system) / 1000 / amount
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const figures: Record<string, number[]> = { quiet: [], paused: [] }
const RUN = (process.env.ONLY ?? 'quiet,paused').split(',')
for (const name of RUN) await slice(name, Math.min(500, WRITES))
for (let round = 0; round < ROUNDS; round++) for (const name of RUN) figures[name].push(await slice(name, WRITES))
const [quiet, paused] = [median(figures.quiet), median(figures.paused)]
// Each round's paused slice less its quiet one: the machine's load drifts less within a round than across the run.
const extra = median(figures.paused.map((value, round) => value - figures.quiet[round]))
console.log(JSON.stringify({ writes: WRITES, msPerWrite: figures }))
console.log(`CPU per write: no webhook ${quiet.toFixed(3)} ms, webhook paused ${paused.toFixed(3)} ms (+${(100 * (paused / quiet - 1)).toFixed(0)}%), a paused write's extra ${extra.toFixed(3)} ms`)
await app.close()
process.exit(0)
