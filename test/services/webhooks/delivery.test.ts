import t from 'tap'
import { verifyWebhookSignature } from '../../../services/webhooks/signing.js'
import { WEBHOOK_DELIVER_JOB } from '../../../services/webhooks/index.js'
import { engine, receiver, thingEvent } from './fixtures.js'

t.test('a delivery: signed, enveloped, logged with its status and timing', async (t) => {
  const { webhooks, clock, owner, drain } = await engine(t)
  const hook = await receiver(t)
  const { webhook, secret } = await webhooks.create(owner, { url: hook.url, events: ['thing.updated'] }, 'u-admin')
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  t.equal(await drain(), 1)
  t.equal(hook.received.length, 1)
  const [request] = hook.received
  t.equal(request.method, 'POST')
  t.match(request.headers, { 'content-type': 'application/json', 'user-agent': /^Plinth-Webhooks\//, 'plinth-event-type': 'thing.updated', 'plinth-delivery-attempt': '1' })
  const verified = verifyWebhookSignature({ header: request.headers['plinth-signature'] as string, rawBody: request.rawBody, secrets: [secret], nowSeconds: clock.nowMs() / 1000 })
  t.same(verified, { ok: true, timestamp: clock.nowMs() / 1000 }, 'the signature verifies over the raw body with the secret shown at creation')
  t.same(request.body, {
    id: request.headers['plinth-event-id'],
    type: 'thing.updated',
    occurredAt: '2026-01-01T00:00:01.000Z',
    source: 'things',
    projectId: 'p1',
    webhookId: webhook.id,
    actor: { type: 'user', id: 'u1' },
    data: { id: 'thing-1', color: 'red', size: 1 },
    changes: { size: { from: 0, to: 1 }, color: { from: 'blue', to: 'red' } }
  }, 'the envelope: event id, type, time, actor, data and changes')
  t.notOk(verifyWebhookSignature({ header: request.headers['plinth-signature'] as string, rawBody: request.rawBody.replace('red', 'blue'), secrets: [secret], nowSeconds: clock.nowMs() / 1000 }).ok, 'a changed body does not verify')

  const subscription = (await webhooks.find(owner, webhook.id))!
  const { items: [delivery] } = await webhooks.deliveries(subscription)
  t.match(delivery, { id: request.body.id, status: 'delivered', attempts: 1, lastResponseStatus: 200, lastError: null, trigger: 'event' })
  const { items: [attempt] } = await webhooks.attempts(subscription)
  t.match(attempt, { id: request.headers['plinth-request-id'], deliveryId: request.body.id, attempt: 1, outcome: 'delivered', responseStatus: 200, responseExcerpt: 'ok', responseTruncated: false, startedAt: clock.now().toISOString(), retryAt: null })
  t.ok(Number.isInteger(attempt.durationMs) && attempt.durationMs >= 0, 'the attempt\'s duration is kept')
  t.equal(await drain(), 0, 'nothing more is due')
})

t.test('rotation: both secrets sign until the previous one expires, and each verifies alone', async (t) => {
  const { webhooks, clock, owner, drain } = await engine(t)
  const hook = await receiver(t)
  const { webhook, secret: first } = await webhooks.create(owner, { url: hook.url, events: ['*'] }, null)
  const rotated = await webhooks.rotateSecret((await webhooks.find(owner, webhook.id))!, { previousExpiresInSeconds: 3600 })
  t.not(rotated.secret, first)
  t.equal(rotated.webhook.secrets.length, 2)
  t.equal(rotated.webhook.secrets[1].expiresAt, new Date(clock.nowMs() + 3600_000).toISOString(), 'the previous secret says when it stops signing')
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  await drain()
  const verify = (secrets: string[], n: number) => verifyWebhookSignature({ header: hook.received[n].headers['plinth-signature'] as string, rawBody: hook.received[n].rawBody, secrets, nowSeconds: clock.nowMs() / 1000 })
  t.match(hook.received[0].headers['plinth-signature'], /^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/, 'two signatures during the rotation')
  t.ok(verify([first], 0).ok, 'a receiver still holding the old secret verifies')
  t.ok(verify([rotated.secret], 0).ok, 'a receiver already holding the new one verifies')
  t.notOk(verify(['whsec_not-the-secret'], 0).ok, 'another secret does not')

  clock.advance(3600_000)
  await webhooks.publish('things', 'p1', [thingEvent(2)])
  await drain()
  t.match(hook.received[1].headers['plinth-signature'], /^t=\d+,v1=[0-9a-f]{64}$/, 'one signature once the previous secret expired')
  t.notOk(verify([first], 1).ok)
  t.ok(verify([rotated.secret], 1).ok)

  const again = await webhooks.rotateSecret((await webhooks.find(owner, webhook.id))!, { previousExpiresInSeconds: 0 })
  t.equal(again.webhook.secrets.length, 1, 'a rotation with no grace retires the current secret at once')
})

t.test('a rotation after deliveries were signed: the next is signed with the new secret alone, as the webhook now stores it', async (t) => {
  const { webhooks, clock, owner, drain } = await engine(t)
  const hook = await receiver(t)
  const { webhook, secret: first } = await webhooks.create(owner, { url: hook.url, events: ['*'] }, null)
  await webhooks.publish('things', 'p1', [thingEvent(1), thingEvent(2)])
  await drain()
  const verify = (secrets: string[], n: number) => verifyWebhookSignature({ header: hook.received[n].headers['plinth-signature'] as string, rawBody: hook.received[n].rawBody, secrets, nowSeconds: clock.nowMs() / 1000 })
  t.ok(verify([first], 0).ok && verify([first], 1).ok, 'both signed with the first secret')
  const rotated = await webhooks.rotateSecret((await webhooks.find(owner, webhook.id))!, { previousExpiresInSeconds: 0 })
  await webhooks.publish('things', 'p1', [thingEvent(3)])
  await drain()
  t.ok(verify([rotated.secret], 2).ok, 'the rotated secret signs')
  t.notOk(verify([first], 2).ok, 'the retired one no longer does')
  await webhooks.delete((await webhooks.find(owner, webhook.id))!)
  const again = await webhooks.create(owner, { url: hook.url, events: ['*'] }, null)
  await webhooks.publish('things', 'p1', [thingEvent(4)])
  await drain()
  t.ok(verify([again.secret], 3).ok, 'a new webhook signs with its own secret')
})

t.test('500 then 200: exactly one retry, after the backoff and not before', async (t) => {
  const { webhooks, queue, clock, owner, drain } = await engine(t)
  const hook = await receiver(t, [{ status: 500, body: 'boom' }])
  const { webhook } = await webhooks.create(owner, { url: hook.url, events: ['thing.updated'] }, null)
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  t.equal(await drain(), 1)
  const subscription = (await webhooks.find(owner, webhook.id))!
  const { items: [first] } = await webhooks.attempts(subscription)
  // Equal jitter with random() = 0.5: three quarters of the 30 s first step.
  t.match(first, { outcome: 'retry', responseStatus: 500, responseExcerpt: 'boom', error: 'answered 500', retryAt: new Date(clock.nowMs() + 22_500).toISOString() })
  const job = await queue.jobs.findOne({ type: WEBHOOK_DELIVER_JOB })
  t.same(job?.runAt, new Date(clock.nowMs() + 22_500), 'the job is due when the retry is')
  t.equal(await drain(), 0, 'not before')
  clock.advance(22_500)
  t.equal(await drain(), 1)
  t.equal(hook.received.length, 2, 'one retry')
  t.equal(hook.received[1].body.id, hook.received[0].body.id, 'with the same event id')
  t.equal(hook.received[1].headers['plinth-delivery-attempt'], '2')
  clock.advance(3_600_000)
  t.equal(await drain(), 0, 'and no more')
  t.match((await webhooks.deliveries(subscription)).items[0], { status: 'delivered', attempts: 2 })
  t.match((await webhooks.find(owner, webhook.id))?.failures, { count: 0, since: null }, 'a success ends the failure streak')
})

t.test('429 with Retry-After: 2 is retried at 2 s and no sooner; a longer Retry-After holds the retry back as long', async (t) => {
  const { webhooks, queue, clock, owner, drain } = await engine(t)
  const hook = await receiver(t, [{ status: 429, headers: { 'retry-after': '2' } }, { status: 429, headers: { 'retry-after': '120' } }, { status: 429, headers: { 'retry-after': '0' } }])
  await webhooks.create(owner, { url: hook.url, events: ['thing.updated'] }, null)
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  await drain()
  t.equal(hook.received.length, 1)
  t.same((await queue.jobs.findOne({ type: WEBHOOK_DELIVER_JOB }))?.runAt, new Date(clock.nowMs() + 2_000), 'the job is due at Retry-After')
  clock.advance(1_999)
  t.equal(await drain(), 0, 'nothing due at 1.999 s')
  t.equal(hook.received.length, 1)
  clock.advance(1)
  await drain()
  t.equal(hook.received.length, 2, 'retried at 2 s')
  clock.advance(119_999)
  await drain()
  t.equal(hook.received.length, 2, 'Retry-After: 120 holds it back 120 s')
  clock.advance(1)
  await drain()
  t.equal(hook.received.length, 3)
  clock.advance(999)
  await drain()
  t.equal(hook.received.length, 3, 'Retry-After: 0 is taken as 1 s, so a receiver cannot make the engine spin')
  clock.advance(1)
  await drain()
  t.equal(hook.received.length, 4)
})

t.test('Retry-After as an HTTP date: the retry waits for that time', async (t) => {
  const { webhooks, clock, owner, drain } = await engine(t)
  const at = new Date(clock.nowMs() + 90_000).toUTCString()
  const hook = await receiver(t, [{ status: 503, headers: { 'retry-after': at } }])
  await webhooks.create(owner, { url: hook.url, events: ['thing.updated'] }, null)
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  await drain()
  clock.advance(89_999)
  await drain()
  t.equal(hook.received.length, 1)
  clock.advance(1)
  await drain()
  t.equal(hook.received.length, 2)
})

t.test('answers are read back capped, and a redirect is an answer, never followed', async (t) => {
  const { webhooks, owner, drain } = await engine(t)
  const elsewhere = await receiver(t)
  const hook = await receiver(t, [{ status: 200, body: Buffer.alloc(1024 * 1024, 'x') }, { status: 302, headers: { location: elsewhere.url } }])
  const { webhook } = await webhooks.create(owner, { url: hook.url, events: ['thing.updated'] }, null)
  await webhooks.publish('things', 'p1', [thingEvent(1), thingEvent(2)])
  await drain()
  const subscription = (await webhooks.find(owner, webhook.id))!
  const [redirected, big] = (await webhooks.attempts(subscription)).items
  t.match(big, { outcome: 'delivered', responseStatus: 200, responseTruncated: true })
  t.equal(big.responseExcerpt?.length, 4096, 'at most 4 KiB of a 1 MiB answer is kept')
  t.match(redirected, { outcome: 'failed', responseStatus: 302, error: /redirects are not followed/ })
  t.equal(elsewhere.received.length, 0, 'the redirect\'s target got nothing')
})
