import t from 'tap'
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

// `npm start` runs what `npm run build` emits with plain node: nothing may need tsx or a file left behind in the sources.
t.test('the build emits the server alone, and plain node serves it', { timeout: 120_000 }, async (t) => {
  const out = tempDir(t, 'plinth-build-')
  // Packages resolve from the output's own directory upwards, as they do from dist/ in the checkout.
  symlinkSync(join(ROOT, 'node_modules'), join(out, 'node_modules'), 'dir')
  const tsc = spawnSync(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', join(out, 'dist')], { encoding: 'utf8' })
  t.equal(tsc.status, 0, `tsc: ${tsc.stdout}${tsc.stderr}`)
  const emitted = filesUnder(join(out, 'dist'))
  t.ok(emitted.includes('server.js') && emitted.includes('app.js'), 'server.js and app.js at the top, as `npm start` expects')
  t.same(emitted.filter((file) => !file.endsWith('.js')), [], 'JavaScript only')
  t.same(emitted.filter((file) => /^(test|bench|scripts)\//.test(file)), [], 'no tests, benches or scripts')

  const dataDir = tempDir(t)
  const child = spawn(process.execPath, [join(out, 'dist/server.js')], {
    cwd: out,
    env: { PATH: process.env.PATH, HOME: process.env.HOME, PORT: '0', HOST: '127.0.0.1', DATA_DIR: dataDir, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const exited = once(child, 'exit')
  const base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not start: ${output}`)), 30_000)
    child.stdout.on('data', () => {
      const match = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(output)
      if (match !== null) { clearTimeout(timer); resolve(match[1]) }
    })
    child.on('exit', () => { clearTimeout(timer); reject(new Error(`server exited: ${output}`)) })
  })
  const ready = await fetch(`${base}/readyz`)
  t.same([ready.status, await ready.json()], [200, { success: true, data: { status: 'ready', store: 'sqlite' } }])
  t.ok(existsSync(join(dataDir, 'plinth.db')))
  child.kill('SIGTERM')
  const [code] = await exited
  t.equal(code, 0, 'drains and exits on SIGTERM')
})
