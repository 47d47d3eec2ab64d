import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { verifyWebhookSignature } from '../../../services/webhooks/signing.js'
import { receiver } from '../../services/webhooks/fixtures.js'
import { trackerSetup, type TrackerSetup } from './fixtures.js'

/**
 * The tracker's webhook routes end to end: the app's own job worker delivers
 * to a real receiver on loopback (allowed by WEBHOOK_ALLOWED_HOSTS), and the
 * assertions read what the receiver got and what the routes' delivery log
 * says. The engine's timing rules are proven on a manual clock in
 * test/services/webhooks/; here the retries are the real worker's, so the
 * receivers ask for short Retry-After waits.
 */

const ALLOW = { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' }

/** Polls until `check` holds (the worker delivers in the background); fails after `seconds`. */
async function until (what: string, check: () => boolean | Promise<boolean>, seconds = 20): Promise<void> {
  const end = Date.now() + seconds * 1000
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
}

/** A port on loopback nobody listens on: a dead receiver. */
async function deadPort (): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  server.close()
  await once(server, 'close')
  return port
}

function hooksOf (setup: TrackerSetup) {
  const { base, owner, must } = setup
  const hooks = `${base}/webhooks`
  return {
    hooks,
    create: async (body: Record<string, unknown>) => await must('POST', hooks, owner.auth, body) as { webhook: { id: string }, secret: string },
    log: async (id: string) => (await must('GET', `${hooks}/${id}/attempts`, owner.auth)).items as Array<Record<string, any>>,
    deliveries: async (id: string) => (await must('GET', `${hooks}/${id}/deliveries`, owner.auth)).items as Array<Record<string, any>>
  }
}

t.test('managing webhooks: tracker.admin in the platform project, the secret shown once, refusals in the envelope', async (t) => {
  const setup = await trackerSetup(t, ALLOW)
  const { api, owner, member, viewer, outsider } = setup
  const { hooks } = hooksOf(setup)
  const body = { url: 'http://127.0.0.1:9/hook', events: ['work_item.updated'], description: 'CI' }

  const made = await api('POST', hooks, owner.auth, body)
  t.equal(made.status, 201)
  t.match(made.body.data, { webhook: { url: body.url, events: body.events, active: true, source: 'tracker' }, secret: /^whsec_/ })
  const id = made.body.data.webhook.id as string
  t.equal(made.headers.location, `${hooks}/${id}`)
  const got = await api('GET', `${hooks}/${id}`, owner.auth)
  t.equal(got.status, 200)
  t.notOk(JSON.stringify(got.body).includes(made.body.data.secret), 'the secret is never shown again')
  t.same((await api('GET', hooks, owner.auth)).body.data.items.map((hook: { id: string }) => hook.id), [id])
  t.match((await api('PATCH', `${hooks}/${id}`, owner.auth, { active: false })).body.data, { active: false })

  const refusals: Array<[string, Record<string, string>, 'GET' | 'POST' | 'PATCH' | 'DELETE', string, unknown, number, string]> = [
    ['a member without tracker.admin', member.auth, 'GET', hooks, undefined, 403, 'APP_FORBIDDEN'],
    ['a viewer', viewer.auth, 'POST', hooks, body, 403, 'APP_FORBIDDEN'],
    ['an outsider', outsider.auth, 'GET', `${hooks}/${id}`, undefined, 404, 'APP_PROJECT_NOT_FOUND'],
    ['no such webhook', owner.auth, 'GET', `${hooks}/nope`, undefined, 404, 'APP_WEBHOOK_NOT_FOUND'],
    ['an internal address', owner.auth, 'POST', hooks, { ...body, url: 'http://10.1.2.3/hook' }, 400, 'APP_WEBHOOK_URL_FORBIDDEN'],
    ['an unknown event type', owner.auth, 'POST', hooks, { ...body, events: ['work_item.exploded'] }, 400, 'APP_WEBHOOK_UNKNOWN_EVENT'],
    ['a filter outside the grammar', owner.auth, 'POST', hooks, { ...body, filter: { field: 'nope', op: 'eq', value: 1 } }, 400, 'APP_TRACKER_INVALID_FILTER'],
    ['an unknown field', owner.auth, 'PATCH', `${hooks}/${id}`, { colour: 'red' }, 400, 'APP_VALIDATION_FAILED'],
    ['no such delivery', owner.auth, 'POST', `${hooks}/${id}/deliveries/nope/redeliver`, undefined, 404, 'APP_WEBHOOK_DELIVERY_NOT_FOUND'],
    ['a replay on a paused webhook', owner.auth, 'POST', `${hooks}/${id}/replay`, { from: '2026-01-02T00:00:00.000Z', to: '2026-01-01T00:00:00.000Z' }, 409, 'APP_WEBHOOK_INACTIVE']
  ]
  for (const [name, auth, method, url, payload, status, code] of refusals) {
    const res = await api(method, url, auth, payload)
    t.match({ status: res.status, body: res.body }, { status, body: { success: false, code } }, name)
  }
  t.match(await api('DELETE', `${hooks}/${id}`, owner.auth), { status: 200, body: { data: { id, deleted: true } } })
  t.equal((await api('GET', `${hooks}/${id}`, owner.auth)).status, 404)
})

t.test('deliveries through the routes: signatures during rotation, one retry after a 500, Retry-After honoured, redeliver, replay, bulk', async (t) => {
  const setup = await trackerSetup(t, ALLOW)
  const { lp, owner, must, api } = setup
  const { hooks, create, log, deliveries } = hooksOf(setup)

  t.test('a signature verifies with either secret while a rotation\'s grace lasts', async (t) => {
    const target = await receiver(t)
    const { webhook, secret: first } = await create({ url: target.url, events: ['work_item.created'] })
    await must('POST', `${lp}/work-items`, owner.auth, { title: 'Signed' })
    await until('the first delivery', () => target.received.length === 1)
    const rotated = await must('POST', `${hooks}/${webhook.id}/rotate-secret`, owner.auth, { previousExpiresInSeconds: 3600 })
    t.equal(rotated.webhook.secrets.length, 2, 'two secrets sign during the grace')
    await must('POST', `${lp}/work-items`, owner.auth, { title: 'Signed twice' })
    await until('the second delivery', () => target.received.length === 2)
    const [before, during] = target.received
    const verify = (request: typeof before, secret: string) => verifyWebhookSignature({ header: request.headers['plinth-signature'] as string, rawBody: request.rawBody, secrets: [secret] }).ok
    t.ok(verify(before, first), 'before the rotation: the first secret')
    t.notOk(verify(before, rotated.secret), 'not the one made after')
    t.ok(verify(during, first) && verify(during, rotated.secret), 'during the grace: either secret alone verifies')
    t.notOk(verify(during, 'whsec_not-the-secret'), 'and nothing else does')
    t.match(during.body, { type: 'work_item.created', source: 'tracker', webhookId: webhook.id, actor: { type: 'user', id: owner.id }, data: { title: 'Signed twice' } })
    await must('DELETE', `${hooks}/${webhook.id}`, owner.auth)
  })

  t.test('500 then 200 is one retry; 429 with Retry-After: 2 is retried no sooner', async (t) => {
    const flaky = await receiver(t, [{ status: 500, headers: { 'retry-after': '1' } }])
    const busy = await receiver(t, [{ status: 429, headers: { 'retry-after': '2' } }])
    const a = await create({ url: flaky.url, events: ['work_item.created'] })
    const b = await create({ url: busy.url, events: ['work_item.created'] })
    const item = await must('POST', `${lp}/work-items`, owner.auth, { title: 'Retried' })
    await until('both delivered', async () => (await deliveries(a.webhook.id))[0]?.status === 'delivered' && (await deliveries(b.webhook.id))[0]?.status === 'delivered')

    t.equal(flaky.received.length, 2, 'the 500 was retried once, and the 200 ended it')
    t.equal(flaky.received[0].body.id, flaky.received[1].body.id, 'under the same event id')
    t.same(flaky.received.map((request) => request.headers['plinth-delivery-attempt']), ['1', '2'])
    const flakyLog = (await log(a.webhook.id)).reverse()
    t.match(flakyLog, [{ attempt: 1, outcome: 'retry', responseStatus: 500 }, { attempt: 2, outcome: 'delivered', responseStatus: 200 }])
    t.match((await deliveries(a.webhook.id))[0], { status: 'delivered', attempts: 2, lastResponseStatus: 200, type: 'work_item.created' })

    const [first, second] = (await log(b.webhook.id)).reverse()
    t.match(first, { outcome: 'retry', responseStatus: 429 })
    const started = Date.parse(first.startedAt)
    const retryAt = Date.parse(first.retryAt)
    t.ok(retryAt - started >= 2000, `the retry was set 2 s out or later (${retryAt - started} ms)`)
    t.ok(Date.parse(second.startedAt) >= retryAt, 'and the second attempt started no sooner than that')
    t.match(second, { outcome: 'delivered', attempt: 2 })
    t.equal(busy.received[1].body.data.id, item.id)
    for (const id of [a.webhook.id, b.webhook.id]) await must('DELETE', `${hooks}/${id}`, owner.auth)
  })

  t.test('redeliver one delivery, replay a range, and the test action', async (t) => {
    const target = await receiver(t)
    const { webhook } = await create({ url: target.url, events: ['*'] })
    const from = new Date().toISOString()
    await must('POST', `${lp}/work-items`, owner.auth, { title: 'One' })
    await must('POST', `${lp}/work-items`, owner.auth, { title: 'Two' })
    await until('two deliveries', () => target.received.length === 2)
    const [latest] = await deliveries(webhook.id)
    const again = await must('POST', `${hooks}/${webhook.id}/deliveries/${latest.id}/redeliver`, owner.auth)
    t.match(again, { id: latest.id, trigger: 'redeliver' })
    await until('the redelivery', () => target.received.length === 3)
    t.equal(target.received[2].body.id, latest.id, 'the same event id again')
    // The receiver has the request before the attempt's answer is read and logged.
    await until('the redelivery logged', async () => (await must('GET', `${hooks}/${webhook.id}/deliveries/${latest.id}/attempts`, owner.auth)).items.length === 2)
    t.match(await must('GET', `${hooks}/${webhook.id}/deliveries/${latest.id}/attempts`, owner.auth), { items: [{ trigger: 'redeliver' }, { trigger: 'event' }] })

    const replay = await must('POST', `${hooks}/${webhook.id}/replay`, owner.auth, { from, to: new Date(Date.now() + 1000).toISOString() })
    t.match(replay, { matched: 2, queued: 2, truncated: false })
    await until('the replay', () => target.received.length === 5)
    t.same(new Set(target.received.slice(3).map((request) => request.body.id)), new Set(target.received.slice(0, 2).map((request) => request.body.id)), 'the two events again')
    t.match(await must('POST', `${hooks}/${webhook.id}/replay`, owner.auth, { from, to: new Date().toISOString(), onlyFailed: true }), { matched: 2, queued: 0 })

    const test = await must('POST', `${hooks}/${webhook.id}/test`, owner.auth, { type: 'work_item.updated' })
    t.match(test, { trigger: 'test', outcome: 'delivered', responseStatus: 200 })
    t.match(target.received[5].body, { type: 'work_item.updated', test: true })
    const refused = await api('POST', `${hooks}/${webhook.id}/deliveries/${test.deliveryId as string}/redeliver`, owner.auth)
    t.match(refused, { status: 409, body: { code: 'APP_WEBHOOK_TEST_DELIVERY' } })
    await must('DELETE', `${hooks}/${webhook.id}`, owner.auth)
  })

  t.test('one bulk patch of 10 items is 10 events, not 20', async (t) => {
    const ids: string[] = []
    for (let n = 0; n < 10; n++) ids.push((await must('POST', `${lp}/work-items`, owner.auth, { title: `Bulk ${n}` })).id)
    const target = await receiver(t)
    const { webhook } = await create({ url: target.url, events: ['work_item.updated'] })
    const result = await must('PATCH', `${lp}/work-items`, owner.auth, { ids, patch: { priority: 'high', targetDate: '2026-12-31' } })
    t.match(result, { patched: 10, failed: 0 })
    await until('ten deliveries', async () => (await deliveries(webhook.id)).filter((delivery) => delivery.status === 'delivered').length === 10)
    t.equal((await deliveries(webhook.id)).length, 10, 'ten deliveries')
    t.equal(new Set(target.received.map((request) => request.body.id)).size, 10, 'ten distinct events')
    t.equal(target.received.length, 10)
    for (const request of target.received) t.same(Object.keys(request.body.changes as object).sort(), ['priority', 'targetDate'], 'both fields in one event')
  })
})

t.test('a dead receiver is disabled after WEBHOOK_DISABLE_AFTER_FAILURES failed deliveries, with a notice and an event', async (t) => {
  const setup = await trackerSetup(t, { ...ALLOW, WEBHOOK_MAX_ATTEMPTS: '1', WEBHOOK_DISABLE_AFTER_FAILURES: '3' })
  const { lp, owner, must, api } = setup
  const { hooks, create, deliveries } = hooksOf(setup)
  const alerts = await receiver(t)
  const dead = await create({ url: `http://127.0.0.1:${await deadPort()}/hook`, events: ['work_item.created'], description: 'dead' })
  await create({ url: alerts.url, events: ['webhook.disabled'] })

  for (let n = 0; n < 3; n++) {
    await must('POST', `${lp}/work-items`, owner.auth, { title: `Lost ${n}` })
    await until(`delivery ${n + 1} given up`, async () => (await deliveries(dead.webhook.id)).filter((delivery) => delivery.status === 'failed').length === n + 1)
  }
  await until('the alert', () => alerts.received.length === 1)
  const disabled = (await api('GET', `${hooks}/${dead.webhook.id}`, owner.auth)).body.data
  t.match(disabled, { active: false, disabled: { reason: /3/ }, failures: { count: 3 } })
  t.match(alerts.received[0].body, { type: 'webhook.disabled', data: { webhookId: dead.webhook.id } })
  t.match((await must('GET', `${hooks}/notices`, owner.auth)).items, [{ webhookId: dead.webhook.id, type: 'webhook.disabled', consecutiveFailures: 3 }])

  await must('POST', `${lp}/work-items`, owner.auth, { title: 'While disabled' })
  const [latest] = await deliveries(dead.webhook.id)
  t.not(latest.type === 'work_item.created' && latest.status === 'pending', true, 'no delivery is made while it is disabled')
  t.match(await api('POST', `${hooks}/${dead.webhook.id}/deliveries/${latest.id as string}/redeliver`, owner.auth), { status: 409, body: { code: 'APP_WEBHOOK_INACTIVE' } })
  t.match((await api('PATCH', `${hooks}/${dead.webhook.id}`, owner.auth, { active: true })).body.data, { active: true, disabled: null, failures: { count: 0 } })
})
