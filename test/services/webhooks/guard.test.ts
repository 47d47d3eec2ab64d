import t from 'tap'
import { once } from 'node:events'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { ResolveAll } from '../../../services/outbound/internal-addresses.js'
import { refusal } from '../../helper.js'
import { engine, receiver, resolver, thingEvent } from './fixtures.js'

t.test('internal addresses are refused when a webhook is saved unless the operator allowed them', async (t) => {
  const { webhooks, owner } = await engine(t, { env: { WEBHOOK_ALLOWED_HOSTS: '' }, resolveAll: resolver({ 'loop.example': ['93.184.215.14', '127.0.0.1'], 'meta.example': ['169.254.169.254'] }) })
  const refused: Array<[string, string]> = [
    ['http://127.0.0.1:8080/hook', 'loopback'],
    ['http://[::1]/hook', 'loopback'],
    ['http://10.1.2.3/hook', 'private'],
    ['http://192.168.0.10/hook', 'private'],
    ['http://169.254.169.254/latest/meta-data', 'link-local'],
    ['https://[::ffff:127.0.0.1]/hook', 'loopback'],
    ['https://loop.example/hook', 'loopback'],
    ['https://meta.example/hook', 'link-local']
  ]
  for (const [url, kind] of refused) {
    t.match(await refusal(webhooks.create(owner, { url, events: ['*'] }, null)), { status: 400, code: 'APP_WEBHOOK_URL_FORBIDDEN', message: new RegExp(`${kind} address.*WEBHOOK_ALLOWED_HOSTS`), details: { fields: [{ path: 'body.url' }] } }, url)
  }
  await webhooks.create(owner, { url: 'https://93.184.215.14/hook', events: ['*'] }, null)
  await webhooks.create(owner, { url: 'https://not-yet.example/hook', events: ['*'] }, null)
  t.pass('a public address, and a name that does not resolve yet (each delivery checks again), are taken')
  const record = (await webhooks.list(owner)).items[0]
  t.match(await refusal(webhooks.update((await webhooks.find(owner, record.id))!, { url: 'http://127.0.0.1/hook' })), { code: 'APP_WEBHOOK_URL_FORBIDDEN' }, 'a change of URL is checked too')
})

t.test('a host that resolves elsewhere by delivery time is checked again, and a loopback answer is refused', async (t) => {
  const answers: Record<string, string[]> = { 'hook.example': ['93.184.215.14'] }
  const { webhooks, owner, drain } = await engine(t, { env: { WEBHOOK_ALLOWED_HOSTS: '' }, resolveAll: async (host) => await resolver(answers)(host) })
  const hook = await receiver(t)
  const { webhook } = await webhooks.create(owner, { url: `http://hook.example:${hook.port}/hook`, events: ['*'] }, null)
  answers['hook.example'] = ['127.0.0.1']
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  await drain()
  t.equal(hook.received.length, 0, 'the loopback receiver got nothing')
  const [attempt] = (await webhooks.attempts((await webhooks.find(owner, webhook.id))!)).items
  t.match(attempt, { outcome: 'failed', responseStatus: null, error: /127\.0\.0\.1, a loopback address.*WEBHOOK_ALLOWED_HOSTS/ }, 'refused at once, not retried')
})

t.test('the connection goes to the addresses the guard checked, and only there', async (t) => {
  const asked: string[] = []
  const pinned: ResolveAll = async (host) => { asked.push(host); return await resolver({ 'receiver.test': ['127.0.0.1'] })(host) }
  const { webhooks, owner, drain } = await engine(t, { env: { WEBHOOK_ALLOWED_HOSTS: 'receiver.test' }, resolveAll: pinned })
  const hook = await receiver(t)
  await webhooks.create(owner, { url: `http://receiver.test:${hook.port}/hook`, events: ['*'] }, null)
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  await drain()
  // receiver.test is in no real resolver: reaching the receiver means the call connected to the checked address.
  t.equal(hook.received.length, 1)
  t.equal(hook.received[0].headers.host, `receiver.test:${hook.port}`, 'the Host header names the URL\'s host')
  t.same(asked, ['receiver.test', 'receiver.test'], 'resolved once when saved and once for the attempt')
})

t.test('a receiver that does not answer in time: the attempt times out and is retried', async (t) => {
  const { webhooks, owner, drain } = await engine(t, { env: { WEBHOOK_TIMEOUT_SECONDS: '1' } })
  const silent = createServer(() => {})
  silent.listen(0, '127.0.0.1')
  await once(silent, 'listening')
  t.teardown(() => { silent.closeAllConnections(); silent.close() })
  const { webhook } = await webhooks.create(owner, { url: `http://127.0.0.1:${(silent.address() as AddressInfo).port}/`, events: ['*'] }, null)
  await webhooks.publish('things', 'p1', [thingEvent(1)])
  await drain()
  const [attempt] = (await webhooks.attempts((await webhooks.find(owner, webhook.id))!)).items
  t.match(attempt, { outcome: 'retry', responseStatus: null, error: /^ETIMEDOUT: no complete answer within 1000 ms/ })
})
