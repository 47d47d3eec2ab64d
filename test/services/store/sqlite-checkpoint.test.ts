import t, { type Test } from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath } from 'node:url'
import Database from 'better-sqlite3'
import { Connection } from '../../../services/store/sqlite/connection.js'
import { SqliteCollection } from '../../../services/store/sqlite/collection.js'
import { checkpointerState } from '../../../services/store/sqlite/checkpointer.js'
import { openSqliteStore } from '../../../services/store/sqlite/index.js'
import { newId } from '../../../services/platform/ids.js'

const writer = fileURLToPath(new URL('../../fixtures/store-writer.ts', import.meta.url))

function dbFile (t: Test): string {
  const dir = mkdtempSync(join(tmpdir(), 'plinth-checkpoint-'))
  t.teardown(() => { rmSync(dir, { recursive: true, force: true }) })
  return join(dir, 'plinth.db')
}

/** Waits for `check`, up to a minute of wall time: a loaded machine may start and run the thread late. */
async function until (what: string, check: () => boolean): Promise<void> {
  for (const deadline = Date.now() + 60_000; !check();) {
    if (Date.now() > deadline) throw new Error(`still waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
}

const fill = async (items: SqliteCollection, count: number): Promise<void> => {
  await items.insertMany(Array.from({ length: count }, (_, i) => ({ n: i, text: 'x'.repeat(300) })))
}

/** This process's threads (Linux): a checkpointer that was not stopped would stay among them. */
const threads = (): number => Number(/^Threads:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1])

t.test('a thread of its own checkpoints the WAL into the file while the serving connection never does', async (t) => {
  const file = dbFile(t)
  const connection = new Connection(file, { checkpoints: { startAfterMs: 200, intervalMs: 10 } })
  t.teardown(async () => { await connection.close() })
  t.equal(connection.db.pragma('wal_autocheckpoint', { simple: true }), 0, 'no checkpoint inside a commit')
  const items = new SqliteCollection('items', connection, newId)
  await fill(items, 3_000)
  const before = statSync(file).size
  t.ok(statSync(`${file}-wal`).size > 1_000_000, 'the writes are in the WAL')
  await until('a checkpoint', () => statSync(file).size > before + 500_000 && (checkpointerState(file)?.last?.checkpointed ?? 0) > 0)
  const state = checkpointerState(file)
  t.equal(state?.running, true)
  t.ok((state?.last?.checkpointed ?? 0) > 0, 'the thread reports what it checkpointed')
  t.equal(await items.countDocuments({}), 3_000)
})

t.test('a WAL that PASSIVE copied back whole is left to start over, not truncated', async (t) => {
  const file = dbFile(t)
  const connection = new Connection(file, { checkpoints: { startAfterMs: 0, intervalMs: 10, truncateFrames: 50 } })
  t.teardown(async () => { await connection.close() })
  const items = new SqliteCollection('items', connection, newId)
  await fill(items, 2_000)
  await until('all of it checkpointed', () => { const last = checkpointerState(file)?.last; return last != null && last.log > 50 && last.checkpointed === last.log })
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.equal(checkpointerState(file)?.last?.truncated, false)
  t.ok(statSync(`${file}-wal`).size > 0, 'no TRUNCATE: the next write starts the WAL over')
})

t.test('a reader on an old snapshot: writes go on while TRUNCATE skips its turns, and the WAL is emptied once it lets go', async (t) => {
  const file = dbFile(t)
  // Shorter than the thread's busy timeout: a TRUNCATE holding the write lock while it waits for the reader refuses these writes.
  const connection = new Connection(file, { busyTimeoutMs: 300, checkpoints: { startAfterMs: 0, intervalMs: 10, truncateFrames: 50 } })
  t.teardown(async () => { await connection.close() })
  const items = new SqliteCollection('items', connection, newId)
  await fill(items, 10)
  const reader = new Database(file)
  t.teardown(() => { if (reader.open) reader.close() })
  reader.exec('BEGIN')
  reader.prepare('SELECT count(*) FROM sqlite_master').get()
  const refused: string[] = []
  for (let round = 0; round < 30; round++) {
    await fill(items, 40).catch((error: unknown) => { refused.push(String(error)) })
    await new Promise((resolve) => setTimeout(resolve, 15))
  }
  t.same(refused, [], 'no write refused')
  // The thread's next turn after the writes, however late a loaded machine runs it.
  await until('a checkpoint after the writes', () => { const last = checkpointerState(file)?.last; return last != null && last.log - last.checkpointed > 50 })
  const last = checkpointerState(file)?.last
  t.ok(last != null && last.log - last.checkpointed > 50, 'the reader kept frames from PASSIVE, so TRUNCATE was tried')
  t.equal(last?.truncated, false, 'and skipped while the reader holds its snapshot')
  reader.exec('COMMIT')
  await until('the WAL emptied', () => statSync(`${file}-wal`).size === 0)
  await fill(items, 10)
  t.equal(await items.countDocuments({}), 10 + 30 * 40 + 10, 'writes go on after it')
})

t.test('a file that is no database: the open throws and leaves no checkpointer behind', async (t) => {
  const file = dbFile(t)
  const baseline = threads()
  writeFileSync(file, 'not a database, '.repeat(1_000))
  t.throws(() => new Connection(file, { checkpoints: { startAfterMs: 0 } }), { code: 'SQLITE_NOTADB' })
  t.equal(checkpointerState(file), undefined)
  await new Promise((resolve) => setTimeout(resolve, 100))
  t.equal(threads(), baseline, 'no thread started')
})

t.test('one thread per file in a process; closing stops it, however many stores open and close', async (t) => {
  const file = dbFile(t)
  const warm = new Connection(file, { checkpoints: { startAfterMs: 0 } })
  await until('the first thread', () => checkpointerState(file)?.running === true)
  await warm.close()
  const baseline = threads()
  const first = new Connection(file, { checkpoints: { startAfterMs: 0 } })
  const second = new Connection(file, { checkpoints: { startAfterMs: 0 } })
  await until('the thread', () => checkpointerState(file)?.last !== null && checkpointerState(file)?.last !== undefined)
  t.equal(threads(), baseline + 1, 'two connections to one file share one thread')
  await first.close()
  t.equal(checkpointerState(file)?.running, true, 'it runs while a connection is open')
  await second.close()
  t.equal(checkpointerState(file), undefined)
  t.equal(threads(), baseline, 'the last close ends it')

  const files = Array.from({ length: 8 }, () => dbFile(t))
  const stores = files.map((one) => new Connection(one, { checkpoints: { startAfterMs: 0 } }))
  await until('eight threads', () => files.every((one) => checkpointerState(one)?.last != null))
  t.equal(threads(), baseline + 8)
  await Promise.all(stores.map(async (store) => { await store.close() }))
  t.equal(threads(), baseline, 'none left behind')

  // A store closed before its thread was due never starts one.
  for (let i = 0; i < 5; i++) await openSqliteStore({ file }).close()
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.equal(threads(), baseline)
})

t.test('a checkpointer that fails says why and hands checkpoints back to SQLite', async (t) => {
  const file = dbFile(t)
  const heard: Error[] = []
  const connection = new Connection(file, { checkpoints: { startAfterMs: 100, onError: (error) => { heard.push(error) } } })
  t.teardown(async () => { await connection.close() })
  // The thread opens the file by name when it starts; the serving connection keeps the unlinked one.
  unlinkSync(file)
  await until('the failure', () => checkpointerState(file)?.error != null)
  t.equal(heard.length, 1, 'onError heard it')
  t.equal(heard[0], checkpointerState(file)?.error, 'the error kept is the one heard')
  t.match(heard[0], { code: 'SQLITE_CANTOPEN' })
  t.equal(connection.db.pragma('wal_autocheckpoint', { simple: true }), 16_000)
  const items = new SqliteCollection('items', connection, newId)
  await fill(items, 10)
  t.equal(await items.countDocuments({}), 10)
})

t.test('the store passes its checkpointer\'s failure to the opener', async (t) => {
  const file = dbFile(t)
  const heard: Error[] = []
  const store = openSqliteStore({ file, onCheckpointError: (error) => { heard.push(error) } })
  t.teardown(async () => { await store.close() })
  unlinkSync(file)
  await until('the failure heard', () => heard.length > 0)
  t.match(heard, [{ code: 'SQLITE_CANTOPEN' }])
})

t.test('two processes writing to one file, each with its checkpointer, killed with SIGKILL: every acknowledged write is there', async (t) => {
  const file = dbFile(t)
  const seed = new Database(file)
  seed.pragma('journal_mode = WAL')
  seed.close()
  const acknowledged: string[] = []
  const children = ['a', 'b'].map((name) => {
    const child = spawn(process.execPath, ['--import', 'tsx', writer, file, name], { stdio: ['ignore', 'pipe', 'inherit'] })
    createInterface({ input: child.stdout }).on('line', (line) => { if (line.startsWith('acked ')) acknowledged.push(...line.slice(6).split(' ')) })
    return child
  })
  t.teardown(() => { for (const child of children) if (child.exitCode === null) child.kill('SIGKILL') })
  await until('writes from both', () => acknowledged.some((id) => id.startsWith('a-')) && acknowledged.some((id) => id.startsWith('b-')) && acknowledged.length > 4_000)
  for (const child of children) child.kill('SIGKILL')
  await Promise.all(children.map(async (child) => { if (child.exitCode === null && child.signalCode === null) await once(child, 'exit') }))
  t.ok(readdirSync(join(file, '..')).includes('plinth.db-wal'), 'killed: nothing closed the WAL')
  const store = openSqliteStore({ file })
  t.teardown(async () => { await store.close() })
  const stored = new Set((await store.collection('items').find({}, { projection: { _id: 1 } }).toArray()).map((doc) => doc._id))
  t.same(acknowledged.filter((id) => !stored.has(id)), [], 'none lost')
})
