import t from 'tap'
import { WEBHOOK_DELIVER_JOB } from '../../../services/webhooks/index.js'
import { apiBusy, PACED_DELAY_MS } from '../../../services/webhooks/pacing.js'
import { engine, receiver, thingEvent } from './fixtures.js'

t.test('a run in which a delivery cannot be attempted (the store failing) defers the webhook\'s job: it is never spent, and the delivery goes out later', async (t) => {
  const { webhooks, queue, clock, owner, drain } = await engine(t)
  const hook = await receiver(t)
  await webhooks.create(owner, { url: hook.url, events: ['*'] }, null)
  // The delivery's event cannot be read: nothing is sent, and the attempt is not made.
  const events = webhooks.publisher.events
  const findOne = events.findOne.bind(events)
  let failing = true
  events.findOne = async (...args) => {
    if (failing) throw new Error('disk I/O error')
    return await findOne(...args)
  }
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  // Far more runs than a job's attempts: each fails, none may use the job up.
  for (let run = 0; run < 8; run++) {
    await drain()
    clock.advance(60_000)
  }
  const [job] = await queue.jobs.find({ type: WEBHOOK_DELIVER_JOB }).toArray()
  t.match(job, { status: 'queued', lastError: /a delivery could not be attempted: disk I\/O error/ }, 'the job waits for its next run, not dead')
  t.equal(hook.received.length, 0, 'nothing sent while its event cannot be read')
  failing = false
  clock.advance(60_000)
  await drain()
  t.equal(hook.received.length, 1, 'once the store answers, the delivery is sent')
})

t.test('while the API is busy a webhook\'s job waits after each batch; once it is not, the backlog goes without a wait', async (t) => {
  let busy = true
  const pauses: number[] = []
  const { webhooks, drain } = await engine(t, { busy: () => busy, pause: async (ms) => { pauses.push(ms); busy = pauses.length < 2 } })
  const hook = await receiver(t)
  await webhooks.create({ projectId: 'p1', source: 'things' }, { url: hook.url, events: ['*'] }, null)
  await webhooks.publish('things', 'p1', Array.from({ length: 40 }, (_, n) => thingEvent(n + 1)))
  t.equal(await drain(), 40, 'every delivery made in the one run')
  t.same(pauses, [PACED_DELAY_MS, PACED_DELAY_MS], 'a wait after each of the two batches sent while busy, none after')
  t.equal(new Set(hook.received.map((request) => request.body.id)).size, 40, 'every event delivered, none twice')
})

t.test('busy means requests keep the loop busy: a loop busy with deliveries alone is not', async (t) => {
  let requests = 0
  const busy = apiBusy(() => requests)
  const spin = (ms: number): void => { const end = performance.now() + ms; while (performance.now() < end) requests += 0 }
  spin(600)
  t.equal(busy(), false, 'a saturated loop without requests')
  requests += 1000
  spin(600)
  t.equal(busy(), true, 'a saturated loop with 1,000 requests in the window')
})
