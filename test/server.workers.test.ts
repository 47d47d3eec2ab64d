import t from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { buildApp } from '../app.js'
import { loadConfig } from '../services/config.js'
import { tempDir } from './helper.js'
import { join } from 'node:path'
import { newId } from '../services/platform/ids.js'
import { JobQueue } from '../services/jobs/queue.js'
import { openSqliteStore } from '../services/store/sqlite/index.js'
import { RATE_LIMITS_PRUNE_JOB } from '../services/platform/rate-limit.js'

// Four cluster starts of a real server, each forking two more processes: heavier than the suite's 240 s guard allows under load.
t.setTimeout(480_000)

const ROOT = new URL('..', import.meta.url).pathname
// The bar is 20,000, counted by bench/workers.ts; here every acknowledged id is looked up, and 1,500 cross both workers many times.
const CREATES = 1500
const CONCURRENCY = 16
const JOBS = 200

function startCluster (env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, LOG_LEVEL: 'info', GATEWAY_PORT: '0', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const lines = (): Array<Record<string, unknown>> => stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>)
  const waitFor = async (test: (line: Record<string, unknown>) => boolean, what: string): Promise<Record<string, unknown>> => {
    // A cluster start under a loaded suite (tsx compiling in three processes) has taken over 60 s.
    const deadline = Date.now() + 180_000
    for (;;) {
      const found = lines().find(test)
      if (found !== undefined) return found
      if (child.exitCode !== null || Date.now() > deadline) throw new Error(`no "${what}": ${stdout} ${stderr}`)
      await new Promise((resolve) => setTimeout(resolve, 50))
    }
  }
  return { child, lines, waitFor, stderr: () => stderr }
}

/** A project with a public `notes` collection anyone may create in, made before the cluster starts on the same DATA_DIR. */
async function seed (dataDir: string): Promise<string> {
  const app = await buildApp(loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dataDir, GATEWAY_PORT: 'off', WORKERS: '1' }))
  const user = await app.identity.users.register({ email: 'owner@example.com', password: 'correct horse battery', name: 'owner' })
  const org = await app.orgs.organizations.create({ userId: user.id }, { name: 'Workers' })
  const project = await app.projects.create(org.id, user.id, { name: 'Workers' })
  await app.collections.definitions.create(project.id, {
    name: 'notes',
    fields: [{ name: 'n', type: 'number' }],
    methods: { create: { enabled: true, rule: { requireAuth: false } } }
  })
  await app.close()
  return project.id
}

async function create (base: string, projectId: string, n: number, acknowledged: string[] = []): Promise<number> {
  const response = await fetch(`${base}/api/p/${projectId}/notes`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ n }) })
  const body = await response.json() as { data?: { id?: string } }
  if (response.status === 201 && typeof body.data?.id === 'string') acknowledged.push(body.data.id)
  return response.status
}

t.test('WORKERS=2: creates through both workers, a killed worker replaced, SIGTERM drains both', async (t) => {
  const dataDir = tempDir(t)
  const projectId = await seed(dataDir)
  const server = startCluster({ WORKERS: '2', DATA_DIR: dataDir })
  t.teardown(() => { if (server.child.exitCode === null) server.child.kill('SIGKILL') })
  const allListening = await server.waitFor((line) => line.msg === 'all workers listening', 'all workers listening')
  const listening = server.lines().filter((line) => typeof line.msg === 'string' && line.msg.startsWith('Server listening at'))
  t.equal(listening.length, 2, 'two API processes listen')
  const pids = new Set(listening.map((line) => line.pid))
  t.equal(pids.size, 2, 'in two processes')
  const base = /(http:\/\/127\.0\.0\.1:\d+)/.exec(String(listening[0].msg))?.[1] ?? ''
  t.equal(/(http:\/\/127\.0\.0\.1:\d+)/.exec(String(listening[1].msg))?.[1], base, 'PORT=0 bound once, by the lead, and shared (the gateway, also on port 0 and HOST, is not)')
  t.equal(`http://127.0.0.1:${String(allListening.port)}`, base, 'the primary says which port')
  t.equal(server.lines().filter((line) => line.msg === 'hosting gateway listening').length, 1, 'the gateway listens in one process only')

  // Jobs enqueued while both workers poll, from a third process on the DATA_DIR: each must run once, whoever claims it.
  const store = openSqliteStore({ file: join(dataDir, 'plinth.db'), newId })
  const queue = new JobQueue({ store, newId })
  for (let i = 0; i < JOBS; i++) await queue.enqueue(RATE_LIMITS_PRUNE_JOB, { i })
  await store.close()

  let next = 0
  const statuses: number[] = []
  const acknowledged: string[] = []
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < CREATES) statuses.push(await create(base, projectId, next++, acknowledged))
  }))
  t.same(statuses.filter((status) => status !== 201), [], `${CREATES} creates, every one 201`)

  // Both processes answered: each logs its requests with its pid.
  const served = new Set(server.lines().filter((line) => line.msg === 'request completed').map((line) => line.pid))
  t.equal(served.size, 2, 'both workers served creates')

  // kill -9 the follower: the primary forks a replacement, and requests succeed once it is up.
  const follower = [...pids].find((pid) => pid !== listening.find((line) => server.lines().some((other) => other.msg === 'hosting gateway listening' && other.pid === line.pid))?.pid) as number
  process.kill(follower, 'SIGKILL')
  const replaced = await server.waitFor((line) => line.msg === 'worker replaced', 'worker replaced')
  t.equal(`http://127.0.0.1:${String(replaced.port)}`, base, 'the replacement shares the port the survivor holds')
  const after = await Promise.all(Array.from({ length: 50 }, async (_, i) => await create(base, projectId, CREATES + i, acknowledged)))
  t.same(after.filter((status) => status !== 201), [], 'every request after the replacement succeeds')
  const pidsNow = new Set(server.lines().filter((line) => typeof line.msg === 'string' && line.msg.startsWith('Server listening at')).map((line) => line.pid))
  t.equal(pidsNow.size, 3, 'a new process took the killed one\'s place')

  const exited = once(server.child, 'exit')
  server.child.kill('SIGTERM')
  t.equal((await exited)[0], 0, 'the primary exits cleanly once both drained')
  t.equal(server.lines().filter((line) => line.msg === 'draining in-flight requests').length, 2, 'each worker ran its drain')

  // None lost: every acknowledged create is in the store.
  const app = await buildApp(loadConfig({ LOG_LEVEL: 'silent', DATA_DIR: dataDir, GATEWAY_PORT: 'off', WORKERS: '1' }))
  t.teardown(async () => { await app.close() })
  t.equal(acknowledged.length, CREATES + 50, 'every create answered with its id')
  const stored = new Set((await app.store.collection(`p_${projectId}_notes`).find({}, { projection: { _id: 1 } }).toArray()).map((note) => String(note._id)))
  t.same(acknowledged.filter((id) => !stored.has(id)), [], 'every acknowledged create is stored, through both processes: none lost')
  t.equal(stored.size, CREATES + 50, 'and nothing else')
  const jobs = await app.store.collection<{ type: string, status: string, attempts: number, everyMs?: number | null, payload: Record<string, unknown> }>('_jobs').find({ type: RATE_LIMITS_PRUNE_JOB }).toArray()
  const slots = jobs.filter((job) => job.everyMs == null)
  t.same([slots.length, slots.filter((job) => job.status === 'succeeded' && job.attempts === 1).length], [JOBS, JOBS], 'every job slot ran exactly once (one claim each)')
  t.equal(jobs.filter((job) => job.everyMs != null).length, 1, 'the schedule every worker declared at start is one job')
})

t.test('WORKERS=2 on PORT=0: when every worker dies, the replacements listen on the port clients know', async (t) => {
  const dataDir = tempDir(t)
  const projectId = await seed(dataDir)
  const server = startCluster({ WORKERS: '2', DATA_DIR: dataDir })
  t.teardown(() => { if (server.child.exitCode === null) server.child.kill('SIGKILL') })
  const allListening = await server.waitFor((line) => line.msg === 'all workers listening', 'all workers listening')
  const base = `http://127.0.0.1:${String(allListening.port)}`
  const pids = new Set(server.lines().filter((line) => typeof line.msg === 'string' && line.msg.startsWith('Server listening at')).map((line) => line.pid as number))
  t.equal(pids.size, 2, 'two API processes listen')
  const [lead, second] = [...pids]
  const replacedLines = (): Array<Record<string, unknown>> => server.lines().filter((line) => line.msg === 'worker replaced')
  // One after the other: the second's replacement is still starting (forked 200 ms after its death, to listen(0)) when
  // the lead, the last worker listening, dies and the shared handle closes with it.
  process.kill(second, 'SIGKILL')
  await server.waitFor((line) => line.msg === 'worker died; restarting it', 'the second worker\'s death')
  await new Promise((resolve) => setTimeout(resolve, 400))
  process.kill(lead, 'SIGKILL')
  await server.waitFor(() => replacedLines().length >= 2, 'both workers replaced')
  t.ok(replacedLines().every((line) => line.port === allListening.port), 'every replacement listens on the port the cluster started on')
  t.equal(await create(base, projectId, 1), 201, 'a create at the old address succeeds')
  // Both at once.
  const listening = (): number[] => server.lines().filter((line) => typeof line.msg === 'string' && line.msg.startsWith('Server listening at')).map((line) => line.pid as number)
  const before = replacedLines().length
  for (const pid of listening().slice(-2)) process.kill(pid, 'SIGKILL')
  await server.waitFor(() => replacedLines().length >= before + 2, 'two workers replaced again')
  t.ok(replacedLines().every((line) => line.port === allListening.port), 'and again on that port')
  t.equal(await create(base, projectId, 1), 201, 'a create at the old address succeeds again')
  const exited = once(server.child, 'exit')
  server.child.kill('SIGTERM')
  t.equal((await exited)[0], 0, 'the primary exits cleanly once both drained')
})

t.test('WORKERS=2: a start-up failure prints its line and exits non-zero, no restart loop', async (t) => {
  const server = startCluster({ WORKERS: '2', DATA_DIR: tempDir(t), PLINTH_MASTER_KEY: 'too-short' })
  const [code] = await once(server.child, 'exit')
  t.equal(code, 78)
  t.match(server.stderr(), /Invalid configuration: PLINTH_MASTER_KEY/)
})

t.test('WORKERS=2: a port taken stops the cluster with the worker\'s line, not a restart loop', async (t) => {
  const { createServer } = await import('node:net')
  const blocker = createServer()
  blocker.listen(0, '127.0.0.1')
  await once(blocker, 'listening')
  t.teardown(() => { blocker.close() })
  const port = (blocker.address() as { port: number }).port
  const server = startCluster({ WORKERS: '2', DATA_DIR: tempDir(t), PORT: String(port) })
  const [code] = await once(server.child, 'exit')
  t.not(code, 0)
  t.equal(server.stderr().trim().split('\n').filter((line) => line.includes(String(port))).length, 1, 'one line naming the port')
  t.equal(server.lines().filter((line) => line.msg === 'worker died; restarting it').length, 0, 'no restart')
})

t.test('WORKERS: a bad value names the variable', async (t) => {
  const server = startCluster({ WORKERS: '0', DATA_DIR: tempDir(t) })
  const [code] = await once(server.child, 'exit')
  t.equal(code, 78)
  t.match(server.stderr(), /WORKERS/)
})

t.test('WORKERS=2: a SIGTERM while the second worker is still starting drains the first and exits 0', async (t) => {
  const server = startCluster({ WORKERS: '2', DATA_DIR: tempDir(t) })
  // The lead listening is the moment the primary forks the second worker; it has no drain installed yet.
  await server.waitFor((line) => typeof line.msg === 'string' && line.msg.startsWith('Server listening at'), 'the lead listening')
  server.child.kill('SIGTERM')
  const [code] = await once(server.child, 'exit')
  t.equal(code, 0, `exits 0: ${server.stderr()}`)
  t.equal(server.lines().filter((line) => line.msg === 'worker replaced' || line.msg === 'all workers listening').length, 0, 'no worker started after the SIGTERM')
})
