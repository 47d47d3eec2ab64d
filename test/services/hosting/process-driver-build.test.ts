import t from 'tap'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { rm, symlink } from 'node:fs/promises'
import { join } from 'node:path'
import { systemClock } from '../../../services/platform/clock.js'
import { ProcessDriver, probeSandbox } from '../../../services/hosting/process-driver/index.js'
import { BuildCanceledError, BuildFailedError } from '../../../services/hosting/runtime.js'
import { RecordingSink } from './driver-harness.js'
import { buildInput, FIXTURES, sourceTree, tempDir } from './process-driver-helpers.js'
import { digestSource } from '../../../services/hosting/source-tree.js'
import { scopeOf } from '../../../services/hosting/network/namespaces.js'

// Searchable by the sandbox user, as a real DATA_DIR should be, so the full sandbox applies.
const root = join(await tempDir('plinth-hosting-build-', 0o711), 'hosting')
const sandbox = probeSandbox()
const driver = new ProcessDriver({ root, clock: systemClock, sandbox })
const artifactsDir = join(root, 'artifacts')
t.teardown(async () => { await driver.close(); await rm(join(root, '..'), { recursive: true, force: true }) })

t.test('a Node app is installed and built in its own artifact directory, never in the source', async (t) => {
  const input = buildInput(join(FIXTURES, 'node-hello'))
  const artifact = await driver.build(input)
  t.match(artifact, { driver: 'process', kind: 'node', command: ['node', 'server.js'], sourceDigest: /^[0-9a-f]{64}$/ })
  t.ok(artifact.ref.startsWith(join(artifactsDir, artifact.id)))
  t.match(readFileSync(join(artifact.ref, 'built.txt'), 'utf8'), /^built at /, 'the build script ran')
  t.notOk(existsSync(join(FIXTURES, 'node-hello', 'built.txt')), 'the source is untouched')
  t.ok(artifact.sizeBytes > 0)
  t.ok(artifact.buildSeconds >= 0)
  t.ok(input.log.has(/^\$ npm ci$/, 'system'), 'a lockfile means npm ci')
  t.ok(input.log.has(/^build finished$/, 'stdout'), 'the build output streams line by line')
  t.ok(input.log.has(/^Start command: node server\.js$/, 'system'))
  for (const parent of sandbox.cgroups?.parents ?? []) t.notOk(existsSync(join(parent, scopeOf(root), `build-${artifact.id}`)), 'the build\'s cgroup is removed')

  const again = await driver.build(buildInput(join(FIXTURES, 'node-hello')))
  t.not(again.id, artifact.id, 'every build is a new artifact')
  t.equal(again.sourceDigest, artifact.sourceDigest, 'the same tree digests the same')
  t.equal(artifact.sourceDigest, await digestSource(join(FIXTURES, 'node-hello')), 'by the shared scheme, as the container driver digests it')
  await driver.discard(again)
  t.notOk(existsSync(join(artifactsDir, again.id)), 'discard removes the artifact')
  await driver.discard({ ...again, id: '../..' })
  t.ok(existsSync(artifactsDir), 'an id that is not one names no directory')
})

t.test('with dependencies but no lockfile npm install runs; a start script that is not plain `node …` runs through npm', async (t) => {
  const source = await sourceTree({
    'package.json': JSON.stringify({ name: 'x', version: '1.0.0', dependencies: { left: 'file:./left' }, scripts: { start: 'NODE_ENV=production node app.js' } }),
    'left/package.json': JSON.stringify({ name: 'left', version: '1.0.0' })
  })
  const input = buildInput(source)
  const artifact = await driver.build(input)
  t.same(artifact.command, ['npm', 'start'])
  t.ok(input.log.has(/^\$ npm install$/, 'system'))
  t.notOk(input.log.has(/npm run build/), 'no build script, no build step')

  const withProcfile = await sourceTree({ 'package.json': JSON.stringify({ name: 'x', version: '1.0.0', scripts: { start: 'node app.js' } }), Procfile: 'web: node --enable-source-maps web.js\n' })
  const procfileInput = buildInput(withProcfile)
  t.same((await driver.build(procfileInput)).command, ['node', '--enable-source-maps', 'web.js'], 'a Procfile\'s web line wins over the start script')
  t.notOk(procfileInput.log.has(/^\$ npm/), 'nothing to install, no npm step')
})

t.test('a Procfile app starts by its web line, with no install', async (t) => {
  const input = buildInput(join(FIXTURES, 'procfile-app'))
  const artifact = await driver.build(input)
  t.match(artifact, { kind: 'procfile', command: ['node', 'web.js'] })
  t.notOk(input.log.has(/npm/))
  const explicit = await driver.build(buildInput(join(FIXTURES, 'procfile-app'), 'procfile'))
  t.equal(explicit.kind, 'procfile')
})

t.test('a static site is copied as it is; its web root may be dist, public or build', async (t) => {
  const site = await driver.build(buildInput(join(FIXTURES, 'static-site')))
  t.match(site, { kind: 'static', command: null })
  t.ok(existsSync(join(site.ref, 'about', 'index.html')))
  t.ok(existsSync(join(site.ref, 'assets', 'app.js')))

  const dist = await driver.build(buildInput(await sourceTree({ 'README.md': 'x', 'dist/index.html': '<h1>spa</h1>' })))
  t.equal(dist.kind, 'static')
  t.ok(dist.ref.endsWith('/app/dist'), 'the web root is the folder holding index.html')
})

t.test('refusals name what is wrong and leave no artifact behind', async (t) => {
  const before = readdirSync(artifactsDir).length
  const cases: Array<[string, Record<string, string>, 'auto' | 'static' | 'procfile', RegExp]> = [
    ['nothing to build', { 'notes.txt': 'x' }, 'auto', /no package\.json, Procfile or index\.html/],
    ['static without an index', { 'notes.txt': 'x' }, 'static', /needs an index\.html/],
    ['a Procfile without a web line', { Procfile: 'worker: node worker.js\n' }, 'procfile', /The Procfile has no web line/],
    ['a Procfile that needs a shell', { Procfile: 'web: node web.js --port $PORT\n' }, 'auto', /needs a shell \(it uses "\$"\)/],
    ['an empty web line', { Procfile: 'web:   \n' }, 'auto', /no command/],
    ['a package.json that is not JSON', { 'package.json': '{ nope' }, 'auto', /package\.json is not valid/],
    ['a package.json that is not an object', { 'package.json': '[1]' }, 'auto', /package\.json is not valid: not an object/],
    ['a Node app with no way to start', { 'package.json': '{ "name": "x", "version": "1.0.0" }' }, 'auto', /No start command/]
  ]
  t.match(await driver.build(buildInput(join(artifactsDir, 'no-such-source'))).catch((error: unknown) => error), { reason: /^The build could not run: ENOENT/ })
  for (const [name, files, kind, reason] of cases) {
    const error = await driver.build(buildInput(await sourceTree(files), kind)).catch((error: unknown) => error)
    t.type(error, BuildFailedError, name)
    t.match((error as BuildFailedError).reason, reason, name)
  }
  t.equal(readdirSync(artifactsDir).length, before)
})

t.test('a link out of the source is refused; one inside it is kept', async (t) => {
  const outside = await sourceTree({ 'index.html': 'x' })
  await symlink('/etc/passwd', join(outside, 'passwd'))
  await t.rejects(driver.build(buildInput(outside)), { message: /passwd is a link to \/etc\/passwd, outside the source/ })

  const inside = await sourceTree({ 'index.html': 'x' })
  await symlink('index.html', join(inside, 'home.html'))
  const artifact = await driver.build(buildInput(inside))
  t.equal(readFileSync(join(artifact.ref, 'home.html'), 'utf8'), 'x')
})

t.test('a failing build step fails the build with the step, its exit code and its last lines', async (t) => {
  const source = await sourceTree({
    'package.json': JSON.stringify({ name: 'x', version: '1.0.0', scripts: { build: 'node -e "console.error(\'bundler: missing entry\'); process.exit(7)"', start: 'node x.js' } })
  })
  const error = await driver.build(buildInput(source)).catch((error: unknown) => error)
  t.type(error, BuildFailedError)
  t.match((error as BuildFailedError).reason, /^npm run build exited with code 7:\n[^]*bundler: missing entry/)
})

t.test('canceling stops the running step and rejects with BuildCanceledError', async (t) => {
  const source = await sourceTree({
    'package.json': JSON.stringify({ name: 'x', version: '1.0.0', scripts: { build: 'node -e "console.log(\'bundling\'); setTimeout(() => {}, 600000)"', start: 'node x.js' } })
  })
  const before = readdirSync(artifactsDir).length
  const abort = new AbortController()
  const log = new RecordingSink()
  const building = driver.build(buildInput(source, 'auto', abort.signal, log))
  await log.seen(/^bundling$/)
  abort.abort()
  t.type(await building.catch((error: unknown) => error), BuildCanceledError)
  t.equal(readdirSync(artifactsDir).length, before, 'the half-built artifact is removed')

  t.type(await driver.build(buildInput(source, 'auto', abort.signal)).catch((error: unknown) => error), BuildCanceledError, 'an aborted signal builds nothing')

  const early = new AbortController()
  const earlyLog = new RecordingSink()
  earlyLog.write = (line, stream) => { if (line === 'Building a node app') early.abort(); RecordingSink.prototype.write.call(earlyLog, line, stream) }
  t.type(await driver.build(buildInput(source, 'auto', early.signal, earlyLog)).catch((error: unknown) => error), BuildCanceledError, 'canceled between steps')
  t.notOk(earlyLog.has(/^\$ npm/), 'no step started')
})
