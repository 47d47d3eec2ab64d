import t, { type Test } from 'tap'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { openSqliteStore } from '../../../services/store/sqlite/index.js'
import { StoreBusyError } from '../../../services/store/errors.js'

function sharedFile (t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'plinth-busy-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  return join(dir, 'plinth.db')
}

t.test('two stores on one file in one process: writes of the same turn through both go through, none refused', async (t) => {
  const file = sharedFile(t)
  const first = openSqliteStore({ file })
  const second = openSqliteStore({ file })
  t.teardown(async () => { await first.close(); await second.close() })
  await first.collection('notes').insertOne({ _id: 'n', n: 0 })
  // The first's inserts open a group commit that holds the write lock until the turn ends; the second writes meanwhile.
  const writes = await Promise.allSettled(Array.from({ length: 20 }, async (_, i) => {
    const [writer, other] = i % 2 === 0 ? [first, second] : [second, first]
    await writer.collection('notes').insertOne({ _id: `c${i}` })
    await other.collection('notes').updateOne({ _id: 'n' }, { $inc: { n: 1 } })
    await other.collection('notes').deleteOne({ _id: `c${i}` })
  }))
  t.same(writes.filter((outcome) => outcome.status === 'rejected').map((outcome) => String((outcome as PromiseRejectedResult).reason)), [], 'no write refused')
  t.equal((await second.collection('notes').findOne({ _id: 'n' }))?.n, 20)
  t.equal(await first.collection('notes').countDocuments({}), 1)
})

t.test('a lock held by another process: the write waits for it without holding the event loop, or is refused as busy with nothing written', async (t) => {
  const file = sharedFile(t)
  const store = openSqliteStore({ file, busyTimeoutMs: 2_000 })
  t.teardown(async () => { await store.close() })
  await store.collection('notes').insertOne({ _id: 'n', n: 0 })
  const other = new Database(file)
  t.teardown(() => { if (other.open) other.close() })

  // Released by a timer: it fires only if the waiting write leaves the event loop free.
  other.exec('BEGIN IMMEDIATE')
  const released = setTimeout(() => { other.exec('COMMIT') }, 100)
  t.teardown(() => { clearTimeout(released) })
  await store.collection('notes').updateOne({ _id: 'n' }, { $inc: { n: 1 } })
  t.equal(other.inTransaction, false, 'the write went through once the other released the lock')

  const impatient = openSqliteStore({ file, busyTimeoutMs: 200 })
  t.teardown(async () => { await impatient.close() })
  other.exec('BEGIN IMMEDIATE')
  for (const write of [
    impatient.collection('notes').updateOne({ _id: 'n' }, { $inc: { n: 1 } }),
    impatient.collection('notes').insertOne({ _id: 'x' }),
    impatient.collection('notes').deleteMany({})
  ]) {
    const refused = await write.then(() => null, (error: unknown) => error)
    t.ok(refused instanceof StoreBusyError, 'refused as busy')
    t.match(refused, { code: 'APP_STORE_BUSY', status: 503, details: { retryAfterSeconds: 1 } })
  }
  other.exec('COMMIT')
  t.same(await impatient.collection('notes').find({}).toArray(), [{ _id: 'n', n: 1 }], 'none of the refused writes left anything')
})
