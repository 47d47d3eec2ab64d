import t from 'tap'
import { createIdGenerator, newId } from '../../../services/platform/ids.js'
import { ManualClock } from '../../../services/platform/clock.js'

t.test('ids are URL-safe, fixed-length and sort by creation', async (t) => {
  const ids = Array.from({ length: 5000 }, () => newId())
  for (const id of ids.slice(0, 50)) t.match(id, /^[0-9a-hjkmnp-tv-z]{20}$/)
  t.same([...ids].sort(), ids, 'generated order is string order, even within one millisecond')
  t.equal(new Set(ids).size, ids.length, 'no duplicates')
})

t.test('the time part follows the injected clock', async (t) => {
  const clock = new ManualClock(Date.UTC(2030, 0, 1))
  const next = createIdGenerator(() => clock.nowMs())
  const early = next()
  clock.advance(1)
  const later = next()
  t.ok(early < later)
  t.not(early.slice(0, 10), later.slice(0, 10), 'the first ten characters carry the time')
  clock.set(Date.UTC(2020, 0, 1))
  t.ok(next() < early, 'an earlier clock gives an earlier id')
})
