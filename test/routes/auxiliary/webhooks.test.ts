import { once } from 'node:events'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { call } from '../../helper.js'
import { verifyWebhookSignature } from '../../../services/webhooks/signing.js'
import { RECORD_CHANGES } from '../../../services/auxiliary/record-feed.js'
import { receiver } from '../../services/webhooks/fixtures.js'
import { auxiliarySetup, eventually } from './fixtures.js'

/** A loopback port nothing listens on: a receiver that is down. */
async function deadPort (): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  server.close()
  await once(server, 'close')
  return port
}

t.test('record writes reach a subscribed receiver, signed, with denied fields left out', async (t) => {
  const { app, owner, base, data, projectId } = await auxiliarySetup(t)
  const hook = await receiver(t)
  const made = await call(app, 'POST', `${base}/webhooks`, owner.auth, { url: hook.url, events: ['record.created', 'record.updated', 'record.deleted'], filter: { collections: ['posts'] } })
  t.equal(made.status, 201)
  t.equal(made.headers.location, `${base}/webhooks/${made.body.data.webhook.id as string}`)
  const secret = made.body.data.secret as string
  t.match(secret, /^whsec_/)

  const post = (await call(app, 'POST', data, {}, { title: 'Hello', secret: 'hidden value' })).body.data
  t.equal((await call(app, 'PUT', `${data}/${post.id as string}`, {}, { title: 'Hello again' })).status, 200)
  await call(app, 'DELETE', `${data}/${post.id as string}`, {})
  await eventually(t, 'three deliveries', async () => hook.received.length >= 3)
  const byType = Object.fromEntries(hook.received.map((request) => [request.body.type, request]))
  t.same(Object.keys(byType).sort(), ['record.created', 'record.deleted', 'record.updated'])
  for (const request of hook.received) {
    t.same(verifyWebhookSignature({ header: String(request.headers['plinth-signature']), rawBody: request.rawBody, secrets: [secret] }).ok, true, `${request.body.type}: the signature verifies`)
    t.notOk(request.rawBody.includes('hidden value'), `${request.body.type}: a denied field never leaves`)
    t.equal(request.headers['plinth-event-id'], request.body.id)
  }
  t.match(byType['record.created'].body, { source: 'records', projectId, data: { collection: 'posts', record: { id: post.id, title: 'Hello', version: 1 } }, actor: { type: 'anonymous' } })
  t.match(byType['record.updated'].body, { changes: { title: { from: 'Hello', to: 'Hello again' } } })
  t.same(Object.keys(byType['record.updated'].body.changes as object), ['title'], 'the denied field is out of the changes too')
  t.notOk(verifyWebhookSignature({ header: String(hook.received[0].headers['plinth-signature']), rawBody: hook.received[0].rawBody + ' ', secrets: [secret] }).ok, 'another body does not verify')
  // A write settles its feed entry after publishing it, and a kept-alive delivery can reach the receiver before that commits.
  await eventually(t, 'every feed entry settled', async () => await app.store.collection(RECORD_CHANGES).countDocuments({}) === 0)
  t.equal(await app.store.collection(RECORD_CHANGES).countDocuments({}), 0, 'every feed entry was settled by its write')

  const webhookId = made.body.data.webhook.id as string
  const deliveries = await eventually(t, 'three delivered', async () => {
    const page = (await call(app, 'GET', `${base}/webhooks/${webhookId}/deliveries`, owner.auth)).body.data
    return page.items.length === 3 && page.items.every((item: { status: string }) => item.status === 'delivered') ? page : null
  })
  const one = await call(app, 'GET', `${base}/webhooks/${webhookId}/deliveries/${deliveries.items[0].id as string}`, owner.auth)
  t.equal(one.body.data.id, deliveries.items[0].id)
  const again = await call(app, 'POST', `${base}/webhooks/${webhookId}/deliveries/${deliveries.items[0].id as string}/redeliver`, owner.auth)
  t.equal(again.body.data.trigger, 'redeliver')
  await eventually(t, 'the redelivery', async () => hook.received.length >= 4)
  t.equal(hook.received[3].body.id, deliveries.items[0].id, 'a redelivery keeps the event id')
  const attempts = await eventually(t, 'four attempts logged', async () => {
    const page = (await call(app, 'GET', `${base}/webhooks/${webhookId}/attempts?limit=10`, owner.auth)).body.data
    return page.items.length === 4 ? page : null
  })
  t.equal(attempts.items[0].outcome, 'delivered')

  const test = await call(app, 'POST', `${base}/webhooks/${webhookId}/test`, owner.auth, { type: 'record.updated' })
  t.same([test.status, test.body.data.outcome, test.body.data.trigger], [200, 'delivered', 'test'])
  t.equal(hook.received.at(-1)?.body.test, true)

  const rotated = await call(app, 'POST', `${base}/webhooks/${webhookId}/rotate-secret`, owner.auth, { previousExpiresInSeconds: 60 })
  t.equal(rotated.body.data.webhook.secrets.length, 2, 'both secrets sign during the grace')
  await call(app, 'POST', data, {}, { title: 'After rotation' })
  await eventually(t, 'the next delivery', async () => hook.received.some((request) => request.body.type === 'record.created' && (request.body.data.record as { title: string }).title === 'After rotation'))
  const last = hook.received.find((request) => (request.body.data.record as { title?: string })?.title === 'After rotation')!
  t.ok(verifyWebhookSignature({ header: String(last.headers['plinth-signature']), rawBody: last.rawBody, secrets: [rotated.body.data.secret] }).ok, 'the new secret verifies')
  t.ok(verifyWebhookSignature({ header: String(last.headers['plinth-signature']), rawBody: last.rawBody, secrets: [secret] }).ok, 'and the old one still does')

  const replay = await call(app, 'POST', `${base}/webhooks/${webhookId}/replay`, owner.auth, { from: new Date(Date.now() - 3_600_000).toISOString(), to: new Date(Date.now() + 1000).toISOString() })
  t.equal(replay.body.data.matched, 4, 'the range holds the four record events')
})

t.test('a filter and a field mask choose the events and what they carry', async (t) => {
  const { app, owner, base, data } = await auxiliarySetup(t)
  const hook = await receiver(t)
  const made = await call(app, 'POST', `${base}/webhooks`, owner.auth, { url: hook.url, events: ['record.created'], filter: { collections: ['posts'], where: { title: { $regex: '^pub' } }, fields: ['title'] } })
  t.equal(made.status, 201)
  await call(app, 'POST', data, {}, { title: 'draft', body: 'x' })
  await call(app, 'POST', data, {}, { title: 'published', body: 'long text' })
  await eventually(t, 'one delivery', async () => hook.received.length >= 1)
  const deliveries = (await call(app, 'GET', `${base}/webhooks/${made.body.data.webhook.id as string}/deliveries`, owner.auth)).body.data.items
  t.equal(deliveries.length, 1, 'only the record the filter matches')
  t.equal((hook.received[0].body.data.record as { title: string }).title, 'published')
  t.notOk('body' in (hook.received[0].body.data.record as object), 'the mask drops the other fields')

  const refusals: Array<[string, unknown, string]> = [
    ['an unknown collection', { collections: ['nope'] }, 'body.filter.collections[0]'],
    ['a denied field in the mask', { collections: ['posts'], fields: ['secret'] }, 'body.filter.fields'],
    ['a filter on a denied field', { collections: ['posts'], where: { secret: 'x' } }, 'secret']
  ]
  for (const [why, filter, path] of refusals) {
    const res = await call(app, 'POST', `${base}/webhooks`, owner.auth, { url: hook.url, events: ['record.created'], filter })
    t.equal(res.status, 400, why)
    t.match(JSON.stringify(res.body), path, `${why}: names ${path}`)
  }
})

t.test('500 then 200 is one retry', async (t) => {
  const { app, owner, base, data } = await auxiliarySetup(t)
  // Retry-After brings the retry into the test's reach (the backoff starts at 30 s); 1 s is its floor.
  const flaky = await receiver(t, [{ status: 500, headers: { 'retry-after': '1' }, body: 'busy' }])
  const retrying = await call(app, 'POST', `${base}/webhooks`, owner.auth, { url: flaky.url, events: ['record.created'], filter: { collections: ['posts'] } })
  await call(app, 'POST', data, {}, { title: 'one' })

  const flakyId = retrying.body.data.webhook.id as string
  await eventually(t, 'the retry', async () => flaky.received.length >= 2)
  const attempts = await eventually(t, 'two attempts logged', async () => {
    const items = (await call(app, 'GET', `${base}/webhooks/${flakyId}/attempts`, owner.auth)).body.data.items
    return items.length === 2 ? items : null
  })
  t.same(attempts.map((attempt: { outcome: string, responseStatus: number }) => [attempt.outcome, attempt.responseStatus]), [['delivered', 200], ['retry', 500]], 'newest first')
  t.equal(flaky.received[0].body.id, flaky.received[1].body.id, 'the retry keeps the event id')
  t.equal(flaky.received.length, 2, 'exactly one retry')
})

t.test('a dead receiver is disabled', async (t) => {
  const { app, owner, base, data } = await auxiliarySetup(t, { WEBHOOK_MAX_ATTEMPTS: '1', WEBHOOK_DISABLE_AFTER_FAILURES: '1' })
  const dead = await call(app, 'POST', `${base}/webhooks`, owner.auth, { url: `http://127.0.0.1:${await deadPort()}/hook`, events: ['*'], filter: { collections: ['posts'] } })
  t.equal(dead.status, 201)
  await call(app, 'POST', data, {}, { title: 'one' })
  const deadId = dead.body.data.webhook.id as string
  const disabled = await eventually(t, 'the dead receiver disabled', async () => {
    const view = (await call(app, 'GET', `${base}/webhooks/${deadId}`, owner.auth)).body.data
    return view.disabled !== null ? view : null
  })
  t.same([disabled.active, disabled.failures.count], [false, 1])
  const notices = await eventually(t, 'a notice', async () => {
    const items = (await call(app, 'GET', `${base}/webhooks/notices`, owner.auth)).body.data.items
    return items.length > 0 ? items : null
  })
  t.equal(notices[0].webhookId, deadId)
  const redeliver = await call(app, 'POST', `${base}/webhooks/${deadId}/replay`, owner.auth, { from: new Date(Date.now() - 60_000).toISOString(), to: new Date().toISOString() })
  t.same([redeliver.status, redeliver.body.code], [409, 'APP_WEBHOOK_INACTIVE'])
  const described = await call(app, 'PATCH', `${base}/webhooks/${deadId}`, owner.auth, { description: 'the old receiver' })
  t.same([described.status, described.body.data.active], [200, false], 'a patch that leaves active out does not activate it')
  const active = await call(app, 'PATCH', `${base}/webhooks/${deadId}`, owner.auth, { active: true })
  t.same([active.body.data.active, active.body.data.disabled, active.body.data.failures.count], [true, null, 0], 'activating again clears the streak')
})

t.test('who may do what, and the refusals', async (t) => {
  const { app, owner, member, viewer, outsider, base } = await auxiliarySetup(t)
  const body = { url: 'http://127.0.0.1:9/hook', events: ['record.created'], filter: { collections: ['posts'] } }
  const made = await call(app, 'POST', `${base}/webhooks`, owner.auth, body)
  const one = `${base}/webhooks/${made.body.data.webhook.id as string}`
  const cases: Array<[string, Record<string, string>, 'GET' | 'POST' | 'PATCH' | 'DELETE', string, unknown, number, string?]> = [
    ['a viewer lists', viewer.auth, 'GET', `${base}/webhooks`, undefined, 200],
    ['a viewer reads one', viewer.auth, 'GET', one, undefined, 200],
    ['a member reads one', member.auth, 'GET', one, undefined, 200],
    ['a member cannot create', member.auth, 'POST', `${base}/webhooks`, body, 403, 'APP_FORBIDDEN'],
    ['a viewer cannot change', viewer.auth, 'PATCH', one, { description: 'x' }, 403, 'APP_FORBIDDEN'],
    ['an outsider gets the project\'s 404', outsider.auth, 'GET', `${base}/webhooks`, undefined, 404, 'APP_PROJECT_NOT_FOUND'],
    ['no credential', {}, 'GET', `${base}/webhooks`, undefined, 401],
    ['an unknown webhook', owner.auth, 'GET', `${base}/webhooks/nope`, undefined, 404, 'APP_WEBHOOK_NOT_FOUND'],
    ['an unknown delivery', owner.auth, 'GET', `${one}/deliveries/nope`, undefined, 404, 'APP_WEBHOOK_DELIVERY_NOT_FOUND'],
    ['an unknown event type', owner.auth, 'POST', `${base}/webhooks`, { ...body, events: ['record.renamed'] }, 400, 'APP_WEBHOOK_UNKNOWN_EVENT'],
    ['no filter', owner.auth, 'POST', `${base}/webhooks`, { url: body.url, events: body.events }, 400, 'APP_VALIDATION_FAILED'],
    ['a URL that is not one', owner.auth, 'POST', `${base}/webhooks`, { ...body, url: 'ftp://example.com/x' }, 400, 'APP_WEBHOOK_INVALID_URL'],
    ['an internal address', owner.auth, 'POST', `${base}/webhooks`, { ...body, url: 'http://10.1.2.3/hook' }, 400, 'APP_WEBHOOK_URL_FORBIDDEN'],
    ['a reversed replay range', owner.auth, 'POST', `${one}/replay`, { from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z' }, 400, 'APP_WEBHOOK_INVALID_RANGE'],
    ['an empty patch', owner.auth, 'PATCH', one, {}, 400, 'APP_VALIDATION_FAILED']
  ]
  for (const [why, auth, method, url, payload, status, code] of cases) {
    const res = await call(app, method, url, auth, payload)
    t.equal(res.status, status, why)
    if (code !== undefined) t.equal(res.body.code, code, `${why}: ${code}`)
  }
  const gone = await call(app, 'DELETE', one, owner.auth)
  t.same(gone.body.data, { id: made.body.data.webhook.id, deleted: true })
  t.equal((await call(app, 'GET', one, owner.auth)).status, 404)
})
