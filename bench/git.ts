import { execFile } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { DURATION, ONLY, runScenarios, start, type Scenario, type Started } from './pairs.js'
import { GIT_ROWS } from './git-names.js'
import { BENCH_FILES } from './git-history.js'

/**
 * The git rows of issue 17: a clone of a generated 2,000-commit repository
 * through the app against git http-backend serving the same bare repository,
 * in alternation; an incremental fetch of three new commits; the REST tree
 * and blob reads as shares of the hello-world, once pushes have left the
 * repository's tip in loose objects and again with every object in one pack.
 */
const run = promisify(execFile)
const CLONE_ROUNDS = 5
const FETCH_ROUNDS = 25
const CLONE_BAR = 1.2
const FETCH_BAR_MS = 100

const work = mkdtempSync(join(tmpdir(), 'plinth-bench-git-clients-'))
// The client in the environment the app gives its own git (no user or system config, no prompts), and no auto-gc between rounds.
const clientEnv = { ...process.env, GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_TERMINAL_PROMPT: '0', LC_ALL: 'C' }
const clientConfig = ['-c', 'gc.auto=0', '-c', 'maintenance.auto=false', '-c', 'user.name=Bench', '-c', 'user.email=bench@example.com']

async function git (args: string[], cwd = work): Promise<string> {
  const { stdout } = await run('git', [...clientConfig, ...args], { cwd, env: clientEnv, maxBuffer: 64 * 1024 * 1024 })
  return stdout
}

async function timed (task: () => Promise<unknown>): Promise<number> {
  const started = performance.now()
  await task()
  return performance.now() - started
}

const sorted = (values: number[]): number[] => [...values].sort((a, b) => a - b)
const median = (values: number[]): number => sorted(values)[Math.floor(values.length / 2)]
const percentile = (values: number[], fraction: number): number => sorted(values)[Math.min(values.length - 1, Math.ceil(values.length * fraction) - 1)]
const ms = (value: number): string => `${value.toFixed(0)} ms`

/** Whole clones, ours and theirs in turn after one warm-up each; each into a fresh directory. */
async function cloneRow (ourUrl: string, theirUrl: string): Promise<string> {
  let n = 0
  const cloneOnce = async (url: string): Promise<number> => {
    const dir = join(work, `clone-${n++}`)
    const took = await timed(async () => await git(['clone', '--quiet', url, dir]))
    rmSync(dir, { recursive: true, force: true })
    return took
  }
  await cloneOnce(ourUrl)
  await cloneOnce(theirUrl)
  const ours: number[] = []
  const theirs: number[] = []
  for (let i = 0; i < CLONE_ROUNDS; i++) {
    ours.push(await cloneOnce(ourUrl))
    theirs.push(await cloneOnce(theirUrl))
  }
  const ratio = median(ours) / median(theirs)
  return `${GIT_ROWS.clone.padEnd(34)} ${ms(median(ours)).padStart(8)}  git http-backend ${ms(median(theirs))} (medians of ${CLONE_ROUNDS}; ours ${ours.map((v) => v.toFixed(0)).join(', ')}; theirs ${theirs.map((v) => v.toFixed(0)).join(', ')})  ` +
    `ratio ${ratio.toFixed(2)}  [bar: ≤ ${CLONE_BAR}: ${ratio <= CLONE_BAR ? 'met' : 'MISSED'}]`
}

/**
 * A clone fetching from each server; between fetches a second clone pushes
 * three commits through the app. Only the `git fetch` is timed.
 */
async function fetchRow (ourUrl: string, theirUrl: string): Promise<string> {
  const pusher = join(work, 'pusher')
  await git(['clone', '--quiet', ourUrl, pusher])
  const readers = { ours: join(work, 'reader-ours'), theirs: join(work, 'reader-theirs') }
  await git(['clone', '--quiet', ourUrl, readers.ours])
  await git(['clone', '--quiet', theirUrl, readers.theirs])
  let change = 0
  const pushThree = async (): Promise<void> => {
    for (let i = 0; i < 3; i++) {
      change++
      writeFileSync(join(pusher, BENCH_FILES[change % BENCH_FILES.length]), `fetch round change ${change}\n`, { flag: 'a' })
      await git(['commit', '--quiet', '-am', `fetch round change ${change}`], pusher)
    }
    await git(['push', '--quiet', 'origin', 'main'], pusher)
  }
  const fetchOnce = async (dir: string): Promise<number> => {
    await pushThree()
    const took = await timed(async () => await git(['fetch', '--quiet', 'origin'], dir))
    if ((await git(['rev-parse', 'origin/main'], dir)).trim() !== (await git(['rev-parse', 'main'], pusher)).trim()) throw new Error(`${dir} did not fetch the push`)
    return took
  }
  await fetchOnce(readers.ours)
  await fetchOnce(readers.theirs)
  const ours: number[] = []
  const theirs: number[] = []
  for (let i = 0; i < FETCH_ROUNDS; i++) {
    ours.push(await fetchOnce(readers.ours))
    theirs.push(await fetchOnce(readers.theirs))
  }
  const p50 = median(ours)
  return `${GIT_ROWS.fetch.padEnd(34)} p50 ${ms(p50)}, p99 ${ms(percentile(ours, 0.99))} over ${FETCH_ROUNDS} rounds; ` +
    `git http-backend p50 ${ms(median(theirs))}, p99 ${ms(percentile(theirs, 0.99))}  [bar: p50 ≤ ${FETCH_BAR_MS} ms: ${p50 <= FETCH_BAR_MS ? 'met' : 'MISSED'}]`
}

let hello: Started | null = null
let ours: Started | null = null
let theirs: Started | null = null
try {
  hello = await start('./hello.ts')
  ours = await start('./git-serve.ts')
  theirs = await start('./git-http-backend.ts', { GIT_PROJECT_ROOT: ours.info.reposDir })
  const { pat, accessToken, projectId, slug, reposDir, repoPath } = ours.info
  // A private repository: the token is git's password, as a CI job or a credential helper gives it.
  const ourUrl = `${ours.address.replace('http://', `http://bench:${pat}@`)}/git/${projectId}/${slug}.git`
  const theirUrl = `${theirs.address}/${repoPath}`
  const api = `/api/projects/${projectId}/git/repositories/${slug}`
  const auth = { authorization: `Bearer ${accessToken}` }
  // Eight connections, not the default 32: a packed read takes tens of ms, and what autocannon abandons at the end of
  // a slice the server still finishes, which would otherwise spill into the next slice and the next row.
  const reads = (tree: string, blob: string, duration = DURATION): Scenario[] => [
    { name: tree, path: `${api}/tree?ref=main`, headers: auth, connections: 8, duration },
    { name: blob, path: `${api}/blob?ref=main&path=${encodeURIComponent(BENCH_FILES[1])}`, headers: auth, connections: 8, duration }
  ]
  if (ONLY.test(GIT_ROWS.clone)) console.log(await cloneRow(ourUrl, theirUrl))
  if (ONLY.test(GIT_ROWS.fetch) || ONLY.test(GIT_ROWS.treeLoose) || ONLY.test(GIT_ROWS.blobLoose)) {
    const fetched = await fetchRow(ourUrl, theirUrl)
    if (ONLY.test(GIT_ROWS.fetch)) console.log(fetched)
  }
  // The fetch rounds' pushes (under 100 objects each, which git keeps loose) left the tip in loose objects: the
  // commit, its trees and the blob read. Then a repack puts every object in one pack, as a server's gc does.
  await runScenarios(hello, ours, reads(GIT_ROWS.treeLoose, GIT_ROWS.blobLoose))
  if (ONLY.test(GIT_ROWS.treePacked) || ONLY.test(GIT_ROWS.blobPacked)) {
    await git(['--git-dir', join(reposDir, repoPath), 'repack', '-a', '-d', '-q'])
    await runScenarios(hello, ours, reads(GIT_ROWS.treePacked, GIT_ROWS.blobPacked, Math.max(DURATION, 6)))
  }
} finally {
  for (const server of [hello, ours, theirs]) server?.child.kill('SIGTERM')
  rmSync(work, { recursive: true, force: true })
}
