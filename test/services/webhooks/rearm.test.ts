import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { WEBHOOK_DELIVER_JOB } from '../../../services/webhooks/index.js'
import { engine, receiver, thingEvent, type Engine } from './fixtures.js'

/** Counts the publisher's calls of the queue's enqueueKeyed (the real queue still answers each). */
function countRearms (queue: Engine['queue']): { calls: number } {
  const counted = { calls: 0 }
  const enqueueKeyed = queue.enqueueKeyed.bind(queue)
  queue.enqueueKeyed = async (...args) => {
    counted.calls++
    await enqueueKeyed(...args)
  }
  return counted
}

const keysOf = (received: Array<{ body: { data: Record<string, unknown> } }>): unknown[] => received.map((request) => request.body.data.size).sort()

t.test('while this process runs a webhook\'s job and has asked it to run again, a publish does not ask again; what the run did not read is sent by the rerun', async (t) => {
  const { webhooks, queue, owner, drain } = await engine(t)
  const hook = await receiver(t)
  const { webhook } = await webhooks.create(owner, { url: hook.url, events: ['*'] }, null)
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  const rearms = countRearms(queue)
  const job = await queue.claim('w1', [WEBHOOK_DELIVER_JOB], 60_000)
  t.ok(job !== null)
  if (job === null) return
  await webhooks.publisher.holding(webhook.id, 60_000, async () => {
    await webhooks.deliverer.runWebhook(webhook.id)
    // Published after the run read what it owes: only a run after this one can send them.
    for (const n of [2, 3, 4]) await webhooks.publish('things', 'p1', [thingEvent(n)])
  })
  t.equal(rearms.calls, 1, 'asked once, by the first publish; the next two rely on it')
  t.equal(keysOf(hook.received).length, 1)
  await queue.complete(job, 'w1')
  t.match(await queue.jobs.findOne({ type: WEBHOOK_DELIVER_JOB }), { status: 'queued', again: false }, 'the run ended asked again: queued at once')
  await drain()
  t.same(keysOf(hook.received), [1, 2, 3, 4], 'none missed')
  // The run is over: the next publish asks again.
  await webhooks.publish('things', 'p1', [thingEvent(5)])
  t.equal(rearms.calls, 2)
  await drain()
  t.same(keysOf(hook.received), [1, 2, 3, 4, 5])
})

t.test('past half its lease, a held run is not relied on (another process may have claimed the job): every publish asks again', async (t) => {
  const { webhooks, queue, owner, clock } = await engine(t)
  const hook = await receiver(t)
  const { webhook } = await webhooks.create(owner, { url: hook.url, events: ['*'] }, null)
  const rearms = countRearms(queue)
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  const job = await queue.claim('w1', [WEBHOOK_DELIVER_JOB], 60_000)
  t.ok(job !== null)
  await webhooks.publisher.holding(webhook.id, 60_000, async () => {
    await webhooks.publish('things', 'p1', [thingEvent(2)])
    await webhooks.publish('things', 'p1', [thingEvent(3)])
    t.equal(rearms.calls, 2, 'within the lease: the second publish relied on the first')
    clock.advance(30_000)
    await webhooks.publish('things', 'p1', [thingEvent(4)])
    t.equal(rearms.calls, 3, 'at half the lease: asked again')
  })
})

t.test('a run held by another process (none here) is always asked, and so is one that began after the call that asked', async (t) => {
  const { webhooks, queue, owner, drain } = await engine(t)
  const hook = await receiver(t)
  const { webhook } = await webhooks.create(owner, { url: hook.url, events: ['*'] }, null)
  const rearms = countRearms(queue)
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  const job = await queue.claim('elsewhere', [WEBHOOK_DELIVER_JOB], 60_000)
  t.ok(job !== null)
  if (job === null) return
  for (const n of [2, 3]) await webhooks.publish('things', 'p1', [thingEvent(n)])
  t.equal(rearms.calls, 3, 'no run held here: each publish asks')
  // A run here that begins while a publish's call is under way: that call may have met an earlier state of the job, so it is not relied on.
  const enqueueKeyed = queue.enqueueKeyed.bind(queue)
  let during: Promise<void> | null = null
  queue.enqueueKeyed = async (...args) => {
    await enqueueKeyed(...args)
    during ??= webhooks.publisher.holding(webhook.id, 60_000, async () => {
      await webhooks.publish('things', 'p1', [thingEvent(5)])
    })
  }
  await webhooks.publish('things', 'p1', [thingEvent(4)])
  await during
  t.equal(rearms.calls, 5, 'the run that began during the call asked on its own')
  await queue.fail(job, 'elsewhere', new Error('lost'))
  await drain()
  t.same(keysOf(hook.received), [1, 2, 3, 4, 5])
})

t.test('a success after a failure in the same batch ends the streak the failure began', async (t) => {
  const { webhooks, owner, drain } = await engine(t, { env: { WEBHOOK_DISABLE_AFTER_FAILURES: '5' } })
  // Answers by the event, not by arrival: the batch's requests go out together.
  const server = createServer((req, res) => {
    let body = ''
    req.on('data', (chunk: Buffer) => { body += chunk.toString() })
    req.on('end', () => {
      const size = (JSON.parse(body) as { data: { size: number } }).data.size
      res.statusCode = size === 1 ? 400 : 200
      res.end()
    })
  })
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  t.teardown(() => { server.closeAllConnections(); server.close() })
  const { port } = server.address() as AddressInfo
  const { webhook } = await webhooks.create(owner, { url: `http://127.0.0.1:${port}/hook`, events: ['*'] }, null)
  await webhooks.publish('things', 'p1', [thingEvent(1), thingEvent(2)])
  t.equal(await drain(), 2, 'one batch of two')
  const deliveries = await webhooks.publisher.deliveries.find({ subscriptionId: webhook.id }, { sort: { occurredAt: 1 } }).toArray()
  t.same(deliveries.map((delivery) => delivery.status), ['failed', 'delivered'])
  t.match(await webhooks.find(owner, webhook.id), { failures: { count: 0, since: null } }, 'the later success ended the streak')
})
