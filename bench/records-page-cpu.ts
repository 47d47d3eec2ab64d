import { benchOwner, startBenchApp } from './bench-app.js'
import { newId } from '../services/platform/ids.js'
import { projectCollectionName } from '../services/projects/naming.js'

/**
 * CPU time per page change of the console's records table, in process
 * (`npx tsx bench/records-page-cpu.ts`): BENCH_RECORDS (default 100,000)
 * records seeded straight into the store, then the route the console calls
 * (`GET /api/p/:projectId/items?sort=-createdAt&limit=20&cursor=…`) through
 * `app.inject`, ten pages forward from the first, BENCH_ROUNDS times.
 * process.cpuUsage around each page; the medians of the first page and of
 * the tenth are printed, so a cursor deep in the order shows what it costs.
 */
const RECORDS = Number(process.env.BENCH_RECORDS ?? 100_000)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5)
const PAGES = 10

const { app } = await startBenchApp({ AUTH_RATE_LIMIT_MAX: '1000000' })
const { userId, orgId, accessToken } = await benchOwner(app)
const project = await app.projects.create(orgId, userId, { name: 'Records scale' })
const methods = Object.fromEntries(['list', 'get', 'create', 'update', 'delete'].map((method) => [method, { enabled: true, rule: null }]))
await app.collections.definitions.create(project.id, { name: 'items', fields: [{ name: 'title', type: 'text' }, { name: 'n', type: 'number' }], indexes: [], methods })
const records = app.store.collection(projectCollectionName(project.id, 'items'))
const start = Date.now() - RECORDS * 1000
for (let batch = 0; batch < RECORDS; batch += 10_000) {
  await records.insertMany(Array.from({ length: Math.min(10_000, RECORDS - batch) }, (_, i) => {
    const at = new Date(start + (batch + i) * 1000)
    return { _id: newId(), title: `item ${batch + i}`, n: batch + i, createdAt: at, updatedAt: at, version: 1 }
  }))
}

const sort = process.env.BENCH_SORT ?? '-createdAt'
async function page (cursor: string | null): Promise<{ cpu: number, next: string | null }> {
  const query = new URLSearchParams({ sort, limit: '20', ...(cursor === null ? {} : { cursor }) })
  const before = process.cpuUsage()
  const answer = await app.inject({ method: 'GET', url: `/api/p/${project.id}/items?${query.toString()}`, headers: { authorization: `Bearer ${accessToken}` } })
  const used = process.cpuUsage(before)
  if (answer.statusCode !== 200) throw new Error(`${answer.statusCode} ${answer.body}`)
  return { cpu: (used.user + used.system) / 1000, next: answer.json().data.nextCursor as string | null }
}

const first: number[] = []
const tenth: number[] = []
for (let round = 0; round < ROUNDS; round++) {
  let cursor: string | null = null
  for (let n = 1; n <= PAGES; n++) {
    const { cpu, next } = await page(cursor)
    if (n === 1) first.push(cpu)
    if (n === PAGES) tenth.push(cpu)
    cursor = next
  }
}
const median = (values: number[]): string => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)].toFixed(2)
console.log(`records page (sort ${sort}, ${RECORDS} records): first page ${median(first)} ms CPU, tenth page ${median(tenth)} ms CPU (medians of ${ROUNDS})`)
await app.close()
process.exit(0)
