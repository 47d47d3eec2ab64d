import t from 'tap'
import { DEFAULT_RESTART_POLICY, exitReason, InstanceEvents, RestartBackoff } from '../../../services/hosting/supervision.js'
import type { InstanceEvent } from '../../../services/hosting/runtime.js'

t.test('restarts back off by doubling up to the cap, then give up; a stable run starts the count again', async (t) => {
  t.same(DEFAULT_RESTART_POLICY, { initialDelayMs: 1000, maxDelayMs: 30_000, maxAttempts: 5, stableAfterMs: 60_000 })
  const backoff = new RestartBackoff({ initialDelayMs: 100, maxDelayMs: 300, maxAttempts: 4, stableAfterMs: 1000 })
  t.same([backoff.nextDelayMs(), backoff.nextDelayMs(), backoff.nextDelayMs(), backoff.nextDelayMs(), backoff.nextDelayMs()], [100, 200, 300, 300, null])
  t.equal(backoff.gaveUpReason('exited with code 4'), 'gave up after 4 restarts; last: exited with code 4')
  backoff.healthyRunEnded(999)
  t.equal(backoff.nextDelayMs(), null, 'a short run does not reset the count')
  backoff.healthyRunEnded(1000)
  t.equal(backoff.nextDelayMs(), 100)
})

t.test('exits are worded one way', async (t) => {
  t.equal(exitReason(3, null), 'exited with code 3')
  t.equal(exitReason(null, 'SIGKILL'), 'killed by SIGKILL')
  t.equal(exitReason(null, null), 'exited')
})

t.test('a listener that throws does not keep the others from hearing an event', async (t) => {
  const events = new InstanceEvents()
  const heard: InstanceEvent[] = []
  events.on(() => { throw new Error('a broken listener') })
  events.on(event => heard.push(event))
  const event: InstanceEvent = { type: 'gave-up', instanceId: 'i', reason: 'r', attempts: 1 }
  events.emit(event)
  t.same(heard, [event])
})
