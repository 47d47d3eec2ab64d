import t from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { AuditLog, type AuditEntry } from '../../../services/audit/log.js'
import { Cursors } from '../../../services/collections/query.js'
import { ManualClock } from '../../../services/platform/clock.js'
import { newId } from '../../../services/platform/ids.js'
import { MAX_WRITE_DOCUMENTS } from '../../../services/store/semantics/writes.js'
import { openSqliteStore } from '../../../services/store/sqlite/index.js'

const DAY_MS = 24 * 60 * 60_000

/**
 * A busy organization leaves more expired entries in a day than one store
 * write may remove (MAX_WRITE_DOCUMENTS): pruning removes them all, page by
 * page, and keeps the entries inside the retention.
 */
t.test('pruning removes more expired entries than one write may, and keeps the rest', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'plinth-audit-'))
  const store = openSqliteStore({ file: join(dir, 'plinth.db') })
  t.teardown(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }) })
  const clock = new ManualClock(new Date('2026-06-01T00:00:00Z'))
  const log = new AuditLog(store, { clock, newId, cursors: new Cursors(Buffer.alloc(32, 7)) })
  await log.init()

  const expired = MAX_WRITE_DOCUMENTS + 1
  const entry = (at: Date, i: number): AuditEntry => ({ _id: newId(), at, orgId: 'org', projectId: null, actorId: 'user', credential: 'session', address: '127.0.0.1', action: 'updateProject', method: 'PATCH', route: '/api/projects/:projectId', targetId: `p${i}`, params: {}, fields: [], status: 200 })
  const old = new Date(clock.now().getTime() - 40 * DAY_MS)
  const entries = store.collection<AuditEntry>('audit_log')
  for (let from = 0; from < expired; from += 5_000) {
    await entries.insertMany(Array.from({ length: Math.min(5_000, expired - from) }, (_, i) => entry(old, from + i)))
  }
  await log.append({ ...entry(clock.now(), -1), targetId: 'kept' })

  t.equal(await log.prune(30), expired, 'every expired entry went')
  t.same((await entries.find({}).toArray()).map((kept) => kept.targetId), ['kept'], 'the entry inside the retention stays')
})
