import t, { type Test } from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, readdirSync, symlinkSync } from 'node:fs'
import { join } from 'node:path'
import { once } from 'node:events'
import { tempDir } from './helper.js'

const ROOT = new URL('..', import.meta.url).pathname

/** Every file under `dir`, relative to it. */
function filesUnder (dir: string, prefix = ''): string[] {
  return readdirSync(join(dir, prefix), { withFileTypes: true }).flatMap((entry) => {
    const path = join(prefix, entry.name)
    return entry.isDirectory() ? filesUnder(dir, path) : [path]
  })
}

// A build (a minute of tsc on a busy machine) and five starts of the built server, most of them as clusters.
t.setTimeout(600_000)

// Built once for the file: the tests after the first start the very server `npm start` runs.
const out = tempDir(t, 'plinth-build-')

/** `node dist/server.js` from the build, with only `env` (and PATH, HOME) set; its output is collected. */
function startBuilt (env: Record<string, string>) {
  const child = spawn(process.execPath, [join(out, 'dist/server.js')], {
    cwd: out,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, HOST: '127.0.0.1', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  const output = { stdout: '', stderr: '' }
  child.stdout.on('data', (chunk: Buffer) => { output.stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output.stderr += chunk.toString() })
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>
  const listening = new Promise<string>((resolve, reject) => {
    child.stdout.on('data', () => {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output.stdout)
      if (match !== null) resolve(match[1])
    })
    child.on('exit', () => { reject(new Error(`server exited: ${output.stdout}${output.stderr}`)) })
  })
  listening.catch(() => {})
  return { child, output, exited, listening }
}

/** A start-up failure as the operator sees it: the lines on stderr, none of them a stack frame. */
function failureLines (t: Test, stderr: string): string[] {
  const lines = stderr.split('\n').filter((line) => line.trim() !== '')
  t.same(lines.filter((line) => /^\s+at /.test(line) || /\.(ts|js):\d+/.test(line)), [], 'no stack trace')
  return lines
}

// `npm start` runs what `npm run build` emits with plain node: nothing may need tsx or a file left behind in the sources.
t.test('the build emits the server alone, and plain node serves it', { timeout: 120_000 }, async (t) => {
  // Packages resolve from the output's own directory upwards, as they do from dist/ in the checkout.
  symlinkSync(join(ROOT, 'node_modules'), join(out, 'node_modules'), 'dir')
  const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(out, 'dist')], { encoding: 'utf8' })
  t.equal(tsc.status, 0, `tsc: ${tsc.stdout}${tsc.stderr}`)
  const emitted = filesUnder(join(out, 'dist'))
  t.ok(emitted.includes('server.js') && emitted.includes('app.js'), 'server.js and app.js at the top, as `npm start` expects')
  t.same(emitted.filter((file) => !file.endsWith('.js')), [], 'JavaScript only')
  t.same(emitted.filter((file) => /^(test|bench|scripts)\//.test(file)), [], 'no tests, benches or scripts')

  const dataDir = tempDir(t)
  const server = startBuilt({ PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'info' })
  const base = await server.listening
  const ready = await fetch(`${base}/readyz`)
  t.same([ready.status, await ready.json()], [200, { success: true, data: { status: 'ready', store: 'sqlite' } }])
  t.ok(existsSync(join(dataDir, 'plinth.db')))
  server.child.kill('SIGTERM')
  const [code] = await server.exited
  t.equal(code, 0, 'drains and exits on SIGTERM')
})

t.test('MONGODB_URL at a closed port: one line naming MONGODB_URL once the configured wait is over, exit 69', { timeout: 120_000 }, async (t) => {
  // Port 1 refuses every connection; a wait of 8 s is an attempt of 5 s, a logged retry, and one of the 2 s left.
  const server = startBuilt({
    PORT: '0',
    DATA_DIR: tempDir(t),
    MONGODB_URL: 'mongodb://127.0.0.1:1/?directConnection=true',
    MONGODB_CONNECT_TIMEOUT_SECONDS: '8',
    PLINTH_MASTER_KEY: 'a'.repeat(64),
    LOG_LEVEL: 'warn'
  })
  const [code] = await server.exited
  t.equal(code, 69, 'EX_UNAVAILABLE')
  const lines = failureLines(t, server.output.stderr)
  t.equal(lines.length, 1, 'one line')
  t.match(lines[0], /^Cannot start: MONGODB_URL \(mongodb:\/\/127\.0\.0\.1:1\/\?directConnection=true\) did not answer within 8 s: .*ECONNREFUSED/, 'naming the variable, the wait and the reason')
  const retries = server.output.stdout.split('\n').filter((line) => line.includes('waiting for MongoDB')).map((line) => JSON.parse(line) as { attempt: number, secondsLeft: number })
  t.equal(retries.length, 1, 'the retry was logged while it waited')
  t.same(retries.map((retry) => retry.attempt), retries.map((_, i) => i + 1), 'numbered')
  t.ok(retries.every((retry) => retry.secondsLeft < 8), 'within the configured wait')
  t.notMatch(server.output.stdout, /Server listening/)
})

// Three servers start here, the second and third as `npm start` runs them (a cluster of WORKERS = cores); under a full
// suite on 2 cores each start can take tens of seconds, hence the wait.
t.test('a second server on a taken port: one line naming the port\'s variable, exit 69', { timeout: 300_000 }, async (t) => {
  // The first only holds the two ports: one process is enough.
  const first = startBuilt({ PORT: '0', GATEWAY_PORT: '0', DATA_DIR: tempDir(t), LOG_LEVEL: 'info', WORKERS: '1' })
  t.teardown(() => { first.child.kill('SIGKILL') })
  const base = await first.listening
  const apiPort = new URL(base).port
  const gateway = first.output.stdout.split('\n').filter((line) => line.includes('hosting gateway listening')).map((line) => JSON.parse(line) as { port: number })
  t.equal(gateway.length, 1, 'the first server\'s gateway listens')
  const taken: Array<[string, Record<string, string>]> = [
    ['PORT', { PORT: apiPort, GATEWAY_PORT: 'off' }],
    ['GATEWAY_PORT', { PORT: '0', GATEWAY_PORT: String(gateway[0].port) }]
  ]
  for (const [variable, ports] of taken) {
    const second = startBuilt({ ...ports, DATA_DIR: tempDir(t), LOG_LEVEL: 'warn' })
    const [code] = await second.exited
    t.equal(code, 69, `${variable}: EX_UNAVAILABLE`)
    const lines = failureLines(t, second.output.stderr)
    t.equal(lines.length, 1, `${variable}: one line`)
    const port = variable === 'PORT' ? apiPort : String(gateway[0].port)
    t.match(lines[0], new RegExp(`^Cannot start: ${variable} ${port} is already in use`), `${variable}: names the variable and its port`)
  }
  t.equal((await fetch(`${base}/readyz`)).status, 200, 'the first server still serves')
  first.child.kill('SIGTERM')
  t.equal((await first.exited)[0], 0)
})
