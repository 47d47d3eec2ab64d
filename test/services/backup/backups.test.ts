import t from 'tap'
import { join } from 'node:path'
import Database from 'better-sqlite3'
import { randomBytes } from 'node:crypto'
import { Cursors } from '../../../services/collections/query.js'
import { BACKUP_LEASE_MS, Backups } from '../../../services/backup/backups.js'
import { DeferJobError, JobLeaseLostError } from '../../../services/jobs/job.js'
import { existsSync, readdirSync } from 'node:fs'
import { ManualClock, systemClock } from '../../../services/platform/clock.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { STORE_FILE } from '../../../services/backup/manifest.js'
import { tempDir, tempStore } from '../../helper.js'

t.test('a backup whose job cannot be queued is not left listed', async (t) => {
  const store = await tempStore(t)
  const dataDir = tempDir(t)
  let queueDown = true
  const backups = new Backups({
    store,
    clock: systemClock,
    storeClock: systemClock,
    newId: createIdGenerator(),
    cursors: new Cursors(randomBytes(32)),
    sources: { dataDir, reposDir: tempDir(t), hostingDir: tempDir(t), engine: 'sqlite', exclude: [] },
    dir: tempDir(t),
    keep: 7,
    enqueue: async () => { if (queueDown) throw new Error('the queue is down') },
    upload: null
  })
  await backups.init()
  await t.rejects(backups.create('admin'), { message: 'the queue is down' })
  t.same((await backups.list({})).items, [], 'no backup is listed as queued with no job to write it')
  queueDown = false
  t.match(await backups.create('admin'), { status: 'queued' })
  t.equal((await backups.list({})).items.length, 1)
})

t.test('a scheduled backup cut short (its process died) is marked failed by the next scheduled run once its lease is out; a live one is left to finish', async (t) => {
  const store = await tempStore(t)
  const clock = new ManualClock(Date.now())
  const dir = tempDir(t)
  const dataDir = tempDir(t)
  new Database(join(dataDir, STORE_FILE)).close()
  const ports = {
    store,
    clock,
    storeClock: clock,
    newId: createIdGenerator(),
    cursors: new Cursors(randomBytes(32)),
    sources: { dataDir, reposDir: tempDir(t), hostingDir: tempDir(t), engine: 'sqlite' as const, exclude: [] },
    dir,
    keep: 7,
    enqueue: async () => {}
  }
  // The first process: its upload never returns, as if it died there, with the archive written and the backup running.
  let reached = (): void => {}
  const stuck = new Promise<void>((resolve) => { reached = resolve })
  const dying = new Backups({ ...ports, upload: async () => { reached(); return await new Promise<never>(() => {}) } })
  await dying.init()
  const first = dying.runScheduled()
  t.equal(await Promise.race([stuck.then(() => 'stuck'), first.then((result) => JSON.stringify(result))]), 'stuck', 'the first run stops in its upload')
  const api = await dying.create('admin')
  const [cut] = (await dying.list({})).items.filter((backup) => backup.id !== api.id)
  t.match(cut, { status: 'running', origin: 'schedule' })

  // The next process's scheduled run, while the first one's lease still holds (the job taken up again while its first run works).
  const next = new Backups({ ...ports, upload: null })
  await next.init()
  t.match(await next.runScheduled(), { status: 'ready', interrupted: 0 }, 'a run whose lease holds is alive: not interrupted')
  t.match(await next.get(cut.id), { status: 'running' }, 'and left running')

  // Past its lease, with no renewal (the process is gone): the next scheduled run takes it for dead.
  clock.advance(BACKUP_LEASE_MS + 1)
  const ran = await next.runScheduled()
  t.match(ran, { status: 'ready', interrupted: 1 })
  t.match(await next.get(cut.id), { status: 'failed', error: /^Interrupted: the process running it stopped/ })
  t.match(await next.get(api.id), { status: 'queued' }, 'a backup asked for through the API is its own job\'s to finish')
  t.equal((await next.runScheduled()).interrupted, 0, 'once')
})

t.test('a run takes over a running backup only once its lease has run out, in the Store\'s time; a run whose job lost its lease stops writing and marks it failed', async (t) => {
  const store = await tempStore(t)
  const dataDir = tempDir(t)
  new Database(join(dataDir, STORE_FILE)).close()
  const dir = tempDir(t)
  // This process's clock is a day behind the Store's: a lease judged by it would look alive a day too long.
  const storeClock = new ManualClock(Date.now())
  const backups = new Backups({
    store,
    clock: new ManualClock(Date.now() - 86_400_000),
    storeClock,
    newId: createIdGenerator(),
    cursors: new Cursors(randomBytes(32)),
    sources: { dataDir, reposDir: tempDir(t), hostingDir: tempDir(t), engine: 'sqlite', exclude: [] },
    dir,
    keep: 7,
    enqueue: async () => {},
    upload: null
  })
  await backups.init()
  const { id } = await backups.create('admin')
  // Another run holds it (a second worker, the job taken up again while its first run works).
  await backups.records.updateOne({ _id: id }, { $set: { status: 'running', leaseUntil: new Date(storeClock.nowMs() + BACKUP_LEASE_MS) } })
  const deferred = await backups.run(id).then(() => null, (error: unknown) => error)
  t.ok(deferred instanceof DeferJobError, 'the job waits for the live run rather than write over it')
  t.ok((deferred as DeferJobError).delayMs > 0 && (deferred as DeferJobError).delayMs <= BACKUP_LEASE_MS + 1, 'until its lease would run out')
  t.match(await backups.get(id), { status: 'running' })
  t.notOk(existsSync(join(dir, `plinth-backup-${id}.tar.gz`)), 'and nothing was written')
  storeClock.advance(BACKUP_LEASE_MS + 1)
  t.match(await backups.run(id), { status: 'ready' }, 'once the lease is out, the run takes it over')

  const second = await backups.create('admin')
  const job = new AbortController()
  job.abort(new JobLeaseLostError('job-1', 'worker-1'))
  t.match(await backups.run(second.id, job.signal), { status: 'failed' })
  t.match(await backups.get(second.id), { status: 'failed', error: /^Abandoned: the job running it lost its lease/ })
  t.same(readdirSync(dir).filter((name) => name.includes(second.id) || name.endsWith('.partial')), [], 'no archive, no partial file')
})
