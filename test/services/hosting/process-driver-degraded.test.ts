import t from 'tap'
import { execFileSync } from 'node:child_process'
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { systemClock } from '../../../services/platform/clock.js'
import { Cgroup, probeCgroups } from '../../../services/hosting/process-driver/cgroups.js'
import { ProcessDriver, probeSandbox } from '../../../services/hosting/process-driver/index.js'
import { LogTail } from '../../../services/hosting/process-driver/log-tail.js'
import { spawnSandboxed } from '../../../services/hosting/process-driver/sandbox.js'
import { probeNetwork } from '../../../services/hosting/network/namespaces.js'
import { get, RecordingSink } from './driver-harness.js'
import { buildInput, FIXTURES, sourceTree, tempDir, TEST_ENV } from './process-driver-helpers.js'

function realBwrap (): string {
  return execFileSync('/bin/sh', ['-c', 'command -v bwrap'], { encoding: 'utf8' }).trim()
}

const scratch = await tempDir('plinth-hosting-degraded-', 0o711)
t.teardown(async () => await rm(scratch, { recursive: true, force: true }))

t.test('what is missing is said exactly', async (t) => {
  const off = probeSandbox({ bwrap: null, cgroupRoot: join(scratch, 'no-cgroups') })
  t.match(off, { bwrap: null, cgroups: null })
  t.match(off.degradedReason, /^bubblewrap is turned off, so instances share the host's filesystem, process view and network; no cgroup v1 memory hierarchy at .*no-cgroups\/memory and no cgroup v2 at .*no-cgroups, so no memory, CPU or pids limits apply$/)
  t.match(probeSandbox({ bwrap: join(scratch, 'no-bwrap') }).degradedReason, /bubblewrap \(.*no-bwrap\) cannot run: ENOENT/)
  t.match(probeSandbox({ bwrap: '/bin/false' }).degradedReason, /bubblewrap \(\/bin\/false\) cannot create its namespaces/)
  t.same(probeNetwork([], join(scratch, 'no-tools')), process.getuid?.() === 0
    ? { missing: 'unshare is not installed (iproute2, iptables and util-linux are needed), so instances cannot have a network namespace of their own' }
    : { missing: 'the server does not run as root, so it cannot give instances a network namespace of their own' })
  t.match(probeSandbox({ network: null, cgroupRoot: join(scratch, 'no-cgroups') }), { network: null, networks: null }, 'namespaces turned off')
})

t.test('a bubblewrap that cannot refuse nested user namespaces still sandboxes, and says what it lacks', { skip: probeSandbox({ network: null }).bwrap === null && 'no working bubblewrap here' }, async (t) => {
  // bubblewrap before 0.8 knows no --disable-userns: this one is the host's, answering that option as those do.
  const older = join(scratch, 'bwrap-0.7')
  writeFileSync(older, `#!/bin/sh\nfor arg; do [ "$arg" = --disable-userns ] && { echo 'bwrap: Unknown option --disable-userns' >&2; exit 1; }; done\nexec ${realBwrap()} "$@"\n`, { mode: 0o755 })
  const host = probeSandbox({ bwrap: older, network: null, cgroupRoot: join(scratch, 'no-cgroups') })
  t.equal(host.bwrap, older)
  t.match(host.degradedReason, `bubblewrap (${older}) cannot refuse nested user namespaces (bwrap: Unknown option --disable-userns), so apps may make their own`)
  t.notOk(host.namespaces.includes('--disable-userns'))
  const child = await spawnSandboxed(host, { argv: ['/bin/sh', '-c', 'ls /'], cwd: '/', env: { PATH: '/usr/bin:/bin' }, readOnly: [], writable: [], hidden: [], cgroup: null, stdout: 'pipe', stderr: 'pipe' })
  let listed = ''
  child.stdout?.on('data', (chunk: Buffer) => { listed += chunk.toString() })
  t.equal(await new Promise((resolve) => child.once('close', resolve)), 0)
  t.notOk(listed.split('\n').includes('home'), 'on its minimal root all the same')
  t.ok(probeSandbox({ network: null }).namespaces.includes('--disable-userns'), 'the host\'s own bubblewrap refuses them')
})

t.test('a driver root the sandbox user cannot reach runs sandboxes as the server\'s user, and says so', { skip: process.getuid?.() !== 0 && 'only root drops to another user' }, async (t) => {
  const closed = await tempDir('plinth-hosting-closed-')
  const driver = new ProcessDriver({ root: join(closed, 'hosting'), clock: systemClock, sandbox: probeSandbox() })
  t.match(driver.degradedReason, /the sandbox user 65534 cannot reach .*hosting \(a parent directory lacks o\+x\), so sandboxed processes run as the server's user/)
  const artifact = await driver.build(buildInput(join(FIXTURES, 'procfile-app')))
  t.equal(artifact.kind, 'procfile')
  await driver.close()
  await rm(closed, { recursive: true, force: true })
})

t.test('without bubblewrap and cgroups an instance still runs, with stats from /proc', async (t) => {
  const sandbox = probeSandbox({ bwrap: null, cgroupRoot: join(scratch, 'no-cgroups'), user: null })
  const driver = new ProcessDriver({ root: join(scratch, 'hosting'), clock: systemClock, sandbox, timing: { healthPollMs: 50, logPollMs: 50 } })
  t.not(driver.degradedReason, null)
  const artifact = await driver.build(buildInput(join(FIXTURES, 'node-hello')))
  const log = new RecordingSink()
  const running = await driver.start({
    appId: 'a', deploymentId: 'd', instanceId: 'plain', artifact, env: { ...TEST_ENV }, limits: { memoryMb: 128, cpus: 1, pids: 32 }, healthCheckPath: '/healthz', healthTimeoutMs: 30_000, log
  })
  t.equal((await get(running.port)).body, 'hello plain')
  const stats = await driver.stats('plain')
  t.ok(stats !== null && stats.memoryBytes > 0)
  await driver.stop('plain', 2000)

  const missing = await driver.build(buildInput(await sourceTree({ Procfile: 'web: plinth-no-such-command\n' })))
  const error = await driver.start({
    appId: 'a', deploymentId: 'd', instanceId: 'nowhere', artifact: missing, env: {}, limits: { memoryMb: 128, cpus: 1, pids: 32 }, healthCheckPath: '/', healthTimeoutMs: 30_000, log
  }).catch((error: unknown) => error)
  t.match(error, { reason: /^could not start: spawn plinth-no-such-command ENOENT/ })
  await driver.close()
})

t.test('a sandbox whose cgroup cannot be entered never runs its command', async (t) => {
  const host = probeSandbox({ bwrap: null, cgroupRoot: join(scratch, 'no-cgroups'), user: null })
  const marker = join(scratch, 'ran')
  await t.rejects(spawnSandboxed(host, {
    argv: ['touch', marker], cwd: scratch, env: { PATH: '/usr/bin:/bin' }, readOnly: [], writable: [], hidden: [], cgroup: new Cgroup('v2', { unified: join(scratch, 'no-group') }), stdout: 'pipe', stderr: 'pipe'
  }), { code: 'ENOENT' })
})

t.test('a log tail passes on whole lines in order, cuts endless ones, survives truncation and resumes at a line start', async (t) => {
  const file = join(scratch, 'tail.log')
  writeFileSync(file, 'old line\n')
  const sink = new RecordingSink()
  const tail = new LogTail(file, 'stdout', sink, 9)
  appendFileSync(file, 'first\nsecond\nhalf')
  await tail.poll()
  t.same(sink.lines.map(entry => entry.line), ['first', 'second'])
  t.equal(tail.resumeOffset, 9 + 'first\nsecond\n'.length, 'the unfinished line is read again by the next server')
  appendFileSync(file, 'way ' + 'x'.repeat(40 * 1024) + '\n')
  await tail.poll()
  t.equal(sink.lines[2].line, 'halfway ' + 'x'.repeat(16 * 1024 - 8), 'an endless line is cut')
  t.equal(sink.lines.slice(2).map(entry => entry.line).join('').length, 40 * 1024 + 8)
  writeFileSync(file, 'after truncation\nlast')
  await tail.poll()
  t.equal(sink.lines[sink.lines.length - 1].line, 'after truncation')
  tail.start(10)
  await tail.stop()
  t.equal(sink.lines[sink.lines.length - 1].line, 'last', 'stopping passes on the unfinished line')

  const bounded = new LogTail(file, 'stderr', sink, 0, 10)
  writeFileSync(file, 'one\ntwo\nthree\n')
  await bounded.poll()
  t.equal(readFileSync(file, 'utf8'), '', 'a file read past its bound is emptied')
  appendFileSync(file, 'four\n')
  await bounded.poll()
  t.same(sink.lines.slice(-4).map(entry => entry.line), ['one', 'two', 'three', 'four'], 'and followed on from its start')
})

t.test('cgroup v2: the parent enables the controllers and each group gets its limits', async (t) => {
  const root = join(scratch, 'v2')
  mkdirSync(root)
  writeFileSync(join(root, 'cgroup.controllers'), 'cpuset cpu io memory pids\n')
  writeFileSync(join(root, 'cgroup.subtree_control'), '')
  const host = probeCgroups(root, 'plinth-hosting')
  t.same(host, { layout: 'v2', parents: [join(root, 'plinth-hosting')] })
  t.equal(readFileSync(join(root, 'cgroup.subtree_control'), 'utf8'), '+memory +cpu +pids')
  if ('missing' in host) return
  const group = Cgroup.at(host, 'instance-x')
  await group.create({ memoryMb: 64, cpus: 1.5, pids: 20 })
  const value = (file: string) => readFileSync(join(root, 'plinth-hosting', 'instance-x', file), 'utf8')
  t.equal(value('memory.max'), String(64 * 1024 * 1024))
  t.equal(value('cpu.max'), '150000 100000')
  t.equal(value('pids.max'), '20')
  writeFileSync(join(root, 'plinth-hosting', 'instance-x', 'cpu.stat'), 'usage_usec 2500000\nuser_usec 1\n')
  writeFileSync(join(root, 'plinth-hosting', 'instance-x', 'memory.current'), '4096\n')
  t.same(await group.stats(), { cpuSeconds: 2.5, memoryBytes: 4096 })
  writeFileSync(join(root, 'plinth-hosting', 'instance-x', 'cgroup.procs'), '12\n34\n')
  t.same(await group.members(), [12, 34])

  const lacking = join(scratch, 'v2-lacking')
  mkdirSync(lacking)
  writeFileSync(join(lacking, 'cgroup.controllers'), 'cpu io\n')
  t.same(probeCgroups(lacking, 'p'), { missing: `cgroup v2 at ${lacking} lacks the memory, pids controller(s)` })

  const locked = join(scratch, 'v2-locked')
  mkdirSync(join(locked, 'cgroup.subtree_control'), { recursive: true })
  writeFileSync(join(locked, 'cgroup.controllers'), 'cpu memory pids\n')
  t.same(probeCgroups(locked, 'p'), { missing: `cgroup v2 at ${locked} is not writable (EISDIR)` })
})

t.test('cgroup v1: a hierarchy that cannot be written is named', async (t) => {
  const root = join(scratch, 'v1')
  for (const controller of ['memory', 'cpu', 'cpuacct', 'pids']) {
    mkdirSync(join(root, controller), { recursive: true })
    writeFileSync(join(root, controller, 'cgroup.procs'), '')
  }
  writeFileSync(join(root, 'pids', 'plinth-hosting'), 'a file where the group would go')
  t.same(probeCgroups(root, 'plinth-hosting'), { missing: `cgroup v1 pids hierarchy at ${join(root, 'pids')} is not writable (EEXIST)` })
})
