import t from 'tap'
import { createHash } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { existsSync, readFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { networkInterfaces } from 'node:os'
import { systemClock } from '../../../services/platform/clock.js'
import { ProcessDriver, probeSandbox } from '../../../services/hosting/process-driver/index.js'
import { probeHealth } from '../../../services/hosting/health-probe.js'
import { isAlive } from '../../../services/hosting/process-driver/process-tree.js'
import { scopeOf } from '../../../services/hosting/network/namespaces.js'
import { intToIpv4, ipv4ToInt } from '../../../services/hosting/network/plan.js'
import { InstanceFailedError, type Artifact, type InstanceEvent, type InstanceSpec, type RunningInstance } from '../../../services/hosting/runtime.js'
import { eventually, get, RecordingSink } from './driver-harness.js'
import { buildInput, FIXTURES, sourceTree, tempDir, TEST_ENV } from './process-driver-helpers.js'

const sandbox = probeSandbox()
const root = join(await tempDir('plinth-hosting-run-', 0o711), 'hosting')
const options = {
  root,
  clock: systemClock,
  sandbox,
  // As the plugin does with DATA_DIR: the whole data directory, the driver's root inside it, is hidden.
  hiddenPaths: [join(root, '..')],
  restart: { initialDelayMs: 50, maxDelayMs: 200, maxAttempts: 3, stableAfterMs: 60_000 },
  timing: { logPollMs: 50, livenessPollMs: 100, healthPollMs: 50 }
}
const driver = new ProcessDriver(options)
const events: InstanceEvent[] = []
driver.onEvent(event => events.push(event))
t.teardown(async () => {
  for (const id of ['hello', 'slow', 'stubborn', 'crashy', 'probe', 'adoptee']) await driver.stop(id, 0)
  // Adopting nothing sweeps whatever of this driver's scope a failed test left running.
  await driver.adopt([], () => new RecordingSink())
  await driver.close()
  await rm(join(root, '..'), { recursive: true, force: true })
})

const probeSource = await sourceTree({
  Procfile: 'web: node probe.js\n',
  'probe.js': `const http = require('node:http')
const fs = require('node:fs')
http.createServer((request, response) => {
  const url = new URL(request.url, 'http://probe')
  const path = url.searchParams.get('path')
  try {
    if (url.pathname === '/write') { fs.writeFileSync(path, 'x'); return response.end('wrote') }
    if (url.pathname === '/read') return response.end(fs.readFileSync(path, 'utf8'))
    if (url.pathname === '/uid') return response.end(String(process.getuid()))
    if (url.pathname === '/hang') return
    if (url.pathname === '/eat') { globalThis.eaten = Buffer.alloc(Number(url.searchParams.get('mb')) * 1024 * 1024, 1); return response.end('ate') }
    response.end('probe')
  } catch (error) { response.end(error.code) }
}).listen(Number(process.env.PORT), process.env.HOST)
`
})
const [hello, crashOnStart, slowHealth, ignoresSigterm, probe] = await Promise.all([
  driver.build(buildInput(join(FIXTURES, 'node-hello'))),
  driver.build(buildInput(join(FIXTURES, 'crash-on-start'))),
  driver.build(buildInput(join(FIXTURES, 'slow-health'))),
  driver.build(buildInput(join(FIXTURES, 'ignores-sigterm'))),
  driver.build(buildInput(probeSource))
])

function spec (instanceId: string, artifact: Artifact, env: Record<string, string> = {}, extra: Partial<InstanceSpec> = {}): InstanceSpec & { log: RecordingSink } {
  return {
    appId: 'app1',
    deploymentId: 'dep1',
    instanceId,
    artifact,
    env: { ...TEST_ENV, ...env },
    limits: { memoryMb: 256, cpus: 0.5, pids: 64 },
    healthCheckPath: '/healthz',
    healthTimeoutMs: 30_000,
    ...extra,
    log: new RecordingSink()
  }
}

/** One request to an instance where the driver said it listens (its namespace's link, or loopback). */
const call = async (instance: RunningInstance, path = '/') => await get(instance.port, path, instance.host)
/**
 * Nothing answers for it any more: on loopback its port is refused; in a
 * namespace of its own the host no longer has its link (an address with no
 * route may still be answered by whatever the host's default route reaches).
 */
const refused = async (instance: RunningInstance) => instance.host === '127.0.0.1'
  ? await call(instance).then(() => false, () => true)
  : !Object.values(networkInterfaces()).flat().some((entry) => entry?.address === intToIpv4(ipv4ToInt(instance.host) - 1))

t.test('an instance answers on its port once healthy, with its identity in the environment and its output in the log', async (t) => {
  const helloSpec = spec('hello', hello, { SECRET_TOKEN: 'swordfish' })
  const running = await driver.start(helloSpec)
  t.match(running, { instanceId: 'hello', appId: 'app1', deploymentId: 'dep1', driver: 'process', host: sandbox.network === null ? '127.0.0.1' : /^169\.254\./, handle: /^\d+$/ })
  t.equal((await call(running)).body, 'hello hello')
  t.match((await call(running, '/built')).body, /^built at /, 'it runs the built artifact')
  await helloSpec.log.seen(new RegExp(`^listening on ${running.port}$`), 'stdout')
  t.ok(helloSpec.log.has(/^starting with SECRET_TOKEN=swordfish$/), 'the app\'s environment reached it')
  const stats = await driver.stats('hello')
  t.ok(stats !== null && stats.memoryBytes > 0 && stats.cpuSeconds >= 0)

  await driver.stop('hello', 2000)
  t.ok(await refused(running), 'stopped means gone')
  t.equal(await driver.stats('hello'), null)
  t.notOk(existsSync(join(root, 'instances', 'hello')), 'its state is removed')
  await driver.stop('hello', 2000)
  t.pass('stopping an unknown instance resolves')
})

t.test('an app that exits before it is healthy fails the start with its code and last stderr line', async (t) => {
  const crashSpec = spec('crash', crashOnStart)
  const error = await driver.start(crashSpec).catch((error: unknown) => error)
  t.type(error, InstanceFailedError)
  t.equal((error as InstanceFailedError).reason, 'exited with code 3 before becoming healthy: cannot start: DATABASE_URL is not set')
  t.ok(crashSpec.log.has(/^cannot start: DATABASE_URL is not set$/, 'stderr'), 'its output still reaches the log')
  t.equal(await driver.stats('crash'), null)
})

t.test('a slow app is waited for; one slower than its health timeout is stopped and refused', async (t) => {
  const running = await driver.start(spec('slow', slowHealth, { SLOW_HEALTH_MS: '300' }))
  t.equal((await call(running, '/healthz')).body, 'slow but ready')
  await driver.stop('slow', 2000)

  const starting = driver.start(spec('stopped-early', slowHealth, { SLOW_HEALTH_MS: '300' }))
  await t.rejects(driver.start(spec('stopped-early', slowHealth)), { message: /already running/ }, 'one start at a time')
  await driver.stop('stopped-early', 2000)
  t.ok(await refused((await starting)), 'a stop during the start applies once it is up')
  t.equal(await driver.stats('stopped-early'), null)

  // Long enough for the app to be listening (and answering 503) on a loaded machine.
  const error = await driver.start(spec('too-slow', slowHealth, { SLOW_HEALTH_MS: '600000' }, { healthTimeoutMs: 3000 })).catch((error: unknown) => error)
  t.type(error, InstanceFailedError)
  t.equal((error as InstanceFailedError).reason, 'unhealthy after 3000 ms: last answer 503')
  t.equal(await driver.stats('too-slow'), null)
})

t.test('a health path that never answers is reported as such', async (t) => {
  const error = await driver.start(spec('mute', probe, {}, { healthCheckPath: '/hang', healthTimeoutMs: 300 })).catch((error: unknown) => error)
  t.type(error, InstanceFailedError)
  // ECONNREFUSED while the app is still starting, ETIMEDOUT once it listens: either way nothing answered.
  t.match((error as InstanceFailedError).reason, /^unhealthy after 300 ms: last answer no answer \((ETIMEDOUT|ECONNREFUSED)\)$/)

  const silent = createServer(() => {})
  await new Promise<void>(resolve => silent.listen(0, '127.0.0.1', resolve))
  t.same(await probeHealth('127.0.0.1', (silent.address() as AddressInfo).port, '/healthz', 100), { error: 'ETIMEDOUT' }, 'a request nothing answers times out')
  silent.closeAllConnections()
  silent.close()
})

t.test('an app that ignores SIGTERM is killed once the grace period ends', async (t) => {
  const stubbornSpec = spec('stubborn', ignoresSigterm)
  const running = await driver.start(stubbornSpec)
  await driver.stop('stubborn', 300)
  t.notOk(isAlive(Number(running.handle)))
  t.ok(await refused(running))
  t.ok(stubbornSpec.log.has(/^SIGTERM received and ignored$/), 'it was asked first')
})

t.test('a crash after health is reported and restarted on a new process', async (t) => {
  const crashySpec = spec('crashy', hello)
  const first = await driver.start(crashySpec)
  process.kill(Number(first.handle), 'SIGKILL')
  await eventually(() => events.some(event => event.type === 'restarted' && event.instanceId === 'crashy'))
  const mine = events.filter(event => event.instanceId === 'crashy')
  t.match(mine[0], { type: 'crashed', instanceId: 'crashy', exitCode: null, signal: 'SIGKILL', reason: 'killed by SIGKILL' })
  const restarted = mine[1] as Extract<InstanceEvent, { type: 'restarted' }>
  t.equal(restarted.attempt, 1)
  t.not(restarted.instance.handle, first.handle)
  t.equal((await call(restarted.instance)).body, 'hello crashy', 'the new process serves')
  t.notOk(isAlive(Number(first.handle)))
  await driver.stop('crashy', 2000)
})

t.test('an instance that stayed up long enough starts its count again; stop and close cancel a pending restart', async (t) => {
  const resilient = new ProcessDriver({ ...options, restart: { ...options.restart, stableAfterMs: 0 } })
  const seen: InstanceEvent[] = []
  resilient.onEvent(event => seen.push(event))
  let running = await resilient.start(spec('resilient', probe, {}, { healthCheckPath: '/' }))
  for (const round of [1, 2]) {
    process.kill(Number(running.handle), 'SIGKILL')
    await eventually(() => seen.filter(event => event.type === 'restarted').length === round)
    const restarted = seen[seen.length - 1] as Extract<InstanceEvent, { type: 'restarted' }>
    t.equal(restarted.attempt, 1, `crash ${round} is a first attempt again`)
    running = restarted.instance
  }
  await resilient.stop('resilient', 0)

  const slow = new ProcessDriver({ ...options, restart: { ...options.restart, initialDelayMs: 600_000 } })
  const slowSeen: InstanceEvent[] = []
  slow.onEvent(event => slowSeen.push(event))
  const stopped = await slow.start(spec('pending-stop', probe, {}, { healthCheckPath: '/' }))
  const closed = await slow.start(spec('pending-close', probe, {}, { healthCheckPath: '/' }))
  process.kill(Number(stopped.handle), 'SIGKILL')
  process.kill(Number(closed.handle), 'SIGKILL')
  await eventually(() => slowSeen.filter(event => event.type === 'crashed').length === 2)
  await slow.stop('pending-stop', 0)
  t.equal(await slow.stats('pending-stop'), null, 'stop forgets an instance waiting to restart')
  await slow.close()
  t.same(slowSeen.map(event => event.type), ['crashed', 'crashed'], 'nothing restarted')
  await resilient.close()
})

t.test('after the last attempt the driver gives up', async (t) => {
  const impatient = new ProcessDriver({ ...options, restart: { ...options.restart, maxAttempts: 0 } })
  const seen: InstanceEvent[] = []
  impatient.onEvent(event => seen.push(event))
  const running = await impatient.start(spec('fragile', hello))
  process.kill(Number(running.handle), 'SIGTERM')
  await eventually(() => seen.some(event => event.type === 'gave-up'))
  t.match(seen, [{ type: 'crashed', instanceId: 'fragile' }, { type: 'gave-up', instanceId: 'fragile', attempts: 0 }])
  await eventually(async () => await impatient.stats('fragile') === null)
  // Forgotten first, then what it held goes (its namespace last).
  await eventually(async () => await refused(running))
  t.ok(await refused(running))
  await impatient.close()
})

t.test('restarts that fail count as attempts until the driver gives up', async (t) => {
  const patient = new ProcessDriver({ ...options, restart: { ...options.restart, maxAttempts: 2 } })
  const seen: InstanceEvent[] = []
  patient.onEvent(event => seen.push(event))
  const doomed = await patient.build(buildInput(probeSource))
  const running = await patient.start(spec('doomed', doomed, {}, { healthCheckPath: '/' }))
  await patient.discard(doomed)
  process.kill(Number(running.handle), 'SIGKILL')
  await eventually(() => seen.some(event => event.type === 'gave-up'))
  t.match(seen, [
    { type: 'crashed', signal: 'SIGKILL' },
    { type: 'crashed', reason: /before becoming healthy|could not start/ },
    { type: 'crashed', reason: /before becoming healthy|could not start/ },
    { type: 'gave-up', instanceId: 'doomed', attempts: 2, reason: /^gave up after 2 restarts; last: .*(before becoming healthy|could not start)/ }
  ], 'each failed restart is a crash of its own, as in every driver')
  await patient.close()
})

t.test('the sandbox holds: read-only artifact, private /tmp, other apps hidden, limits in the cgroup', { skip: sandbox.bwrap === null && 'no bubblewrap here' }, async (t) => {
  t.equal(driver.degradedReason, sandbox.cgroups === null ? sandbox.degradedReason : null, 'nothing is missing on a host with bubblewrap and cgroups')
  const running = await driver.start(spec('probe', probe, {}, { healthCheckPath: '/' }))
  const ask = async (path: string) => (await call(running, path)).body
  t.equal(await ask(`/write?path=${probe.ref}/planted.js`), 'EROFS', 'the artifact is read-only')
  t.equal(await ask('/write?path=/usr/planted'), 'EROFS', 'so is the host')
  const scratch = `/tmp/plinth-scratch-${process.pid}`
  t.equal(await ask(`/write?path=${scratch}`), 'wrote', '/tmp is writable')
  t.notOk(existsSync(scratch), 'and private')
  t.equal(await ask(`/read?path=${hello.ref}/server.js`), 'ENOENT', 'another app\'s artifact is not there')
  t.equal(await ask(`/read?path=${join(root, '..', 'hosting', 'instances', 'probe', 'spec.json')}`), 'ENOENT', 'nor the driver\'s state')
  t.match(await ask('/read?path=/proc/1/cmdline'), /^bwrap/, 'its own process namespace')
  if (process.getuid?.() === 0) t.equal(await ask('/uid'), '65534', 'not root')
  const cgroups = sandbox.cgroups
  if (cgroups?.layout === 'v1') {
    const group = (controller: string, file: string) => readFileSync(join('/sys/fs/cgroup', controller, 'plinth-hosting', scopeOf(root), 'instance-probe', file), 'utf8').trim()
    t.equal(group('memory', 'memory.limit_in_bytes'), String(256 * 1024 * 1024))
    t.equal(group('pids', 'pids.max'), '64')
    t.equal(group('cpu', 'cpu.cfs_quota_us'), '50000')
    t.ok(group('pids', 'cgroup.procs').split('\n').includes(running.handle), 'the process is in its group')
  }
  if (cgroups !== null) {
    // Past its memory limit the kernel kills the app, and supervision takes over.
    await call(running, '/eat?mb=400').catch(() => null)
    await eventually(() => events.some(event => event.type === 'restarted' && event.instanceId === 'probe'))
    t.match(events.find(event => event.instanceId === 'probe'), { type: 'crashed', reason: /^exited with code 137$/ }, 'the memory limit holds')
  }
  await driver.stop('probe', 2000)
  if (cgroups !== null) t.notOk(existsSync(join(cgroups.parents[0], scopeOf(root), 'instance-probe')), 'the group is removed with the instance')
})

t.test('refusals', async (t) => {
  const cases: Array<[string, InstanceSpec, RegExp]> = [
    ['an id that cannot name a directory', spec('../x', hello), /instance id/],
    ['a health path that is not a path', spec('crlf', hello, {}, { healthCheckPath: '/x\r\nHost: evil' }), /health check path/],
    ['a static artifact', spec('static', { ...hello, kind: 'static', command: null }), /not a runnable process artifact/],
    ['an artifact of another host', spec('elsewhere', { ...hello, ref: '/usr/lib' }), /is not on this host/]
  ]
  for (const [name, instance, reason] of cases) await t.rejects(driver.start(instance), { message: reason }, name)
  await driver.start(spec('twice', probe, {}, { healthCheckPath: '/' }))
  await t.rejects(driver.start(spec('twice', probe, {}, { healthCheckPath: '/' })), { message: /already running/ })
  await driver.stop('twice', 0)
})

t.test('a new driver adopts instances that still run, resumes supervision and forgets the rest', async (t) => {
  const before = new ProcessDriver(options)
  const running = await before.start(spec('adoptee', hello, { SECRET_TOKEN: 'kept' }))
  const gone = await before.start(spec('gone', probe, {}, { healthCheckPath: '/' }))
  await before.close()
  process.kill(Number(gone.handle), 'SIGKILL')
  await eventually(() => !isAlive(Number(gone.handle)))
  t.equal((await call(running)).body, 'hello adoptee', 'closing a driver leaves instances running')

  const after = new ProcessDriver(options)
  const seen: InstanceEvent[] = []
  after.onEvent(event => seen.push(event))
  const sink = new RecordingSink()
  const adopted = await after.adopt([
    running,
    gone,
    { ...running, instanceId: 'stranger', handle: String(process.pid) },
    { ...running, instanceId: 'bad/id' },
    { ...running, driver: 'container' }
  ], () => sink)
  t.same(adopted, [running], 'only the live instance that is really ours')
  t.same(await after.adopt([running], () => sink), [running], 'adopting twice changes nothing')
  t.ok(isAlive(process.pid), 'a process that is not ours is left alone')
  t.ok(((await after.stats('adoptee'))?.memoryBytes ?? 0) > 0)

  process.kill(Number(running.handle), 'SIGKILL')
  await eventually(() => seen.some(event => event.type === 'restarted'))
  t.match(seen[0], { type: 'crashed', instanceId: 'adoptee', exitCode: null })
  const restarted = seen[1] as Extract<InstanceEvent, { type: 'restarted' }>
  t.equal((await call(restarted.instance, '/secret-digest')).body, createHash('sha256').update('kept').digest('hex'), 'the environment survives the restart')
  await sink.seen(new RegExp(`^listening on ${restarted.instance.port}$`))
  t.pass('the adopted instance\'s log is followed')
  await after.stop('adoptee', 2000)
  await after.close()
})
