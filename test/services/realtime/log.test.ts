import t from 'tap'
import { tempStore } from '../../helper.js'
import { ManualClock } from '../../../services/platform/clock.js'
import { RealtimeLog, type LogInput } from '../../../services/realtime/log.js'

const input = (key: string): LogInput => ({ key, type: 'create', collection: 'notes', record: { _id: key, title: key }, at: new Date(0) })

t.test('events are numbered in order per project, once per key, and only the latest are kept', async (t) => {
  const store = await tempStore(t)
  const log = new RealtimeLog(store, { clock: new ManualClock(), retained: 10 })
  await log.init()
  t.equal(await log.head('p1'), 0, 'an empty log is at 0')
  t.equal(await log.oldest('p1'), null)
  t.equal(await log.append('p1', [input('a'), input('b')]), true)
  t.equal(await log.append('p1', [input('b'), input('c')]), true, 'b was logged already; c is new')
  t.equal(await log.append('p1', [input('a')]), false, 'a publish of a logged change logs nothing')
  t.same((await log.after('p1', 0)).map((event) => [event.seq, event.key]), [[1, 'a'], [2, 'b'], [3, 'c']])
  await log.append('p2', [input('a')])
  t.same((await log.after('p2', 0)).map((event) => [event.seq, event.key]), [[1, 'a']], 'each project has its own numbers')

  // Two writers racing for the same numbers: each change gets one, none is lost or doubled.
  const second = new RealtimeLog(store, { clock: new ManualClock(), retained: 10 })
  await Promise.all(Array.from({ length: 20 }, async (_, i) => await (i % 2 === 0 ? log : second).append('p3', [input(`k${i}`)])))
  const numbered = await log.after('p3', 0)
  t.same(numbered.map((event) => event.seq), Array.from({ length: 20 }, (_, i) => i + 1), 'numbers 1..20 without a hole')
  t.equal(new Set(numbered.map((event) => event.key)).size, 20)

  for (let i = 0; i < 70; i++) await log.append('p1', [input(`more${i}`)])
  t.equal(await log.head('p1'), 73)
  const oldest = await log.oldest('p1')
  t.ok(oldest !== null && oldest > 1 && 73 - oldest + 1 >= 10, `old events were pruned, at least 10 kept (oldest ${String(oldest)})`)
  await log.purgeProject('p1')
  t.equal(await log.head('p1'), 0, 'a deleted project\'s log goes with it')
})
