import t from 'tap'
import { spawn } from 'node:child_process'
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { once } from 'node:events'
import { tempDir } from './helper.js'

const ROOT = new URL('..', import.meta.url).pathname

function startServer (env: Record<string, string>) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'server.ts'], {
    cwd: ROOT,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, WORKERS: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let stdout = ''
  let stderr = ''
  child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString() })
  const listening = new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start: ${stdout} ${stderr}`)), 20_000)
    child.stdout.on('data', () => {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(stdout)
      if (match !== null) { clearTimeout(timer); resolve(match[1]) }
    })
    child.on('exit', () => { clearTimeout(timer); reject(new Error(`server exited: ${stderr}`)) })
  })
  return { child, listening, output: () => ({ stdout, stderr }) }
}

t.test('npm start serves the API and the hosting gateway, and drains on SIGTERM', async (t) => {
  const dataDir = tempDir(t)
  // GATEWAY_PORT unset would mean 8000, which servers of tests running at once would all want.
  const server = startServer({ PORT: '0', GATEWAY_PORT: '0', DATA_DIR: dataDir, LOG_LEVEL: 'info' })
  const base = await server.listening
  const ready = await fetch(`${base}/readyz`)
  t.equal(ready.status, 200)
  t.same(await ready.json(), { success: true, data: { status: 'ready', store: 'sqlite' } })
  t.ok(existsSync(join(dataDir, 'plinth.db')), 'the embedded store lives in DATA_DIR')
  const gateway = server.output().stdout.split('\n').filter((line) => line.includes('hosting gateway listening')).map((line) => JSON.parse(line) as { port: number })
  t.equal(gateway.length, 1, 'the gateway listens')
  const unknown = await fetch(`http://127.0.0.1:${gateway[0].port}/`, { headers: { accept: 'application/json' } })
  t.same([unknown.status, ((await unknown.json()) as { code: string }).code], [404, 'APP_GATEWAY_UNKNOWN_HOST'], 'and routes by Host')

  const exited = once(server.child, 'exit')
  server.child.kill('SIGTERM')
  const [code] = await exited
  t.equal(code, 0, 'exits cleanly')
  t.match(server.output().stdout, /draining in-flight requests/)
  t.notOk(existsSync(join(dataDir, 'plinth.db-wal')), 'store closed: the WAL was checkpointed away')
})

t.test('GATEWAY_PORT=off: the API without a gateway', async (t) => {
  const server = startServer({ PORT: '0', GATEWAY_PORT: 'off', DATA_DIR: tempDir(t), LOG_LEVEL: 'info' })
  const base = await server.listening
  t.equal((await fetch(`${base}/readyz`)).status, 200)
  t.notMatch(server.output().stdout, /hosting gateway listening/)
  const exited = once(server.child, 'exit')
  server.child.kill('SIGTERM')
  t.equal((await exited)[0], 0)
})

t.test('a bad variable stops the server with its name', async (t) => {
  const server = startServer({ PORT: 'eighty', DATA_DIR: tempDir(t) })
  server.listening.catch(() => {})
  const [code] = await once(server.child, 'exit')
  t.equal(code, 78)
  t.match(server.output().stderr, /Invalid configuration: PORT must be a whole number/)
})

t.test('a malformed master key stops the server with its name', async (t) => {
  const server = startServer({ PORT: '0', DATA_DIR: tempDir(t), PLINTH_MASTER_KEY: 'too-short' })
  server.listening.catch(() => {})
  const [code] = await once(server.child, 'exit')
  t.equal(code, 78)
  t.match(server.output().stderr, /Invalid configuration: PLINTH_MASTER_KEY/)
})

t.test('MongoDB without PLINTH_MASTER_KEY stops the server before it connects', async (t) => {
  // Port 1 refuses connections: had the server tried, it would fail later with a server-selection error instead.
  const server = startServer({ PORT: '0', DATA_DIR: tempDir(t), MONGODB_URL: 'mongodb://127.0.0.1:1' })
  server.listening.catch(() => {})
  const [code] = await once(server.child, 'exit')
  t.equal(code, 78, 'the configuration exit code')
  t.match(server.output().stderr, /Invalid configuration: PLINTH_MASTER_KEY must be set when MONGODB_URL is/)
  t.notMatch(server.output().stderr, /MongoServerSelectionError|ECONNREFUSED/, 'no connection was attempted')
})
