import t from 'tap'
import { createHmac } from 'node:crypto'
import { newWebhookSecret, signatureHeader, verifyWebhookSignature } from '../../../services/webhooks/signing.js'

t.test('the documented recipe: HMAC-SHA256 over "<t>.<raw body>", keyed with the whole secret, hex', async (t) => {
  const secret = 'whsec_test'
  const body = '{"id":"e1","type":"thing.updated"}'
  const expected = createHmac('sha256', secret).update(`1767225600.${body}`).digest('hex')
  t.equal(signatureHeader([secret], 1767225600, body), `t=1767225600,v1=${expected}`)
})

t.test('verification: either secret, the raw body, the tolerance, a malformed header', async (t) => {
  const [current, previous] = [newWebhookSecret(), newWebhookSecret()]
  const body = Buffer.from('{"a":1}')
  const header = signatureHeader([current, previous], 1000, body)
  const check = (input: Partial<Parameters<typeof verifyWebhookSignature>[0]>) => verifyWebhookSignature({ header, rawBody: body, secrets: [current], nowSeconds: 1000, ...input })
  t.same(check({}), { ok: true, timestamp: 1000 })
  t.same(check({ secrets: [previous] }), { ok: true, timestamp: 1000 }, 'the previous secret verifies during a rotation')
  t.same(check({ secrets: ['whsec_other', previous] }), { ok: true, timestamp: 1000 }, 'a receiver may hold several')
  t.same(check({ secrets: ['whsec_other'] }), { ok: false, reason: 'no signature matches' })
  t.same(check({ rawBody: '{"a": 1}' }), { ok: false, reason: 'no signature matches' }, 'the body as received, not re-serialised')
  t.same(check({ nowSeconds: 1301 }), { ok: false, reason: 'the timestamp is outside the tolerance' }, 'five minutes by default')
  t.same(check({ nowSeconds: 1301, toleranceSeconds: 600 }), { ok: true, timestamp: 1000 })
  t.same(check({ header: header.replace('t=1000', 't=1001'), nowSeconds: 1001 }), { ok: false, reason: 'no signature matches' }, 'the time is signed')
  t.same(check({ header: undefined }), { ok: false, reason: 'no signature header' })
  t.same(check({ header: 'v1=abc' }), { ok: false, reason: 'no timestamp in the signature header' })
  t.same(check({ header: 't=1000,v0=deadbeef' }), { ok: false, reason: 'no v1 signature in the signature header' })
  t.match(newWebhookSecret(), /^whsec_[A-Za-z0-9_-]{43}$/)
})
