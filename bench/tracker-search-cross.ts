import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startBenchApp } from './bench-app.js'
import type { SearchSeed } from './tracker-search-seed.js'
import { TRACKER_COLLECTIONS, type ItemRecord } from '../services/tracker/records.js'
/**
 * CPU time per tracker search narrowed to a small tracker project beside the
 * seeded one (`DATA_DIR=<a copy of tracker-search-cpu.ts's data> npx tsx
 * bench/tracker-search-cross.ts`): adds, once, a project TINY of 300 items
 * (31 with the seed's common word) to the copy, then searches the common word
 * in TINY alone and in both projects. A common word of another project costs
 * a narrowed search every match's row (bench/README.md, text search).
 */
const dataDir = process.env.DATA_DIR
if (dataDir === undefined) throw new Error('DATA_DIR names a copy of the data tracker-search-cpu.ts seeded')
const CALLS = Number(process.env.BENCH_SEARCH_CALLS ?? 10)
const { app } = await startBenchApp({}, { dataDir })
const seed = JSON.parse(readFileSync(join(dataDir, 'search-seed.json'), 'utf8')) as SearchSeed
const tinyFile = join(dataDir, 'tiny.json')
let lpId: string
if (existsSync(tinyFile)) lpId = (JSON.parse(readFileSync(tinyFile, 'utf8')) as { lpId: string }).lpId
else {
  const created = await app.tracker.projects.create(seed.actor, seed.projectId, { name: 'Tiny', identifier: 'TINY' })
  const scope = await app.tracker.projects.scope(seed.actor, seed.projectId, created.id)
  const model = await app.tracker.workItems.create(scope, { title: 'Model kami item' })
  const items = app.store.collection<ItemRecord>(TRACKER_COLLECTIONS.items)
  const stored = await items.findOne({ _id: model.id }) as ItemRecord
  const batch: ItemRecord[] = []
  for (let seq = 2; seq <= 300; seq++) {
    const text = seq % 10 === 0 ? `kami tiny note ${seq}` : `tiny note ${seq}`
    batch.push({ ...stored, _id: `${created.id}-${seq}`, seq, title: text, description: text, descriptionText: text, sortOrder: seq * 1024, outbox: null })
  }
  await items.insertMany(batch)
  lpId = created.id
  writeFileSync(tinyFile, JSON.stringify({ lpId }))
}
for (const [name, query] of [['tiny project', { q: seed.common, limit: 20, lpId }], ['both projects', { q: seed.common, limit: 20 }]] as const) {
  const call = async (): Promise<{ items: unknown[], facets: unknown }> => await app.tracker.search.search(seed.actor, seed.projectId, query)
  for (let i = 0; i < 2; i++) await call()
  const before = process.cpuUsage()
  let last: { items: unknown[], facets: unknown } | undefined
  for (let i = 0; i < CALLS; i++) last = await call()
  const used = process.cpuUsage(before)
  console.log(name.padEnd(14), `cpu ${((used.user + used.system) / 1000 / CALLS).toFixed(2)} ms/search`, last?.items.length, JSON.stringify(last?.facets))
}
await app.close()
process.exit(0)
