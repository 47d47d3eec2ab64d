import { fork, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import autocannon from 'autocannon'
import { LIST_FILTER } from './tracker-filter.js'

/**
 * Server CPU time per request of the tracker's read rows, for comparing code
 * on a shared machine (req/s there is the neighbours' as much as ours): each
 * tree given on the command line (a worktree, or an old commit unpacked with
 * `git archive` beside a node_modules link) runs its own bench/tracker-serve.ts
 * on BENCH_TRACKER_SIZES (default 10000); then, for BENCH_CPU_ROUNDS rounds,
 * each row is driven against each tree in turn (BENCH_CPU_REQUESTS requests,
 * eight connections) and the server's user + system time is read from
 * /proc/<pid>/stat around the slice. Prints every slice and the medians.
 *
 *   npx tsx bench/tracker-cpu.ts /tmp/old /work/wt/s46-get
 */
const trees = process.argv.slice(2)
const ROUNDS = Number(process.env.BENCH_CPU_ROUNDS ?? 3)
const REQUESTS = Number(process.env.BENCH_CPU_REQUESTS ?? 20_000)
const SIZE = Number(process.env.BENCH_TRACKER_SIZES ?? 10_000)
const ROWS = new RegExp(process.env.BENCH_ONLY ?? '')
const FILTER = LIST_FILTER
const TICK_US = 10_000

interface Server { tree: string, child: ChildProcess, info: Record<string, string> }

function cpuTicks (pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').replace(/^.*\) /, '').split(' ')
  return Number(fields[11]) + Number(fields[12])
}

async function startServer (tree: string): Promise<Server> {
  const profile = process.env.BENCH_CPU_PROF === undefined ? [] : ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_CPU_PROF}`]
  const child = fork(join(tree, 'bench/tracker-serve.ts'), [], {
    cwd: tree, execArgv: ['--import', 'tsx', ...profile], stdio: 'inherit', env: { ...process.env, BENCH_TRACKER_SIZES: String(SIZE), BENCH_RECORDS_FLOOR: '1' }
  })
  const [info] = await once(child, 'message') as [Record<string, string>]
  return { tree, child, info }
}

function rows (info: Record<string, string>): Array<{ name: string, path: string, token?: string }> {
  const base = `/api/projects/${info.projectId}/tracker`
  const lp = info[`lp${SIZE}`]
  return [
    { name: 'browse by key', path: `${base}/browse/${info[`key${SIZE}`]}` },
    { name: 'get by id in its project', path: `${base}/projects/${lp}/work-items/${lp}-${Math.floor(SIZE / 2)}` },
    { name: 'list 50, 3 conditions', path: `${base}/projects/${lp}/work-items?limit=50&filter=${FILTER}` },
    // The floor: a record by id through the same Fastify, auth and store (a tree older than this row has no posts).
    ...(info.postId === undefined ? [] : [{ name: 'records get by id', path: `/api/p/${info.projectId}/posts/${info.postId}`, token: info.projectToken }])
  ].filter((row) => ROWS.test(row.name))
}

async function slice (server: Server, path: string, amount: number, token = server.info.accessToken): Promise<number> {
  const pid = server.child.pid as number
  const before = cpuTicks(pid)
  const result = await autocannon({
    url: server.info.address + path, connections: 8, amount, headers: { authorization: `Bearer ${token}` }
  })
  const spent = cpuTicks(pid) - before
  const answered = result['2xx']
  if (answered !== amount) throw new Error(`${server.tree} ${path}: ${answered} of ${amount} answered 2xx (${result.non2xx} not)`)
  return spent * TICK_US / answered
}

const servers: Server[] = []
for (const tree of trees) servers.push(await startServer(tree))
try {
  const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
  // Every row some tree has: an old tree has no floor row, and is left out of it.
  const names = [...new Set(servers.flatMap((server) => rows(server.info).map((r) => r.name)))]
  for (const row of names.map((name) => ({ name }))) {
    const figures = new Map<string, number[]>(servers.map((server) => [server.tree, []]))
    const targets = servers.flatMap((server) => rows(server.info).filter((r) => r.name === row.name).map((r) => ({ server, ...r })))
    for (const { server, path, token } of targets) await slice(server, path, 2_000, token)
    for (let round = 0; round < ROUNDS; round++) {
      for (const { server, path, token } of targets) figures.get(server.tree)?.push(await slice(server, path, REQUESTS, token))
    }
    for (const [tree, values] of figures) {
      console.log(`${row.name}\t${tree}\t${values.map((value) => value.toFixed(0)).join(', ')} µs\tmedian ${median(values).toFixed(0)} µs`)
    }
  }
} finally {
  for (const server of servers) {
    server.child.kill('SIGTERM')
    await once(server.child, 'exit')
  }
}
