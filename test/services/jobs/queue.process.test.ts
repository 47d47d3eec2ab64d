import t, { type Test } from 'tap'
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { setTimeout as delay } from 'node:timers/promises'
import { newId } from '../../../services/platform/ids.js'
import { JobQueue } from '../../../services/jobs/queue.js'
import { openSqliteStore } from '../../../services/store/sqlite/index.js'

/**
 * The cross-process proof of the queue: separate Node processes on one SQLite
 * file in one DATA_DIR share the work without running a job twice, and a job
 * whose process is killed mid-run is finished by another after its lease.
 */
const fixture = fileURLToPath(new URL('../../fixtures/job-worker.ts', import.meta.url))
const dataDir = mkdtempSync(join(tmpdir(), 'plinth-jobs-process-'))
const store = openSqliteStore({ file: join(dataDir, 'plinth.db'), newId })
const queue = new JobQueue({ store, newId })
await queue.init()

interface WorkerProcess {
  child: ChildProcess
  ready: Promise<void>
  exited: Promise<{ code: number | null, signal: NodeJS.Signals | null }>
  errors: string[]
}

t.teardown(async () => {
  await store.close()
  rmSync(dataDir, { recursive: true, force: true })
})

/** A worker process, killed when the test `owner` ends if it is still alive (so a failure cannot leak into the next test). */
function startWorker (owner: Test, workerId: string, ...options: string[]): WorkerProcess {
  const child = spawn(process.execPath, ['--import', 'tsx', fixture, dataDir, workerId, ...options], { stdio: ['ignore', 'pipe', 'inherit'] })
  owner.teardown(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL') })
  const errors: string[] = []
  let buffered = ''
  const ready = new Promise<void>((resolve, reject) => {
    child.stdout?.setEncoding('utf8').on('data', (chunk: string) => {
      buffered += chunk
      const lines = buffered.split('\n')
      buffered = lines.pop() ?? ''
      for (const line of lines) {
        if (line === 'ready') resolve()
        else if (line.startsWith('error ')) errors.push(line.slice(6))
      }
    })
    child.once('exit', (code) => { reject(new Error(`${workerId} exited with ${code} before it was ready`)) })
  })
  const exited = new Promise<{ code: number | null, signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => { resolve({ code, signal }) })
  })
  return { child, ready, exited, errors }
}

async function waitFor (what: string, check: () => Promise<boolean>, detail?: () => Promise<string>): Promise<void> {
  const deadline = Date.now() + 15_000
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${detail === undefined ? '' : `: ${await detail()}`}`)
    await delay(25)
  }
}

t.test('two processes on one SQLite file run each of 200 jobs exactly once', async (t) => {
  // Leases here are long enough that no live worker loses one: a process waiting for SQLite's write
  // lock blocks its event loop (better-sqlite3 is synchronous), and stalls of ~300 ms were seen on a
  // loaded 2-core machine. Lease expiry itself is the next test's subject.
  const options = ['--concurrency', '4', '--lease', '3000']
  const workers = [startWorker(t, 'P1', ...options), startWorker(t, 'P2', ...options)]
  await Promise.all(workers.map(async (worker) => { await worker.ready }))

  const total = 200
  // The first jobs hold their worker until a run of the other process is seen (test/fixtures/job-worker.ts): a
  // worker that claimed the first ones cannot finish all 200 before the other, descheduled on a busy machine, polls.
  for (let n = 0; n < total; n++) await queue.enqueue('record', { n, ms: 3, ...(n < 8 ? { untilBoth: true } : {}) })
  const succeeded = async (): Promise<number> => await store.collection('_jobs').countDocuments({ type: 'record', status: 'succeeded' })
  await waitFor('every job to succeed', async () => await succeeded() === total,
    async () => JSON.stringify({ succeeded: await succeeded(), errors: workers.flatMap((worker) => worker.errors).slice(0, 5) }))

  for (const worker of workers) worker.child.kill('SIGTERM')
  const exits = await Promise.all(workers.map(async (worker) => await worker.exited))
  t.same(exits, [{ code: 0, signal: null }, { code: 0, signal: null }], 'both stopped cleanly')
  t.same(workers.flatMap((worker) => worker.errors), [], 'no worker reported an error')

  t.equal(await store.collection('runs').countDocuments(), total, 'one run per job')
  t.equal(await store.collection('duplicates').countDocuments(), 0, 'no job ran twice')
  t.equal(await queue.jobs.countDocuments({ type: 'record', attempts: 1, status: 'succeeded' }), total, 'each job succeeded on its one attempt')
  const runs = await store.collection('runs').find().toArray()
  const share = { P1: runs.filter((run) => run.workerId === 'P1').length, P2: runs.filter((run) => run.workerId === 'P2').length }
  t.ok(share.P1 > 0 && share.P2 > 0, `both processes took part (${share.P1} + ${share.P2})`)
})

t.test('a job whose process is killed mid-run is finished by another after its lease expires', async (t) => {
  const job = await queue.enqueue('slow', {})
  const doomed = startWorker(t, 'KILLED', '--hang', '--lease', '500')
  await doomed.ready
  const starts = store.collection('starts')
  await waitFor('the first process to start the job', async () => (await starts.countDocuments({ jobId: job._id })) === 1)
  doomed.child.kill('SIGKILL')
  t.same(await doomed.exited, { code: null, signal: 'SIGKILL' })
  t.match(await queue.get(job._id), { status: 'running', leaseOwner: 'KILLED', attempts: 1 }, 'left running by the dead process')

  const rescuer = startWorker(t, 'RESCUER', '--lease', '500')
  await rescuer.ready
  await waitFor('the job to succeed', async () => (await queue.get(job._id))?.status === 'succeeded')
  rescuer.child.kill('SIGTERM')
  t.same(await rescuer.exited, { code: 0, signal: null })

  t.match(await queue.get(job._id), { status: 'succeeded', leaseOwner: 'RESCUER', attempts: 2, result: { finishedBy: 'RESCUER' } })
  const [first, second] = await starts.find({ jobId: job._id }, { sort: { at: 1 } }).toArray()
  t.equal(first.workerId, 'KILLED')
  t.equal(second.workerId, 'RESCUER')
  t.ok((second.at as Date).getTime() >= (first.leaseUntil as Date).getTime(), 'reclaimed only after the dead lease expired')
  t.same(rescuer.errors, [])
})
