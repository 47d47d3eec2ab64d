import t, { type Test } from 'tap'
import { ManualClock } from '../../../services/platform/clock.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { AppLogs, MAX_PENDING_CHARS, type LogLimits } from '../../../services/hosting/logs.js'
import { masker } from '../../../services/hosting/secrets.js'
import { tempStore } from '../../helper.js'

const DAY_MS = 86_400_000
const UNBOUNDED: LogLimits = { linesPerSecond: 1_000_000, bufferLines: 1_000_000, retentionLines: 1000, retentionMs: DAY_MS }

async function openLogs (t: Test, limits: Partial<LogLimits> = {}) {
  const clock = new ManualClock()
  const errors: unknown[] = []
  const logs = new AppLogs(await tempStore(t), { clock, newId: createIdGenerator(() => clock.nowMs()), onError: (error) => errors.push(error), limits: { ...UNBOUNDED, ...limits } })
  await logs.init()
  return { logs, clock, errors }
}

const texts = (lines: Array<{ line: string }>): string[] => lines.map((line) => line.line)

t.test('logs keep the newest lines of an app, read by page or after a sequence number, and reach followers masked', async (t) => {
  const { logs, errors } = await openLogs(t)
  const seen: string[] = []
  const stop = logs.follow('a1', 'build', (line) => seen.push(line.line))
  const sink = logs.sink({ appId: 'a1', deploymentId: 'd1', instanceId: null, kind: 'build' }, masker(['hunter2']))
  const total = 1600
  for (let i = 0; i < total; i++) sink.write(i === 0 ? 'password hunter2' : `line ${i}`, 'stdout')
  await sink.flushed()
  stop()
  sink.write('after unfollowing', 'stderr')
  await sink.flushed()
  t.equal(seen.length, total, 'followers saw every line')
  t.equal(seen[0], 'password ********')
  const newest = await logs.read('a1', 'build', { limit: 3 })
  t.same(texts(newest), [`line ${total - 2}`, `line ${total - 1}`, 'after unfollowing'], 'the newest, oldest first')
  const kept = await logs.read('a1', 'build', { after: 0, limit: 1 })
  t.ok(Number(kept[0].line.split(' ')[1]) >= 500, `older lines were dropped (first kept: ${kept[0].line})`)
  t.same(await logs.read('a1', 'runtime', {}), [], 'kinds are apart')
  await logs.deleteForApp('a1')
  t.same(await logs.read('a1', 'build', {}), [])
  t.same(errors, [])
})

t.test('a sink takes in its rate a second and counts what it drops in a line before the next one kept', async (t) => {
  const { logs, clock } = await openLogs(t, { linesPerSecond: 10 })
  const followed: string[] = []
  logs.follow('a1', 'runtime', (line) => followed.push(line.line))
  const sink = logs.sink({ appId: 'a1', deploymentId: 'd1', instanceId: 'i1', kind: 'runtime' }, (line) => line)
  for (let i = 0; i < 25; i++) sink.write(`burst ${i}`, 'stdout')
  clock.advance(1000)
  sink.write('a second later', 'stdout')
  clock.advance(500)
  for (let i = 0; i < 20; i++) sink.write(`again ${i}`, 'stderr')
  await sink.flushed()
  const stored = await logs.read('a1', 'runtime', {})
  const expected = [
    ...Array.from({ length: 10 }, (_, i) => `burst ${i}`),
    '15 lines dropped (more than 10 lines a second)',
    'a second later',
    // 9 tokens left, 5 more after half a second: 10, the bucket's size.
    ...Array.from({ length: 10 }, (_, i) => `again ${i}`),
    '10 lines dropped (more than 10 lines a second)'
  ]
  t.same(texts(stored), expected, 'at most one marker a second; the last written when the sink is flushed')
  t.same(followed, expected, 'followers see what is kept')
  t.match(stored[10], { stream: 'system', instanceId: 'i1' })
})

t.test('a sink holds at most its buffer of lines waiting for the store', async (t) => {
  const { logs } = await openLogs(t, { bufferLines: 10 })
  const sink = logs.sink({ appId: 'a1', deploymentId: 'd1', instanceId: null, kind: 'build' }, (line) => line)
  // One synchronous burst: nothing reaches the store before it ends.
  for (let i = 0; i < 25; i++) sink.write(`line ${i}`, 'stdout')
  await sink.flushed()
  const stored = texts(await logs.read('a1', 'build', {}))
  t.equal(stored.length, 11)
  t.equal(stored[10], '15 lines dropped (more than the log store took in time)')
})

t.test('the node holds at most MAX_PENDING_CHARS of lines waiting for the store, all sinks together', async (t) => {
  const { logs } = await openLogs(t)
  const wide = logs.sink({ appId: 'a2', deploymentId: 'd2', instanceId: null, kind: 'build' }, (line) => line)
  const line = 'x'.repeat(4096)
  const lines = Math.ceil(MAX_PENDING_CHARS / line.length) + 500
  for (let i = 0; i < lines; i++) wide.write(line, 'stdout')
  await wide.flushed()
  const kept = await logs.read('a2', 'build', { limit: 1 })
  t.match(kept[0].line, /^500 lines dropped \(more than the log store took in time\)$/, 'lines past the node\'s budget are dropped')
})

t.test('prune deletes lines past the retention age, then all but each app\'s newest lines of each kind', async (t) => {
  const { logs, clock } = await openLogs(t, { retentionLines: 2, retentionMs: DAY_MS })
  const write = async (appId: string, kind: 'build' | 'runtime', count: number, prefix: string) => {
    const sink = logs.sink({ appId, deploymentId: `${appId}-d`, instanceId: null, kind }, (line) => line)
    for (let i = 0; i < count; i++) sink.write(`${prefix} ${i}`, 'stdout')
    await sink.flushed()
  }
  await write('a1', 'runtime', 5, 'old')
  clock.advance(2 * DAY_MS)
  await write('a1', 'runtime', 3, 'new')
  await write('a1', 'build', 1, 'build')
  await write('a2', 'runtime', 3, 'other')
  t.same(await logs.prune(), { deleted: 5 + 1 + 1 })
  t.same(texts(await logs.read('a1', 'runtime', {})), ['new 1', 'new 2'])
  t.same(texts(await logs.read('a1', 'build', {})), ['build 0'])
  t.same(texts(await logs.read('a2', 'runtime', {})), ['other 1', 'other 2'])
  t.same(await logs.prune(), { deleted: 0 })
})
