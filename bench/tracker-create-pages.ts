import { copyFileSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { benchOwner, startBenchApp } from './bench-app.js'
import { trackerActor } from '../services/tracker/access.js'
import { STORE_FILE } from '../services/backup/manifest.js'

/**
 * What a tracker item's insert costs SQLite, part by part (`npx tsx bench/tracker-create-pages.ts`): 500 items
 * created through the service, then, on copies of that file with only SQLite running, commits of
 * BENCH_PAGES_PER_COMMIT (default 2: what eight creates in flight share) item inserts, each followed by its activity
 * row as a create's turn has it, in variants: as the app has it (`all`), without the text index's insert trigger,
 * without the item's indexes, and without both. Printed per item: the WAL frames (pages) its commits wrote, the CPU
 * they took (process.cpuUsage, no other thread), and which B-trees one commit wrote pages of.
 */
const PER_COMMIT = Number(process.env.BENCH_PAGES_PER_COMMIT ?? 2)
const COMMITS = Number(process.env.BENCH_PAGES_COMMITS ?? 300)
const TEXT_TRIGGER = '"s|tracker_items|i"'

const { app, dataDir } = await startBenchApp({})
const { userId, orgId } = await benchOwner(app)
const project = await app.projects.create(orgId, userId, { name: 'Pages bench' })
const actor = trackerActor(userId, ['tracker.read', 'tracker.write', 'tracker.admin'])
const lp = await app.tracker.projects.create(actor, project.id, { name: 'Pages', identifier: 'PAGE' })
const scope = await app.tracker.projects.scope(actor, project.id, lp.id)
for (let i = 0; i < 500; i++) await app.tracker.workItems.create(scope, { title: 'bench', priority: 'high' })
await app.close()
const source = join(dataDir, STORE_FILE)
const copy = join(dataDir, 'pages.db')

function run (variant: string): { frames: number, cpu: number, trees: string } {
  for (const suffix of ['', '-wal', '-shm']) rmSync(copy + suffix, { force: true })
  copyFileSync(source, copy)
  const db = new Database(copy)
  db.pragma('journal_mode = WAL')
  db.pragma('wal_autocheckpoint = 0')
  const itemIndexes = db.prepare("SELECT name FROM sqlite_schema WHERE type = 'index' AND name LIKE 'x|tracker_items|%'").pluck().all() as string[]
  if (variant === 'no text trigger' || variant === 'neither') db.exec(`DROP TRIGGER ${TEXT_TRIGGER}`)
  if (variant === 'no item indexes' || variant === 'neither') for (const name of itemIndexes) db.exec(`DROP INDEX "${name}"`)
  const item = JSON.parse(db.prepare('SELECT doc FROM "c|tracker_items" ORDER BY seq DESC LIMIT 1').pluck().get() as string)
  const entry = JSON.parse(db.prepare('SELECT doc FROM "c|tracker_activity" ORDER BY seq DESC LIMIT 1').pluck().get() as string)
  const insertItem = db.prepare('INSERT INTO "c|tracker_items" (id, doc) VALUES (?, ?)')
  const insertEntry = db.prepare('INSERT INTO "c|tracker_activity" (id, doc) VALUES (?, ?)')
  const pageSize = db.pragma('page_size', { simple: true }) as number
  let seq = item.seq as number
  let frames = 0
  let cpu = 0
  let pages: number[] = []
  for (let c = 0; c < COMMITS; c++) {
    db.pragma('wal_checkpoint(TRUNCATE)')
    const before = process.cpuUsage()
    db.exec('BEGIN IMMEDIATE')
    for (let i = 0; i < PER_COMMIT; i++) {
      const id = `pages-${c}-${i}`
      insertItem.run(id, JSON.stringify({ ...item, _id: id, seq: ++seq }))
      insertEntry.run(`${id}:created`, JSON.stringify({ ...entry, _id: `${id}:created`, itemId: id }))
    }
    db.exec('COMMIT')
    const used = process.cpuUsage(before)
    cpu += used.user + used.system
    const wal = readFileSync(copy + '-wal')
    pages = []
    for (let offset = 32; offset + 24 <= wal.length; offset += 24 + pageSize) pages.push(wal.readUInt32BE(offset))
    frames += pages.length
  }
  const owners = new Map((db.prepare('SELECT pageno, name FROM dbstat').all() as Array<{ pageno: number, name: string }>).map((row) => [row.pageno, row.name]))
  const trees = new Map<string, number>()
  for (const page of pages) trees.set(owners.get(page) ?? 'a free page', (trees.get(owners.get(page) ?? 'a free page') ?? 0) + 1)
  db.close()
  const perItem = COMMITS * PER_COMMIT
  return { frames: frames / perItem, cpu: cpu / perItem, trees: [...trees].map(([name, pages]) => `${name} ${pages}`).join(', ') }
}

for (const variant of ['all', 'no text trigger', 'no item indexes', 'neither']) {
  const { frames, cpu, trees } = run(variant)
  console.log(`${variant.padEnd(16)} per item: ${frames.toFixed(1)} WAL frames, ${cpu.toFixed(0)} µs CPU`)
  if (variant === 'all') console.log(`  the last commit's pages by B-tree: ${trees}`)
}
rmSync(dataDir, { recursive: true, force: true })
process.exit(0)
