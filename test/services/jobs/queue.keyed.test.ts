import t from 'tap'
import { DeferJobError, PermanentJobError } from '../../../services/jobs/job.js'
import { openTestJobQueue } from '../../helper.js'

t.test('a keyed job: one per key, queued once, asked again while it runs, restarted once finished', async (t) => {
  const { queue } = await openTestJobQueue(t)
  await queue.enqueueKeyed('deploy', 'app1', { appId: 'app1' })
  await queue.enqueueKeyed('deploy', 'app1', { appId: 'app1' })
  await queue.enqueueKeyed('deploy', 'app2', { appId: 'app2' })
  const first = await queue.claim('w', ['deploy'], 1_000)
  const second = await queue.claim('w', ['deploy'], 1_000)
  t.same([first?.payload, second?.payload], [{ appId: 'app1' }, { appId: 'app2' }], 'two enqueues of one key make one job')
  t.equal(await queue.claim('w', ['deploy'], 1_000), null, 'and no third')

  await queue.enqueueKeyed('deploy', 'app1', { appId: 'app1' })
  const rerun = await queue.complete(first!, 'w', { ran: 1 })
  t.match(rerun, { status: 'queued', again: false, result: { ran: 1 } }, 'asked for while running: queued again instead of finishing')
  const again = await queue.claim('w', ['deploy'], 1_000)
  t.equal(again?._id, first?._id, 'the same job runs again')
  t.match(await queue.complete(again!, 'w'), { status: 'succeeded' }, 'not asked again: it finishes')
  t.equal(await queue.claim('w', ['deploy'], 1_000), null)

  await queue.enqueueKeyed('deploy', 'app1', { appId: 'app1', later: true })
  const restarted = await queue.claim('w', ['deploy'], 1_000)
  t.match(restarted, { _id: first?._id, status: 'running', payload: { later: true } }, 'a finished keyed job is queued again with the new payload')
  t.ok(restarted!.attempts <= restarted!.maxAttempts, 'with a fresh budget of attempts')

  await queue.enqueueKeyed('deploy', 'app2', { appId: 'app2' })
  t.match(await queue.fail(second!, 'w', new PermanentJobError('no')), { status: 'queued', lastError: 'PermanentJobError: no' }, 'a failure asked for again runs again too')
  t.match(await queue.fail((await queue.claim('w', ['deploy'], 1_000))!, 'w', new PermanentJobError('no')), { status: 'failed' }, 'and ends when not')
  await t.rejects(queue.enqueueKeyed('bad type', 'k'), { code: 'APP_JOB_INVALID' })
  await t.rejects(queue.enqueueKeyed('deploy', 'k', [] as unknown as Record<string, unknown>), { code: 'APP_JOB_INVALID' })
})

t.test('a keyed job asked for again while it ran and then deferred is due now, not after its delay', async (t) => {
  const { queue, clock } = await openTestJobQueue(t)
  await queue.enqueueKeyed('deliver', 'w1')
  const claimed = await queue.claim('w', ['deliver'], 1_000)
  await queue.enqueueKeyed('deliver', 'w1', {}, { dueNow: true })
  const deferred = await queue.fail(claimed!, 'w', new DeferJobError('the next retry is later', 60_000))
  t.match(deferred, { status: 'queued', again: false, lastError: 'DeferJobError: the next retry is later' })
  t.same(deferred?.runAt, new Date(clock.nowMs()), 'due now: the run may have begun before what it was asked for')
  t.equal((await queue.claim('w', ['deliver'], 1_000))?._id, claimed?._id)
})

t.test('dueNow: a keyed job waiting out a delay is made due at once; without it, it keeps its time', async (t) => {
  const { queue, clock } = await openTestJobQueue(t)
  await queue.enqueueKeyed('deliver', 'd1')
  const claimed = await queue.claim('w', ['deliver'], 1_000)
  const deferred = await queue.fail(claimed!, 'w', new DeferJobError('retry later', 60_000))
  t.same(deferred?.runAt, new Date(clock.nowMs() + 60_000))
  await queue.enqueueKeyed('deliver', 'd1')
  t.equal(await queue.claim('w', ['deliver'], 1_000), null, 'asked again without dueNow: it still waits')
  const woken: string[] = []
  queue.onDue(() => { woken.push('due') })
  await queue.enqueueKeyed('deliver', 'd1', {}, { dueNow: true })
  t.same(woken, ['due'], 'the worker here is told')
  const now = await queue.claim('w', ['deliver'], 1_000)
  t.equal(now?._id, claimed?._id, 'with dueNow it runs now')
  await queue.enqueueKeyed('deliver', 'd1', {}, { dueNow: true })
  t.match(await queue.get(claimed!._id), { status: 'running', again: true }, 'a running one is asked again as before')
})
