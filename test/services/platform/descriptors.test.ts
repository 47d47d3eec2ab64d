import t from 'tap'
import { execFileSync, spawnSync } from 'node:child_process'
import { closeSync, openSync } from 'node:fs'
import { DescriptorPressure, descriptorHeadroom, isDescriptorShortage, readDescriptorLimit } from '../../../services/platform/descriptors.js'

/**
 * The descriptor limit as the process has it, the pressure the gateway asks
 * about (a real probe of the lowest free descriptor, against thresholds set
 * around this process's own), and the last line that keeps a server running
 * out of descriptors alive, in a child process really run out of them.
 */

const MODULE = new URL('../../../services/platform/descriptors.ts', import.meta.url).pathname

t.test('the limit read is the one the shell sees', async (t) => {
  const [soft, hard] = execFileSync('sh', ['-c', 'ulimit -Sn; ulimit -Hn']).toString().trim().split('\n').map(Number)
  t.same(readDescriptorLimit(), { soft, hard })
})

t.test('the headroom: a quarter of the limit, from 64 to 4096', async (t) => {
  t.same([100, 400, 1024, 20_000, 1_048_576].map(descriptorHeadroom), [64, 100, 256, 4096, 4096])
  t.same([{ code: 'EMFILE' }, { code: 'ENFILE' }, { code: 'ENOENT' }, new Error('x'), null].map(isDescriptorShortage), [true, true, false, false, false])
})

function lowestFree (): number {
  const fd = openSync('/dev/null', 'r')
  closeSync(fd)
  return fd
}

t.test('pressure: near the limit once the lowest free descriptor reaches the headroom, for a back-off that doubles while it lasts', async (t) => {
  let now = 0
  const pressedAt: Array<{ lowestFree: number | null, backoffMs: number }> = []
  // 64 of headroom below a limit set 20 above the lowest free descriptor: near once 20 more are taken.
  const pressure = new DescriptorPressure({ limit: lowestFree() + 20 + 64, headroom: 64, firstBackoffMs: 100, mostBackoffMs: 300, onPressed: (details) => pressedAt.push(details) }, () => now)
  t.equal(pressure.pressed(), false, 'room to spare')
  const held: number[] = []
  t.teardown(() => { for (const fd of held.splice(0)) closeSync(fd) })
  for (let i = 0; i < 30; i++) held.push(openSync('/dev/null', 'r'))
  t.equal(pressure.pressed(), true, 'near the limit')
  t.equal(pressedAt.length, 1, 'the episode is announced')
  t.match(pressedAt[0], { backoffMs: 100 })
  t.ok((pressedAt[0].lowestFree ?? 0) >= held[0] + 20, 'with the descriptor the probe found')
  const seen: Array<[number, boolean]> = []
  for (const at of [50, 99, 100, 250, 299, 300, 599, 600, 899, 900]) {
    now = at
    seen.push([at, pressure.pressed()])
  }
  t.ok(seen.every(([, pressed]) => pressed), 'pressed throughout while the descriptors stay taken')
  t.equal(pressedAt.length, 1, 'announced once per episode')
  for (const fd of held.splice(0)) closeSync(fd)
  now = 1000
  t.equal(pressure.pressed(), true, 'within the back-off (300 ms, its most, from 900) no probe is made')
  now = 1200
  t.equal(pressure.pressed(), false, 'the first probe after it that finds room ends the episode')
  for (let i = 0; i < 30; i++) held.push(openSync('/dev/null', 'r'))
  t.equal(pressure.pressed(), true)
  t.same([pressedAt.length, pressedAt[1].backoffMs], [2, 100], 'a new episode, its back-off from the start')
})

/** Runs `body` in a child process that has the guard installed and a limit of 64 descriptors; its lines and exit code. */
function runGuarded (body: string): { lines: Array<Record<string, unknown>>, status: number | null, stderr: string } {
  const script = `
    import { surviveDescriptorShortage } from ${JSON.stringify(MODULE)}
    import { closeSync, openSync, readdirSync } from 'node:fs'
    import { readdir } from 'node:fs/promises'
    import { execFileSync } from 'node:child_process'
    const log = (level) => (details, message) => console.log(JSON.stringify({ level, code: details.err?.code, origin: details.origin, message }))
    surviveDescriptorShortage({ error: log('error'), fatal: log('fatal') })
    execFileSync('prlimit', ['--pid', String(process.pid), '--nofile=64:64'])
    const held = []
    const exhaust = () => { try { for (;;) held.push(openSync('/dev/null', 'r')) } catch {} }
    const release = () => { for (const fd of held.splice(0)) closeSync(fd) }
    ${body}
  `
  const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 60_000 })
  return { lines: child.stdout.split('\n').filter((line) => line.startsWith('{')).map((line) => JSON.parse(line) as Record<string, unknown>), status: child.status, stderr: child.stderr }
}

t.test('a scan that fails for want of descriptors, uncaught or unhandled, does not end the process; anything else still does', async (t) => {
  const survived = runGuarded(`
    setTimeout(() => { exhaust(); readdirSync('/proc') }, 10)
    setTimeout(() => { readdir('/proc') }, 20)
    setTimeout(() => { release(); console.log(JSON.stringify({ level: 'info', message: 'still here', entries: readdirSync('/proc').length > 0 })) }, 200)
  `)
  t.same(survived.lines, [
    { level: 'error', code: 'EMFILE', origin: 'uncaughtException', message: 'out of file descriptors: an operation failed; the server goes on' },
    { level: 'error', code: 'EMFILE', origin: 'unhandledRejection', message: 'out of file descriptors: an operation failed; the server goes on' },
    { level: 'info', message: 'still here', entries: true }
  ], 'a synchronous scan and an asynchronous one failed; the process went on and scans again once descriptors are back')
  t.equal(survived.status, 0, 'and ended on its own')

  const failed = runGuarded(`
    setTimeout(() => { throw new TypeError('a bug') }, 10)
    setTimeout(() => { console.log(JSON.stringify({ level: 'info', message: 'never' })) }, 200)
  `)
  t.same([failed.status, failed.lines], [1, [{ level: 'fatal', origin: 'uncaughtException', message: 'uncaught exception; exiting' }]], 'another error ends the process, as Node would')
})
