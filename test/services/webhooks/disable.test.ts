import t from 'tap'
import { once } from 'node:events'
import { createServer } from 'node:net'
import type { AddressInfo } from 'node:net'
import { engine, receiver, thingEvent, thingSource } from './fixtures.js'

/** A port nothing listens on: connections to it are refused. */
async function deadPort (): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as AddressInfo
  server.close()
  await once(server, 'close')
  return port
}

/** Runs every attempt of what is queued, moving the clock to each retry, until nothing is left. */
async function exhaust (drain: () => Promise<number>, advance: () => void, rounds = 50): Promise<void> {
  for (let i = 0; i < rounds; i++) {
    await drain()
    advance()
  }
}

t.test('a dead receiver: each delivery given up after its attempts, the webhook disabled after the stated failures in a row', async (t) => {
  const told: string[] = []
  const { webhooks, clock, owner, drain } = await engine(t, { env: { WEBHOOK_MAX_ATTEMPTS: '3', WEBHOOK_DISABLE_AFTER_FAILURES: '2' }, source: thingSource({ onDisabled: async (notice) => { told.push(notice.subscriptionId) } }) })
  const port = await deadPort()
  const alerts = await receiver(t)
  const dead = await webhooks.create(owner, { url: `http://127.0.0.1:${port}/hook`, events: ['thing.updated'], description: 'the dead one' }, null)
  const watcher = await webhooks.create(owner, { url: alerts.url, events: ['webhook.disabled'] }, null)

  await webhooks.publish('things', 'p1', [thingEvent(1)])
  await exhaust(drain, () => { clock.advance(3_600_000) })
  let record = (await webhooks.find(owner, dead.webhook.id))!
  t.match(record, { active: true, failures: { count: 1 } }, 'one failed delivery: still active')
  const attempts = (await webhooks.attempts(record)).items
  t.same(attempts.map((attempt) => attempt.outcome), ['failed', 'retry', 'retry'], 'three attempts, the last gives up')
  t.match(attempts[0], { responseStatus: null, error: /ECONNREFUSED.*gave up after 3 attempts/ })
  t.match((await webhooks.deliveries(record)).items[0], { status: 'failed', attempts: 3 })

  await webhooks.publish('things', 'p1', [thingEvent(2)])
  await exhaust(drain, () => { clock.advance(3_600_000) })
  record = (await webhooks.find(owner, dead.webhook.id))!
  t.match(record, { active: false, disabled: { reason: '2 deliveries in a row failed' }, failures: { count: 2 } }, 'the second failed delivery disables it')

  const { items: [notice] } = await webhooks.notices(owner)
  t.match(notice, { webhookId: dead.webhook.id, type: 'webhook.disabled', reason: '2 deliveries in a row failed', consecutiveFailures: 2, lastError: /ECONNREFUSED/ }, 'a notice the routes can show')
  t.equal(alerts.received.length, 1, 'the owner\'s webhook that takes webhook.disabled is told')
  t.same(told, [dead.webhook.id], 'and the source, once')
  t.match(alerts.received[0].body, { type: 'webhook.disabled', webhookId: watcher.webhook.id, actor: { type: 'system', id: null }, data: { webhook: { id: dead.webhook.id, description: 'the dead one' }, reason: '2 deliveries in a row failed' } })

  await webhooks.publish('things', 'p1', [thingEvent(3)])
  t.equal(await drain(), 0, 'a disabled webhook gets no new deliveries')

  const revived = await webhooks.update(record, { active: true })
  t.match(revived, { active: true, disabled: null, failures: { count: 0, since: null } }, 'activating it again clears the streak')
})

t.test('a receiver failing for WEBHOOK_DISABLE_AFTER_HOURS without one success is disabled, however few deliveries failed', async (t) => {
  const { webhooks, clock, owner, drain } = await engine(t, { env: { WEBHOOK_DISABLE_AFTER_HOURS: '2', WEBHOOK_DISABLE_AFTER_FAILURES: '100' } })
  const hook = await receiver(t, [], { status: 503 })
  const { webhook } = await webhooks.create(owner, { url: hook.url, events: ['thing.updated'] }, null)
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  await drain()
  const since = clock.now()
  t.match(await webhooks.find(owner, webhook.id), { active: true, failures: { count: 0, since } }, 'the first failed attempt starts the streak')
  let turns = 0
  while ((await webhooks.find(owner, webhook.id))?.active === true && turns++ < 100) {
    clock.advance(10 * 60_000)
    await drain()
  }
  const record = (await webhooks.find(owner, webhook.id))!
  t.match(record, { active: false, disabled: { reason: /^failing since .* without one successful attempt$/ } })
  t.ok(record.disabled!.at.getTime() - since.getTime() >= 2 * 3_600_000, 'not before the stated hours')
  t.match((await webhooks.deliveries(record)).items[0], { status: 'retrying' }, 'the delivery had not even used its attempts')
  clock.advance(5 * 3_600_000)
  t.equal(await drain(), 0, 'its retry comes due and makes no attempt')
  t.equal(hook.received.length, (await webhooks.attempts(record)).items.length, 'and sends nothing')
  t.match((await webhooks.deliveries(record)).items[0], { status: 'skipped', lastError: 'the webhook was disabled' }, 'what was still queued is skipped, for a replay to send later')
})

t.test('a delivery too old for its next attempt is given up', async (t) => {
  const { webhooks, clock, owner, drain } = await engine(t, { env: { WEBHOOK_MAX_AGE_HOURS: '1' } })
  const hook = await receiver(t, [], { status: 500 })
  const { webhook } = await webhooks.create(owner, { url: hook.url, events: ['thing.updated'] }, null)
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  await exhaust(drain, () => { clock.advance(3_600_000 / 4) }, 20)
  const record = (await webhooks.find(owner, webhook.id))!
  const [last] = (await webhooks.attempts(record)).items
  t.match(last, { outcome: 'failed', error: /later than 1 h after the delivery was asked for/ })
  t.ok(hook.received.length < 12, 'fewer attempts than WEBHOOK_MAX_ATTEMPTS')
})
