import t from 'tap'
import { FormatRegistry } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { Webhook, WEBHOOK_LIMITS } from '../../../schemas/webhooks.js'
import { refusal } from '../../helper.js'
import { engine, receiver } from './fixtures.js'

FormatRegistry.Set('date-time', (value) => /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/.test(value))

t.test('create, list, update and delete; the secret is shown once and stored sealed', async (t) => {
  const { webhooks, owner, store } = await engine(t)
  const hook = await receiver(t)
  const created = await webhooks.create(owner, { url: `${hook.url}#fragment`, events: ['thing.updated', 'thing.updated', 'webhook.disabled'], filter: { color: 'red' }, description: '  CI  ' }, 'u-admin')
  t.match(created.secret, /^whsec_[A-Za-z0-9_-]{43}$/)
  t.match(created.webhook, { source: 'things', url: hook.url, events: ['thing.updated', 'webhook.disabled'], filter: { color: 'red' }, active: true, description: 'CI', disabled: null, failures: { count: 0, since: null }, createdBy: 'u-admin' })
  t.ok(Value.Check(Webhook, created.webhook), 'the view is what the schema says')
  t.notOk(JSON.stringify(created.webhook).includes(created.secret), 'the view never holds the secret')
  const stored = JSON.stringify(await store.collection('webhook_subscriptions').findOne({ _id: created.webhook.id }))
  t.notOk(stored.includes(created.secret.slice(6)), 'the store holds it sealed')

  const page = await webhooks.list(owner)
  t.same(page.items.map((item) => item.id), [created.webhook.id])
  t.same((await webhooks.list({ projectId: 'p2', source: 'things' })).items, [], 'another project\'s list is its own')
  t.equal(await webhooks.find({ projectId: 'p2', source: 'things' }, created.webhook.id), null, 'as is finding one')
  t.equal(await webhooks.find({ projectId: 'p1', source: 'other' }, created.webhook.id), null, 'and another family\'s')

  const record = (await webhooks.find(owner, created.webhook.id))!
  const updated = await webhooks.update(record, { events: ['*'], filter: null, active: false, description: 'paused' })
  t.match(updated, { events: ['*'], filter: null, active: false, description: 'paused' })
  await webhooks.delete((await webhooks.find(owner, created.webhook.id))!)
  t.equal(await webhooks.find(owner, created.webhook.id), null)
})

t.test('refusals name the field: URL, event types, filter, limit', async (t) => {
  const { webhooks, owner } = await engine(t)
  const cases: Array<[string, Parameters<typeof webhooks.create>[1], string, string]> = [
    ['not a URL', { url: 'not a url', events: ['*'] }, 'APP_WEBHOOK_INVALID_URL', 'body.url'],
    ['another scheme', { url: 'ftp://example.com/x', events: ['*'] }, 'APP_WEBHOOK_INVALID_URL', 'body.url'],
    ['credentials', { url: 'https://user:pw@example.com/x', events: ['*'] }, 'APP_WEBHOOK_INVALID_URL', 'body.url'],
    ['too long', { url: `https://example.com/${'x'.repeat(WEBHOOK_LIMITS.urlLength)}`, events: ['*'] }, 'APP_WEBHOOK_INVALID_URL', 'body.url'],
    ['an unknown type', { url: 'https://example.com/x', events: ['thing.updated', 'thing.exploded'] }, 'APP_WEBHOOK_UNKNOWN_EVENT', 'body.events[1]'],
    ['no type', { url: 'https://example.com/x', events: [] }, 'APP_VALIDATION_FAILED', 'body.events'],
    ['a filter the source refuses', { url: 'https://example.com/x', events: ['*'], filter: { color: 7 } }, 'APP_VALIDATION_FAILED', 'body.filter.color']
  ]
  for (const [name, input, code, path] of cases) {
    const error = await refusal(webhooks.create(owner, input, null))
    t.match(error, { status: 400, code, details: { fields: [{ path }] } }, name)
  }
})

t.test('a source without a filter takes none', async (t) => {
  const { webhooks, owner } = await engine(t, { source: { name: 'things', eventTypes: ['thing.updated'], sample: (_p, type) => ({ key: 's', type, occurredAt: new Date(0), actor: null, data: {} }) } })
  t.match(await refusal(webhooks.create(owner, { url: 'https://example.com/x', events: ['*'], filter: { any: 1 } }, null)), { code: 'APP_VALIDATION_FAILED', details: { fields: [{ path: 'body.filter' }] } })
})

t.test('at most WEBHOOK_LIMITS.perOwner webhooks per project and family', async (t) => {
  const { webhooks, owner } = await engine(t)
  for (let i = 0; i < WEBHOOK_LIMITS.perOwner; i++) await webhooks.create(owner, { url: `https://example.com/${i}`, events: ['*'] }, null)
  t.match(await refusal(webhooks.create(owner, { url: 'https://example.com/x', events: ['*'] }, null)), { status: 409, code: 'APP_WEBHOOK_LIMIT_REACHED', details: { limit: WEBHOOK_LIMITS.perOwner } })
  await webhooks.create({ projectId: 'p2', source: 'things' }, { url: 'https://example.com/x', events: ['*'] }, null)
})

t.test('rotation grace: the default, the limit', async (t) => {
  const { webhooks, owner, clock } = await engine(t)
  const { webhook } = await webhooks.create(owner, { url: 'https://example.com/x', events: ['*'] }, null)
  const rotated = await webhooks.rotateSecret((await webhooks.find(owner, webhook.id))!)
  t.equal(rotated.webhook.secrets[1].expiresAt, new Date(clock.nowMs() + WEBHOOK_LIMITS.previousSecretDefaultSeconds * 1000).toISOString())
  t.equal(rotated.webhook.secrets[1].id, webhook.secrets[0].id, 'the previous secret is the one it replaced')
  const third = await webhooks.rotateSecret((await webhooks.find(owner, webhook.id))!)
  t.equal(third.webhook.secrets.length, 2, 'at most two sign')
  t.equal(third.webhook.secrets[1].id, rotated.webhook.secrets[0].id)
  t.match(await refusal(webhooks.rotateSecret((await webhooks.find(owner, webhook.id))!, { previousExpiresInSeconds: WEBHOOK_LIMITS.previousSecretMaxSeconds + 1 })), { code: 'APP_VALIDATION_FAILED', details: { fields: [{ path: 'body.previousExpiresInSeconds' }] } })
})
