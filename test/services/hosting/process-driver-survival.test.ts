import t from 'tap'
import { execFile } from 'node:child_process'
import { existsSync, readdirSync } from 'node:fs'
import { rm } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { systemClock } from '../../../services/platform/clock.js'
import { ProcessDriver, probeSandbox } from '../../../services/hosting/process-driver/index.js'
import { isAlive } from '../../../services/hosting/process-driver/process-tree.js'
import { scopeOf } from '../../../services/hosting/network/namespaces.js'
import { RecordingSink } from './driver-harness.js'
import { buildInput, FIXTURES, tempDir, TEST_ENV } from './process-driver-helpers.js'

/**
 * Issue 26, item 2: instances stay where the supervisor can find and kill
 * them, also after a server that stopped without stopping them, and the
 * supervisor never throws out of the process when the host runs out of
 * file descriptors.
 */
const run = promisify(execFile)
const sandbox = probeSandbox()
const scratch = await tempDir('plinth-hosting-survival-', 0o711)
t.teardown(async () => await rm(scratch, { recursive: true, force: true }))

t.test('an instance a stopped server left running, whose app is gone, is killed at the next start with all it held', { skip: sandbox.cgroups === null && 'no writable cgroup here' }, async (t) => {
  const root = join(scratch, 'orphans')
  const options = { root, clock: systemClock, sandbox, timing: { healthPollMs: 50, logPollMs: 50 } }
  const before = new ProcessDriver(options)
  const artifact = await before.build(buildInput(join(FIXTURES, 'node-hello')))
  const spec = (instanceId: string) => ({ appId: 'a', deploymentId: 'd', instanceId, artifact, env: { ...TEST_ENV }, limits: { memoryMb: 128, cpus: 1, pids: 32 }, healthCheckPath: '/healthz', healthTimeoutMs: 30_000, log: new RecordingSink() })
  const kept = await before.start(spec('kept'))
  const orphan = await before.start(spec('orphan'))
  await before.close()
  t.ok(isAlive(Number(orphan.handle)), 'closing a server leaves its instances running')

  const after = new ProcessDriver(options)
  t.same((await after.adopt([kept], () => new RecordingSink())).map((running) => running.instanceId), ['kept'], 'the app deleted meanwhile is not adopted')
  t.notOk(isAlive(Number(orphan.handle)), 'its instance is killed')
  const groups = join(sandbox.cgroups?.parents[0] ?? '', scopeOf(root))
  t.same(readdirSync(groups).filter((name) => name.startsWith('instance-')), ['instance-kept'], 'its cgroup is gone')
  t.notOk(existsSync(join(root, 'instances', 'orphan')), 'and its state')
  if (sandbox.network !== null) t.same(readdirSync(join('/run/plinth-hosting/networks', scopeOf(root))).filter((file) => file.endsWith('.json')), ['kept.json'], 'and its network namespace')
  t.ok(isAlive(Number(kept.handle)), 'the adopted one runs on')
  await after.stop('kept', 0)
  await after.close()
})

t.test('out of file descriptors, the supervisor kills nothing it cannot see, restarts what died once it can, and never throws out of the process', { skip: process.getuid?.() !== 0 && 'prlimit on a running process needs root here' }, async (t) => {
  const fixture = new URL('../../fixtures/hosting-emfile.ts', import.meta.url).pathname
  const { stdout } = await run(process.execPath, ['--import', 'tsx', fixture, join(scratch, 'emfile'), join(FIXTURES, 'procfile-app')], { timeout: 120_000 })
  t.same(JSON.parse(stdout.trim().split('\n').pop() as string), { survived: true, events: ['crashed', 'restarted'] }, 'an instance /proc cannot be read for is not taken for dead; a dead one is restarted once it can be')
})
