import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { startBenchApp } from './bench-app.js'
import { seedSearch, type SearchSeed } from './tracker-search-seed.js'
import { TRACKER_COLLECTIONS, type CommentRecord, type ItemRecord } from '../services/tracker/records.js'

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

// A word in one comment only (the bar: search finds an item by a word of one of its comments), added once.
const COMMENT_ONLY = 'quillwortzed'
const comments = app.store.collection<CommentRecord>(TRACKER_COLLECTIONS.comments)
if (await comments.findOne({ _id: 'bench-comment-only' }) === null) {
  const lpId = (await app.store.collection<ItemRecord>(TRACKER_COLLECTIONS.items).findOne({ seq: 1000 }) as ItemRecord).lpId
  const at = new Date()
  await comments.insertOne({ _id: 'bench-comment-only', projectId: seed.projectId, lpId, itemId: `${lpId}-1000`, authorId: seed.userId, format: 'markdown', body: `see ${COMMENT_ONLY}`, bodyJson: null, text: `see ${COMMENT_ONLY}`, mentions: [], createdAt: at, updatedAt: at, editedAt: null })
}

// Two words of ~1 % of items each; a word in ~17 % (as typed: a prefix); the first letters of a word of rank 200
// (a prefix of a dozen words); a key, a key prefix and a bare number; a word in one comment only.
const queries: Array<[string, string]> = [
  ['2 words', seed.pair], ['common word', seed.common], ['word prefix', seed.pair.slice(0, 3)], ['key', seed.key],
  ['key prefix', seed.key.slice(0, 6)], ['bare number', seed.key.split('-')[1]], ['comment-only', COMMENT_ONLY]
]
// BENCH_SEARCH_IDS=<file>: every query's result ids (two pages of 50 and the facet), to compare two builds' answers.
const idsFile = process.env.BENCH_SEARCH_IDS
const answers: Record<string, unknown> = {}
for (const [name, q] of queries) {
  const call = async (): Promise<unknown> => await app.tracker.search.search(seed.actor, seed.projectId, { q, limit: 20 })
  if (idsFile !== undefined) {
    const first = await app.tracker.search.search(seed.actor, seed.projectId, { q, limit: 50 })
    const second = first.nextCursor === null ? null : await app.tracker.search.search(seed.actor, seed.projectId, { q, limit: 50, cursor: first.nextCursor })
    answers[name] = { facets: first.facets, ids: [...first.items, ...(second?.items ?? [])].map((hit) => `${hit.type}:${hit.id}:${hit.score.toFixed(6)}`) }
  }
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
if (idsFile !== undefined) writeFileSync(idsFile, JSON.stringify(answers, null, 1))
await app.close()
process.exit(0)
