import { createHash, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { createServer, type AddressInfo, type Server } from 'node:net'
import { networkInterfaces } from 'node:os'
import { fileURLToPath } from 'node:url'
import Docker from 'dockerode'
import t from 'tap'
import { ContainerDriver } from '../../../services/hosting/container-driver/index.js'
import { BuildCanceledError, BuildFailedError, InstanceFailedError, type Artifact, type InstanceSpec, type RunningInstance } from '../../../services/hosting/runtime.js'
import { tempDir } from '../../helper.js'
import { EventLog, eventually, get, RecordingSink, rejection, SMALL_LIMITS } from './driver-harness.js'
import { startPodman } from './podman-engine.js'
import { digestSource } from '../../../services/hosting/source-tree.js'
import { scopeOf } from '../../../services/hosting/network/namespaces.js'

const fixtures = fileURLToPath(new URL('../../fixtures/hosting/', import.meta.url))
const SECRET = 'not-in-any-image-7f3a'
// Build caches live on the engine's host, outside any temp dir: the tests' builds share one, kept between runs.
const TEST_PROJECT = 'plinth-test'

const engine = await startPodman(t)
if (engine !== null) {
  const docker = new Docker({ socketPath: engine.socketPath })
  const artifactsDir = tempDir(t, 'plinth-artifacts-')
  const options = { socketPath: engine.socketPath, baseImage: engine.baseImage, artifactsDir, restart: { maxAttempts: 2, initialDelayMs: 100, maxDelayMs: 200, stableAfterMs: 3_600_000 } }
  const driver = new ContainerDriver(options)
  const events = new EventLog()
  driver.onEvent(events.listener)
  t.teardown(async () => await driver.close())

  let counter = 0
  const built: Artifact[] = []
  async function build (app: string, env: Record<string, string> = {}, sourceDir = join(fixtures, app), projectId = TEST_PROJECT): Promise<{ artifact: Artifact, log: RecordingSink }> {
    const log = new RecordingSink()
    const artifact = await driver.build({ projectId, appId: `app-${app}`, deploymentId: `dep-${++counter}`, sourceDir, kind: 'auto', env, log, signal: new AbortController().signal })
    built.push(artifact)
    return { artifact, log }
  }
  t.teardown(async () => { for (const artifact of built) await driver.discard(artifact).catch(() => undefined) })

  // The engine is the host's, shared with other runs and whatever they left: an instance id of this run is this run's alone.
  const run = randomBytes(4).toString('hex')
  function spec (artifact: Artifact, overrides: Partial<InstanceSpec> = {}): InstanceSpec {
    const instanceId = `inst-${run}-${++counter}`
    return { appId: 'app', deploymentId: 'dep', instanceId, artifact, env: {}, limits: SMALL_LIMITS, healthCheckPath: '/', healthTimeoutMs: 20_000, log: new RecordingSink(), ...overrides }
  }

  async function gone (instance: RunningInstance): Promise<boolean> {
    return await docker.getContainer(instance.handle).inspect().then(() => false, (error: { statusCode?: number }) => error.statusCode === 404)
  }

  const hello = await build('node-hello', { SECRET_TOKEN: SECRET })
  const procfile = await build('procfile-app')
  const crashing = await build('crash-on-start')
  const slow = await build('slow-health')
  const stubborn = await build('ignores-sigterm')

  t.test('a node app builds into a labelled image, its build script run and its build secrets kept out of the image', async (t) => {
    const { artifact, log } = hello
    t.match(artifact, { driver: 'container', kind: 'node', ref: /^sha256:[0-9a-f]{64}$/, command: ['node', 'server.js'] })
    t.equal(artifact.sourceDigest, await digestSource(join(fixtures, 'node-hello')), 'by the shared scheme, as the process driver digests it')
    t.ok(artifact.sizeBytes > 0)
    t.match(log.text('stdout'), /build finished/)
    const image = await docker.getImage(artifact.ref).inspect()
    t.match(image.Config.Labels, { 'plinth.app': 'app-node-hello', 'plinth.artifact': artifact.id, 'plinth.driver': 'container' })
    t.match(image.Config.Labels['plinth.deployment'], /^dep-\d+$/)
    const history = await docker.getImage(artifact.ref).history()
    t.notMatch(JSON.stringify(image) + JSON.stringify(history), SECRET)
    t.same(procfile.artifact.command, ['node', 'web.js'])
  })

  t.test('the same source builds to the same digest', async (t) => {
    const again = await build('procfile-app')
    t.equal(again.artifact.sourceDigest, procfile.artifact.sourceDigest)
    t.not(again.artifact.sourceDigest, hello.artifact.sourceDigest)
    t.not(again.artifact.ref, procfile.artifact.ref, 'each build is its own image')
    await driver.discard(again.artifact)
    t.match(await rejection(docker.getImage(again.artifact.ref).inspect()), { statusCode: 404 })
    await driver.discard(again.artifact)
    const refused = await rejection(driver.start(spec(again.artifact)))
    t.type(refused, InstanceFailedError)
    t.match(refused, { reason: /^the engine refused the instance: / })
  })

  t.test('a node app answers on its published port with the environment, limits and labels it was given', async (t) => {
    const log = new RecordingSink()
    const instanceSpec = spec(hello.artifact, { env: { SECRET_TOKEN: 'runtime-secret' }, log, healthCheckPath: '/healthz' })
    const instance = await driver.start(instanceSpec)
    t.match(instance, { instanceId: instanceSpec.instanceId, driver: 'container', host: driver.degradedReason === null ? /^169\.254\./ : '127.0.0.1', handle: /^[0-9a-f]{64}$/ })
    t.same(await get(instance.port, '/', instance.host), { status: 200, body: `hello ${instanceSpec.instanceId}` })
    t.match((await get(instance.port, '/built', instance.host)).body, /^built at /)
    t.equal((await get(instance.port, '/secret-digest', instance.host)).body, createHash('sha256').update('runtime-secret').digest('hex'))
    await log.seen(/listening on 8080/)
    t.match(log.lines, [{ line: 'starting with SECRET_TOKEN=runtime-secret', stream: 'stdout' }])

    const info = await docker.getContainer(instance.handle).inspect()
    t.match(info.HostConfig, { Memory: 128 * 1048576, NanoCpus: 500_000_000, PidsLimit: 64, RestartPolicy: { Name: 'no' } })
    t.match(info.Config.Labels, { 'plinth.instance': instanceSpec.instanceId, 'plinth.health-path': '/healthz' })

    const stats = await driver.stats(instance.instanceId)
    t.ok(stats !== null && stats.memoryBytes > 0 && stats.cpuSeconds > 0, 'cpu time and memory in use are reported')
    t.equal(await driver.stats('no-such-instance'), null)

    await driver.stop(instance.instanceId, 10_000)
    t.ok(await gone(instance), 'the container is removed')
    t.equal(await driver.stats(instance.instanceId), null)
    await driver.stop(instance.instanceId, 1000)
    await driver.stop('never-started', 1000)
  })

  t.test('a Procfile app runs its web command', async (t) => {
    const instance = await driver.start(spec(procfile.artifact))
    t.same(await get(instance.port, '/', instance.host), { status: 200, body: 'procfile web' })
    await driver.stop(instance.instanceId, 1000)
  })

  t.test('an instance is in a network namespace of its own: reached over its link, it reaches neither the host nor another instance', async (t) => {
    const probe = await build('probe-app')
    const a = await driver.start(spec(probe.artifact))
    const b = await driver.start(spec(probe.artifact))
    t.teardown(async () => { for (const one of [a, b]) await driver.stop(one.instanceId, 0) })
    if (driver.degradedReason !== null) {
      t.comment(`instances share the engine's network here: ${driver.degradedReason}`)
      return
    }
    t.not(a.host, b.host, 'each its own address')
    t.match((await docker.getContainer(a.handle).inspect()).HostConfig, { NetworkMode: /^ns:\/proc\/\d+\/ns\/net$/ })
    const servers: Server[] = []
    t.teardown(() => { for (const server of servers) server.close() })
    const listen = async (host: string): Promise<number> => {
      const server = createServer((socket) => socket.end('secret\n'))
      servers.push(server)
      await new Promise<void>((resolve) => server.listen(0, host, resolve))
      return (server.address() as AddressInfo).port
    }
    const [loopbackPort, anyPort] = [await listen('127.0.0.1'), await listen('0.0.0.0')]
    const hostAddress = Object.entries(networkInterfaces()).filter(([name]) => !name.startsWith('plv')).flatMap(([, entries]) => entries ?? [])
      .find((entry) => entry.family === 'IPv4' && !entry.internal)?.address
    const ask = async (path: string): Promise<string> => (await get(a.port, path, a.host)).body
    t.equal(await ask(`/connect?host=127.0.0.1&port=${loopbackPort}`), 'error:ECONNREFUSED', 'the host\'s loopback is not its loopback')
    t.equal(await ask(`/connect?host=${b.host}&port=${b.port}`), 'error:EACCES', 'another instance is out of reach')
    t.equal(await ask(`/connect?host=10.255.255.1&port=${anyPort}`), 'error:EACCES', 'so is a private address')
    if (hostAddress !== undefined) t.equal(await ask(`/connect?host=${hostAddress}&port=${anyPort}`), 'error:EACCES', 'and the host\'s own address')
    t.match(await ask('/read?path=/etc/resolv.conf'), /^nameserver 10\.0\.2\.3$/m, 'names resolve through slirp4netns\'s forwarder')
  })

  t.test('a build\'s steps run in an outbound-only namespace: they reach neither the host\'s loopback nor a private address', async (t) => {
    if (driver.degradedReason !== null) {
      t.comment(`builds share the engine's network here: ${driver.degradedReason}`)
      return
    }
    const server = createServer((socket) => socket.end('secret\n'))
    t.teardown(() => server.close())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const source = tempDir(t, 'plinth-build-network-')
    // Each attempt prints what it met; the host's listener answers `secret` to a step that reaches it.
    const probe = [
      'const net = require("net"); const fs = require("fs")',
      'const reach = (host, port) => new Promise((resolve) => { const socket = net.connect(Number(port), host); socket.setTimeout(5000, () => { socket.destroy(); resolve("timeout") }); socket.on("data", (data) => { socket.destroy(); resolve("answered:" + String(data).trim()) }); socket.on("error", (error) => resolve("error:" + error.code)) })',
      '(async () => { console.log("loopback " + await reach("127.0.0.1", process.env.LISTENER_PORT)); console.log("private " + await reach("10.255.255.1", 80)); console.log(fs.readFileSync("/etc/resolv.conf", "utf8")) })()'
    ].join(';\n')
    writeFileSync(join(source, 'probe.js'), probe)
    writeFileSync(join(source, 'package.json'), JSON.stringify({ name: 'build-network', scripts: { build: 'node probe.js', start: 'node x.js' } }))
    const { log } = await build('build-network', { LISTENER_PORT: String((server.address() as AddressInfo).port) }, source)
    const output = log.text('stdout')
    t.match(output, /^loopback error:ECONNREFUSED$/m, 'the host\'s loopback is not the step\'s loopback')
    t.match(output, /^private error:EACCES$/m, 'a private address is refused')
    t.match(output, /^nameserver 10\.0\.2\.3$/m, 'names resolve through slirp4netns\'s forwarder')
    const left = await readdir(join('/run/plinth-hosting/networks', scopeOf(artifactsDir))).catch(() => [] as string[])
    t.same(left.filter((file) => file.startsWith('build-')), [], 'the build\'s namespace is gone with it')
  })

  t.test('an app that exits on start is refused with its exit code, its output logged and its container removed', async (t) => {
    const log = new RecordingSink()
    const instanceSpec = spec(crashing.artifact, { log })
    const failure = await rejection(driver.start(instanceSpec))
    t.type(failure, InstanceFailedError)
    t.match(failure, { reason: 'exited with code 3' })
    t.match(log.text('stderr'), /cannot start: DATABASE_URL is not set/)
    t.same(await docker.listContainers({ all: true, filters: { label: [`plinth.instance=${instanceSpec.instanceId}`] } }), [])
  })

  t.test('start waits for health; an app that never gets healthy is refused and removed', async (t) => {
    const ready = await driver.start(spec(slow.artifact, { env: { SLOW_HEALTH_MS: '1500' }, healthCheckPath: '/healthz' }))
    t.same(await get(ready.port, '/healthz', ready.host), { status: 200, body: 'slow but ready' })
    await driver.stop(ready.instanceId, 1000)

    const neverSpec = spec(slow.artifact, { env: { SLOW_HEALTH_MS: '600000' }, healthCheckPath: '/healthz', healthTimeoutMs: 800 })
    const failure = await rejection(driver.start(neverSpec))
    t.type(failure, InstanceFailedError)
    t.match(failure, { reason: 'unhealthy after 800 ms' })

    // A path no HTTP request can carry is refused before any container is made, as by every driver.
    const unsendable = await rejection(driver.start(spec(procfile.artifact, { healthCheckPath: 'has space', healthTimeoutMs: 300 })))
    t.match(unsendable, { reason: 'the health check path must be a URL path starting with /' })
    t.same(await docker.listContainers({ all: true, filters: { label: [`plinth.instance=${neverSpec.instanceId}`] } }), [])
  })

  t.test('an app that ignores SIGTERM is killed after the grace period', async (t) => {
    const log = new RecordingSink()
    const instance = await driver.start(spec(stubborn.artifact, { log }))
    await driver.stop(instance.instanceId, 1000)
    t.match(log.text('stdout'), /SIGTERM received and ignored/)
    t.ok(await gone(instance))
  })

  async function killProcess (instance: RunningInstance): Promise<void> {
    const { State } = await docker.getContainer(instance.handle).inspect()
    process.kill(State.Pid, 'SIGKILL')
  }

  t.test('a crash after health is reported and the instance restarted', async (t) => {
    const log = new RecordingSink()
    const instance = await driver.start(spec(hello.artifact, { healthCheckPath: '/healthz', log }))
    await killProcess(instance)
    t.match(await events.next('crashed', instance.instanceId), { reason: 'killed by SIGKILL', exitCode: null, signal: 'SIGKILL' })
    const restarted = await events.next('restarted', instance.instanceId)
    t.equal(restarted.attempt, 1)
    t.same(await get(restarted.instance.port, '/', restarted.instance.host), { status: 200, body: `hello ${instance.instanceId}` })
    t.match(log.text('system'), /Instance killed by SIGKILL/)
    await driver.stop(instance.instanceId, 1000)
    t.ok(await gone(instance))
  })

  t.test('restarts that fail are reported each, then given up after the limit', async (t) => {
    // Healthy on its first run; every later run finds its marker in the container's filesystem and exits.
    const source = tempDir(t, 'plinth-second-run-')
    writeFileSync(join(source, 'Procfile'), 'web: node web.js\n')
    writeFileSync(join(source, 'web.js'), [
      "const fs = require('node:fs')",
      "if (fs.existsSync('/tmp/ran-before')) { console.error('refusing a second run'); process.exit(4) }",
      "fs.writeFileSync('/tmp/ran-before', 'yes')",
      "require('node:http').createServer((q, r) => r.end('first run')).listen(Number(process.env.PORT), process.env.HOST)"
    ].join('\n'))
    const { artifact } = await build('second-run', {}, source)
    const instance = await driver.start(spec(artifact))
    await killProcess(instance)
    t.match(await events.next('crashed', instance.instanceId), { signal: 'SIGKILL' })
    t.match(await events.next('crashed', instance.instanceId), { reason: 'exited with code 4', exitCode: 4, signal: null })
    t.match(await events.next('crashed', instance.instanceId), { reason: 'exited with code 4' })
    t.match(await events.next('gave-up', instance.instanceId), { attempts: 2, reason: 'gave up after 2 restarts; last: exited with code 4' })
    t.equal(events.events.filter((event) => event.instanceId === instance.instanceId).length, 0, 'no restart was reported')
    await eventually(async () => await gone(instance), 'the given-up container is removed')
  })

  t.test('a new driver adopts the instances still running and forgets the rest', async (t) => {
    const first = await driver.start(spec(hello.artifact, { healthCheckPath: '/healthz' }))
    const dead = await driver.start(spec(procfile.artifact))
    const orphan = await driver.start(spec(procfile.artifact))
    await driver.close()
    await docker.getContainer(dead.handle).stop({ t: 0 })

    // Started a few minutes later: containers younger than two minutes may be another node's still starting, and stay.
    const later = { now: () => new Date(Date.now() + 180_000), nowMs: () => Date.now() + 180_000 }
    const successor = new ContainerDriver({ ...options, clock: later })
    const successorEvents = new EventLog()
    successor.onEvent(successorEvents.listener)
    t.teardown(async () => await successor.close())
    const logs = new Map<string, RecordingSink>()
    const foreign = { ...first, instanceId: 'someone-else', handle: first.handle }
    const missing = { ...first, instanceId: 'missing', handle: 'f'.repeat(64) }
    const adopted = await successor.adopt([first, dead, foreign, missing], (instanceId) => {
      const sink = new RecordingSink()
      logs.set(instanceId, sink)
      return sink
    })
    t.same(adopted.map((instance) => [instance.instanceId, instance.port]), [[first.instanceId, first.port]])
    t.same(await successor.adopt([first], () => new RecordingSink()), adopted, 'adopting again returns the watched instance')
    t.ok(await gone(dead), 'a stopped container is removed')
    t.ok(await gone(orphan), 'so is a running one no instance of the store names (its app was deleted meanwhile)')
    t.equal((await get(first.port, '/', first.host)).body, `hello ${first.instanceId}`)
    t.ok(await successor.stats(first.instanceId))

    const { State } = await docker.getContainer(first.handle).inspect()
    process.kill(State.Pid, 'SIGKILL')
    await successorEvents.next('crashed', first.instanceId)
    await successorEvents.next('restarted', first.instanceId)
    await logs.get(first.instanceId)?.seen(/listening on 8080/)

    // A driver that adopted nothing still stops an instance, found by its label.
    const bystander = new ContainerDriver(options)
    await bystander.stop(first.instanceId, 1000)
    t.ok(await gone(first))
    await bystander.close()
  })

  t.test('a build is canceled through its signal, leaving no image', async (t) => {
    const source = tempDir(t, 'plinth-slow-build-')
    writeFileSync(join(source, 'package.json'), JSON.stringify({ name: 'slow-build', scripts: { build: 'node -e "console.log(\'build begins\'); setTimeout(() => {}, 4000)"', start: 'node server.js' } }))
    const log = new RecordingSink()
    const controller = new AbortController()
    const building = driver.build({ projectId: TEST_PROJECT, appId: 'app-slow', deploymentId: 'dep-canceled', sourceDir: source, kind: 'auto', env: {}, log, signal: controller.signal })
    await log.seen(/build begins/)
    controller.abort()
    t.type(await rejection(building), BuildCanceledError)
    t.same(await docker.listImages({ filters: { label: ['plinth.deployment=dep-canceled'] } }), [])

    t.type(await rejection(driver.build({ projectId: TEST_PROJECT, appId: 'app-slow', deploymentId: 'dep-x', sourceDir: source, kind: 'auto', env: {}, log, signal: AbortSignal.abort() })), BuildCanceledError)
  })

  t.test('a failing build rejects with its last lines', async (t) => {
    const source = tempDir(t, 'plinth-failing-build-')
    writeFileSync(join(source, 'package.json'), JSON.stringify({ name: 'failing', scripts: { build: 'node -e "console.error(\'compile error in app.ts\'); process.exit(7)"', start: 'node x.js' } }))
    const failure = await rejection(build('failing', {}, source))
    t.type(failure, BuildFailedError)
    t.match((failure as BuildFailedError).reason, /exit status 7[^]*compile error in app\.ts/)
  })

  t.test('the builds of one project share an npm cache that no other project\'s build sees', async (t) => {
    const planter = tempDir(t, 'plinth-cache-planter-')
    writeFileSync(join(planter, 'package.json'), JSON.stringify({ name: 'planter', scripts: { build: 'node -e "require(\'fs\').writeFileSync(process.env.npm_config_cache + \'/planted.txt\', \'x\')"', start: 'node x.js' } }))
    const reader = tempDir(t, 'plinth-cache-reader-')
    writeFileSync(join(reader, 'package.json'), JSON.stringify({ name: 'reader', scripts: { build: 'node -e "console.log(\'planted: \' + require(\'fs\').existsSync(process.env.npm_config_cache + \'/planted.txt\'))"', start: 'node x.js' } }))
    // The engine keeps cache mounts on its host, outside any temp dir, so the names are fixed and reused by every run;
    // no build ever plants anything in theirs.
    const [ours, theirs] = ['plinth-test-ours', 'plinth-test-theirs']
    await build('planter', {}, planter, ours)
    t.match((await build('reader', {}, reader, ours)).log.text('stdout'), /planted: true/, 'the project\'s next build finds what its last one left in the cache')
    t.match((await build('reader', {}, reader, theirs)).log.text('stdout'), /planted: false/, 'another project\'s build does not')
    await driver.discardBuildCache(ours)
    t.match((await build('reader', {}, reader, ours)).log.text('stdout'), /planted: false/, 'discarding the project\'s cache empties it')
  })

  t.test('source that cannot be built is refused before the engine sees it', async (t) => {
    const empty = tempDir(t, 'plinth-empty-source-')
    const unknown = await rejection(build('empty', {}, empty))
    t.type(unknown, BuildFailedError)
    t.match(unknown, { reason: /^Cannot tell how to build this source/ })
    const badName = await rejection(build('node-hello', { 'NOT A NAME': 'x' }))
    t.type(badName, BuildFailedError)
    t.match(badName, { reason: /cannot be a variable: "NOT A NAME"/ })
  })

  t.test('a static site becomes a directory the gateway serves, not an image', async (t) => {
    const { artifact, log } = await build('static-site')
    t.match(artifact, { driver: 'container', kind: 'static', command: null, sourceDigest: /^[0-9a-f]{64}$/ })
    t.ok(existsSync(join(artifact.ref, 'index.html')) && existsSync(join(artifact.ref, 'about')))
    t.ok(artifact.sizeBytes > 0)
    t.match(log.text('system'), /served from the source root/)
    t.type(await rejection(driver.start(spec(artifact))), InstanceFailedError)
    await driver.discard(artifact)
    t.notOk(existsSync(artifact.ref))

    const nested = tempDir(t, 'plinth-dist-site-')
    mkdirSync(join(nested, 'dist'))
    writeFileSync(join(nested, 'dist', 'index.html'), '<h1>dist</h1>')
    const fromDist = await build('dist-site', {}, nested)
    t.ok(existsSync(join(fromDist.artifact.ref, 'index.html')))
    t.match(fromDist.log.text('system'), /served from dist\//)
    t.ok(fromDist.artifact.ref.endsWith(`${fromDist.artifact.id}/dist`), 'the web root is the folder holding index.html')
  })
}
