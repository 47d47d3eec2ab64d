import t from 'tap'
import { ManualClock } from '../../../services/platform/clock.js'
import { RateLimiter } from '../../../services/platform/rate-limit.js'
import { StoreClock } from '../../../services/store/store-clock.js'
import type { Store } from '../../../services/store/types.js'
import { tempStore } from '../../helper.js'

/** A Store whose time is `storeTime`, answering after the local clock moved `roundTripMs`; counts the calls. */
function storeAt (storeTime: ManualClock, local: ManualClock, roundTripMs = 0) {
  const calls = { count: 0, failing: false }
  const store: Pick<Store, 'extensions'> = {
    extensions: {
      now: async () => {
        calls.count++
        // The answer comes back later: this node's clock has moved on by the round trip.
        await Promise.resolve()
        if (calls.failing) throw new Error('no primary')
        local.advance(roundTripMs)
        return storeTime.now()
      }
    } as unknown as Store['extensions']
  }
  return { store, calls }
}

t.test('the StoreClock tells the Store\'s time from this node\'s clock and the measured offset', async (t) => {
  const local = new ManualClock(Date.UTC(2026, 0, 1, 12, 0, 0))
  const storeTime = new ManualClock(Date.UTC(2026, 0, 1, 12, 0, 5))
  const { store, calls } = storeAt(storeTime, local, 200)
  const clock = new StoreClock(store, local, 60_000)
  await clock.sync()
  // Sent at 12:00:00.000, answered at .200: the server's 12:00:05 is taken as the middle, local .100.
  t.equal(clock.nowMs() - local.nowMs(), 4900, 'the offset is the Store\'s time less the middle of the round trip')
  t.equal(clock.now().getTime(), clock.nowMs())
  local.advance(30_000)
  t.equal(clock.nowMs(), local.nowMs() + 4900, 'between measurements it follows this node\'s clock')
  t.equal(calls.count, 1, 'without asking the Store again')

  // This node's clock falls 1.8 s behind the Store's over the next 30 s.
  storeTime.advance(60_000 + 1800)
  local.advance(30_000)
  const before = clock.nowMs()
  t.equal(before, local.nowMs() + 4900, 'a read past the refresh answers at once with the offset it has')
  await clock.sync()
  t.equal(calls.count, 2, 'and started one new measurement, which sync waited for')
  t.equal(clock.nowMs() - local.nowMs(), 6500, 'the new offset is used from then on')

  calls.failing = true
  local.advance(60_000)
  clock.nowMs()
  await t.rejects(clock.sync(), /no primary/, 'a measurement that fails says so to sync')
  t.equal(clock.nowMs() - local.nowMs(), 6500, 'and the clock keeps the last offset')
})

t.test('rate-limit windows are the Store\'s, and counters of ended windows are pruned in pages', async (t) => {
  const store = await tempStore(t)
  const storeTime = new ManualClock(Date.UTC(2026, 0, 1, 12, 0, 0))
  const local = new ManualClock(Date.UTC(2026, 0, 1, 11, 0, 0))
  const clock = new StoreClock({ extensions: { now: async () => storeTime.now() } as unknown as Store['extensions'] }, local)
  await clock.sync()
  const limiter = new RateLimiter(store, clock)
  const rule = { max: 2, windowSeconds: 60 }
  for (let i = 0; i < 5; i++) await limiter.hit('login', `10.0.0.${i}`, rule)
  const counters = store.collection<{ expiresAt: Date }>('_rate_limits')
  t.same((await counters.find({}).toArray()).map((counter) => counter.expiresAt.getTime()), Array(5).fill(Date.UTC(2026, 0, 1, 12, 1, 0)), 'each window ends on the Store\'s clock, an hour past this node\'s')
  await limiter.hit('login', '10.0.0.0', rule)
  await t.rejects(limiter.hit('login', '10.0.0.0', rule), { status: 429, code: 'APP_RATE_LIMITED' }, 'the third attempt in the window is refused')

  t.same(await limiter.prune(), { deleted: 0 }, 'nothing has ended yet')
  local.advance(61_000)
  t.same(await limiter.prune(), { deleted: 5 }, 'once the window has passed on the Store\'s clock, every counter goes')
  t.equal(await counters.countDocuments(), 0)
  await limiter.hit('login', '10.0.0.0', rule)
  t.equal(await counters.countDocuments(), 1, 'and a new window starts counting afresh')
})
