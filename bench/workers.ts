import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { availableParallelism, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServer, type AddressInfo } from 'node:net'
import autocannon from 'autocannon'
import { buildApp } from '../app.js'
import { loadConfig } from '../services/config.js'
import { openSqliteStore } from '../services/store/sqlite/index.js'
import { newId } from '../services/platform/ids.js'
import { benchOwner, benchPosts } from './bench-app.js'
import { ONLY, SLICES, WARMUP_SECONDS, DURATION, load, summary, type Measured, type Scenario } from './pairs.js'

/**
 * Issue 36's WORKERS row: get-by-id and create through the real server
 * (`server.ts`, as `npm start` runs it) with WORKERS=1 and WORKERS=2, each on
 * its own copy of one seeded DATA_DIR, their slices alternated, and the ratio.
 * Then the issue's bar: the WORKERS=2 server takes creates until 20,000 are
 * answered (count-bound, capped at CREATES_CAP_SECONDS), and every create it
 * acknowledged in the row is counted in its store: none may be missing.
 */
const ROOT = new URL('..', import.meta.url).pathname
const RECORDS = 100_000
const CONNECTIONS = 50
const CREATES_BAR = 20_000
const CREATES_CAP_SECONDS = Number(process.env.BENCH_WORKERS_CREATES_CAP ?? 300)

interface Seeded { dataDir: string, projectId: string, token: string, postId: string }

async function seed (): Promise<Seeded> {
  const dataDir = mkdtempSync(join(tmpdir(), 'plinth-bench-workers-'))
  const app = await buildApp(loadConfig({ ...process.env, DATA_DIR: dataDir, LOG_LEVEL: 'silent', GATEWAY_PORT: 'off', WORKERS: '1' }))
  const { userId, orgId } = await benchOwner(app)
  const project = await app.projects.create(orgId, userId, { name: 'Workers' })
  const { endUser } = await benchPosts(app, project.id, ['get', 'create'])
  const posts = app.store.collection(`p_${project.id}_posts`)
  const authors = [endUser.user.id, 'someone-else-1', 'someone-else-2', 'someone-else-3']
  const now = new Date()
  for (let batch = 0; batch < RECORDS / 1000; batch++) {
    await posts.insertMany(Array.from({ length: 1000 }, (_, i) => ({
      title: `post ${batch * 1000 + i}`, status: ['draft', 'review', 'published'][i % 3], author: authors[(batch * 1000 + i) % 4], views: i, createdAt: now, updatedAt: now, version: 1
    })))
  }
  const own = await posts.findOne({ author: endUser.user.id })
  await app.close()
  return { dataDir, projectId: project.id, token: endUser.accessToken, postId: String(own?._id) }
}

interface Server { workers: number, child: ChildProcess, address: string, dataDir: string }

/** One process at LOG_LEVEL=warn says nowhere which port PORT=0 gave it, so this bench picks one for it (and for it only). */
async function freePort (): Promise<number> {
  const probe = createServer().listen(0, '127.0.0.1')
  await once(probe, 'listening')
  const { port } = probe.address() as AddressInfo
  await new Promise((resolve) => probe.close(resolve))
  return port
}

/** `server.ts` with WORKERS=n on a copy of the seeded DATA_DIR; ready once every worker listens. */
async function startServer (seeded: Seeded, workers: number): Promise<Server> {
  const dataDir = `${seeded.dataDir}-w${workers}`
  cpSync(seeded.dataDir, dataDir, { recursive: true })
  // A cluster binds PORT=0 once, in its lead, and its primary's "all workers listening" line names the port.
  const port = workers > 1 ? 0 : await freePort()
  const child = spawn(process.execPath, ['--import', 'tsx', 'server.ts'], {
    cwd: ROOT,
    env: { ...process.env, WORKERS: String(workers), DATA_DIR: dataDir, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'warn', GATEWAY_PORT: 'off' },
    stdio: ['ignore', 'pipe', 'inherit']
  })
  let stdout = ''
  child.stdout?.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  const deadline = Date.now() + 120_000
  // The primary logs "all workers listening" whatever LOG_LEVEL; one process has only /healthz to say it listens.
  for (;;) {
    if (child.exitCode !== null || Date.now() > deadline) throw new Error(`WORKERS=${workers} did not start: ${stdout}`)
    const listening = /"port":(\d+),"msg":"all workers listening"/.exec(stdout)?.[1]
    const address = `http://127.0.0.1:${listening ?? port}`
    const up = workers > 1 ? listening !== undefined : await fetch(`${address}/healthz`).then((res) => res.ok, () => false)
    if (up) return { workers, child, address, dataDir }
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
}

async function stop (server: Server): Promise<void> {
  const exited = once(server.child, 'exit')
  server.child.kill('SIGTERM')
  await exited
}

/** Both servers warm, then alternating slices: drift in the machine's speed touches both alike. */
async function measureBoth (one: Server, two: Server, scenario: Scenario): Promise<[Measured, Measured, number]> {
  await load(one.address, scenario, WARMUP_SECONDS)
  const warmTwo = await load(two.address, scenario, WARMUP_SECONDS)
  const slice = Math.max(1, Math.round(DURATION / SLICES))
  const results: [autocannon.Result[], autocannon.Result[]] = [[], []]
  for (let i = 0; i < SLICES; i++) {
    results[0].push(await load(one.address, scenario, slice))
    results[1].push(await load(two.address, scenario, slice))
  }
  const acknowledged = [warmTwo, ...results[1]].reduce((sum, result) => sum + result['2xx'], 0)
  return [summary(`WORKERS=1 ${scenario.name}`, results[0]), summary(`WORKERS=2 ${scenario.name}`, results[1]), acknowledged]
}

/** Creates until CREATES_BAR are answered, or the cap: the bar is a count, which a fixed time reaches only on a fast machine. */
async function createsUntilBar (server: Server, scenario: Scenario): Promise<autocannon.Result> {
  return await new Promise((resolve, reject) => {
    const run = autocannon({
      url: server.address + scenario.path,
      method: 'POST',
      connections: CONNECTIONS,
      amount: CREATES_BAR,
      headers: { 'content-type': 'application/json', ...scenario.headers },
      body: scenario.body
    }, (error, result) => { clearTimeout(cap); if (error !== null && error !== undefined) reject(error); else resolve(result) })
    const cap = setTimeout(() => { run.stop() }, CREATES_CAP_SECONDS * 1000)
  })
}

const row = (m: Measured, extra: string): string =>
  `${m.name.padEnd(46)} ${m.rps.toFixed(0).padStart(8)} req/s  p50 ${String(m.p50).padStart(4)} ms  p99 ${String(m.p99).padStart(4)} ms${extra}${m.errors > 0 ? `  (${m.errors} errors)` : ''}`

const seeded = await seed()
const scenarios: Scenario[] = [
  { name: 'GET record by id (owner rule, 100k)', path: `/api/p/${seeded.projectId}/posts/${seeded.postId}`, headers: { authorization: `Bearer ${seeded.token}` }, connections: CONNECTIONS },
  { name: 'POST create record', path: `/api/p/${seeded.projectId}/posts`, method: 'POST', headers: { authorization: `Bearer ${seeded.token}` }, body: JSON.stringify({ title: 'bench', status: 'draft', views: 1 }), connections: CONNECTIONS }
]
const one = await startServer(seeded, 1)
const two = await startServer(seeded, 2)
let acknowledgedCreates = 0
let barCreates: autocannon.Result | null = null
try {
  console.log(`WORKERS=1 vs WORKERS=2 (server.ts, ${CONNECTIONS} connections; ${availableParallelism()} cores, which the load generator shares with the servers)`)
  for (const scenario of scenarios.filter((s) => ONLY.test(`WORKERS ${s.name}`))) {
    const [w1, w2, acknowledged] = await measureBoth(one, two, scenario)
    console.log(row(w1, ''))
    console.log(row(w2, `  ×${(w2.rps / w1.rps).toFixed(2)} of WORKERS=1`))
    if (scenario.method !== 'POST') continue
    barCreates = await createsUntilBar(two, scenario)
    acknowledgedCreates += acknowledged + barCreates['2xx']
  }
} finally {
  await stop(one)
  await stop(two)
}
if (barCreates !== null) {
  // Counted after both workers drained: every create answered 201 is in the file; requests cut in flight at a slice's end may add up to 50 a slice.
  const store = openSqliteStore({ file: join(two.dataDir, 'plinth.db'), newId })
  const stored = await store.collection(`p_${seeded.projectId}_posts`).countDocuments({}) - RECORDS
  await store.close()
  const counted = barCreates['2xx']
  console.log(`${'WORKERS=2 creates through both processes'.padEnd(46)} ${counted} answered 201 in ${barCreates.duration.toFixed(0)} s (${(counted / barCreates.duration).toFixed(0)}/s${barCreates.errors + barCreates.non2xx > 0 ? `, ${barCreates.errors + barCreates.non2xx} errors` : ''}); ` +
    `${acknowledgedCreates} answered 201 in the whole row, ${stored} stored: ${stored >= acknowledgedCreates ? 'none lost' : `${acknowledgedCreates - stored} LOST`}` +
    `  [bar: ${CREATES_BAR} creates, none lost: ${stored >= acknowledgedCreates && counted >= CREATES_BAR ? 'met' : 'MISSED'}]`)
}
for (const dir of [seeded.dataDir, one.dataDir, two.dataDir]) rmSync(dir, { recursive: true, force: true })
