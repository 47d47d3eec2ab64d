import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { ManualClock } from '../../../services/platform/clock.js'
import { holdLease, leaseUntil } from '../../../services/platform/lease.js'

t.test('leaseUntil counts from the clock it is given', async (t) => {
  t.same(leaseUntil(new ManualClock(1_000), 500), new Date(1_500))
})

t.test('holdLease renews until stopped, rides out a renewal that throws, and aborts once the lease is not the holder\'s', async (t) => {
  const answers: Array<boolean | Error> = [true, new Error('store unreachable'), true, false]
  let calls = 0
  const lease = holdLease(async () => {
    const answer = answers[Math.min(calls++, answers.length - 1)]
    if (answer instanceof Error) throw answer
    return answer
  }, 2, () => new Error('lost'))
  while (!lease.signal.aborted) await sleep(2)
  t.ok(calls >= 4, 'a failed renewal is tried again at the next tick')
  t.equal((lease.signal.reason as Error).message, 'lost', 'aborted with the holder\'s reason')
  lease.stop()
  const after = calls
  await sleep(20)
  t.equal(calls, after, 'no renewal once stopped')

  let renewed = 0
  const stopped = holdLease(async () => { renewed++; return false }, 2, () => new Error('lost'))
  stopped.stop()
  await sleep(20)
  t.equal(renewed, 0)
  t.notOk(stopped.signal.aborted, 'a lease stopped before it was lost never aborts')
})
