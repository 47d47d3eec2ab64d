import t from 'tap'
import type { FastifyPluginAsync } from 'fastify'
import { verifyWebhookSignature } from '../../services/webhooks/signing.js'
import { WEBHOOK_PRUNE_JOB, WEBHOOK_SWEEP_JOB } from '../../services/webhooks/index.js'
import { buildTestApp } from '../helper.js'
import { receiver, thingEvent, thingSource } from '../services/webhooks/fixtures.js'

t.test('in the app: a family registers its source, publishes, and the node\'s worker delivers; a deleted project takes its webhooks', async (t) => {
  const family: FastifyPluginAsync = async (app) => { app.webhooks.registerSource(thingSource()) }
  const app = await buildTestApp(t, { env: { WEBHOOK_ALLOWED_HOSTS: '127.0.0.1' }, extra: family })
  const hook = await receiver(t)
  let arrived: () => void = () => {}
  const first = new Promise<void>((resolve) => { arrived = resolve })
  hook.server.on('request', (request) => { request.on('end', () => { setImmediate(arrived) }) })

  const owner = { projectId: 'p-app', source: 'things' }
  const { webhook, secret } = await app.webhooks.create(owner, { url: hook.url, events: ['*'] }, 'u1')
  await app.webhooks.publish('things', 'p-app', [thingEvent(1)])
  await first
  t.equal(hook.received.length, 1)
  t.ok(verifyWebhookSignature({ header: hook.received[0].headers['plinth-signature'] as string, rawBody: hook.received[0].rawBody, secrets: [secret] }).ok, 'signed with the secret shown once')
  t.ok(await app.jobs.get(`-every:${WEBHOOK_SWEEP_JOB}`), 'the outbox sweep is scheduled')
  t.ok(await app.jobs.get(`-every:${WEBHOOK_PRUNE_JOB}`), 'and the prune')

  await app.projects.purge('p-app')
  t.equal(await app.webhooks.find(owner, webhook.id), null, 'a deleted project\'s webhooks go with it')
})
