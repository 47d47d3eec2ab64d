import t from 'tap'
import { randomBytes } from 'node:crypto'
import { createSecretBox } from '../../../services/crypto.js'
import { tempStore } from '../../helper.js'
import { ManualClock } from '../../../services/clock.js'
import { createIdGenerator } from '../../../services/ids.js'
import { parseDnsConfig } from '../../../services/dns/config.js'
import { buildDnsServices } from '../../../services/dns/index.js'
import { internalEndpointProblem } from '../../../services/dns/endpoint-guard.js'

t.test('internal addresses are named, public ones and allowed hosts pass', async (t) => {
  const internal = ['http://127.0.0.1:8081', 'http://127.9.9.9', 'http://localhost:1', 'http://10.0.0.1', 'http://172.20.1.1', 'http://192.168.1.1',
    'http://169.254.169.254', 'http://100.64.0.1', 'http://0.0.0.0', 'http://[::1]', 'http://[fd00::1]', 'http://[fe80::1]', 'http://[::ffff:10.0.0.1]', 'http://[::]', 'http://192.0.2.1', 'http://[2001:db8::1]']
  for (const endpoint of internal) t.match(await internalEndpointProblem(endpoint, []), /is an internal address/, endpoint)
  for (const endpoint of ['http://9.9.9.9', 'https://8.8.8.8/x', 'http://[2606:4700:4700::1111]', 'http://172.32.0.1']) t.equal(await internalEndpointProblem(endpoint, []), null, endpoint)
  t.equal(await internalEndpointProblem('http://127.0.0.1:8081', ['127.0.0.1']), null, 'a host the operator named')
  t.equal(await internalEndpointProblem('http://[::1]:8081', ['::1']), null)
  t.equal(await internalEndpointProblem('http://no-such-host.invalid', []), null, 'a name that does not resolve is left to the call, which fails')
})

t.test('a provider saved while its host was allowed is refused at use once it is not', async (t) => {
  const store = await tempStore(t)
  const clock = new ManualClock(Date.UTC(2026, 4, 17, 12))
  const ports = { store, clock, newId: createIdGenerator(() => clock.nowMs()), secrets: createSecretBox(randomBytes(32)), reservedHosts: [], ownershipKey: randomBytes(32), onQueryError: () => {} }
  const { providers: open } = await buildDnsServices({ ...ports, config: parseDnsConfig({ DNS_PROVIDER_PRIVATE_HOSTS: '127.0.0.1' }) })
  const saved = await open.create('p1', { name: 'Inside', kind: 'powerdns', endpoint: 'http://127.0.0.1:8081', credentials: { apiKey: 'k' } })
  t.ok((await open.open('p1', saved.id)).provider)
  const { providers: strict } = await buildDnsServices({ ...ports, config: parseDnsConfig({}) })
  await t.rejects(strict.open('p1', saved.id), { status: 502, code: 'APP_DNS_PROVIDER_FAILED', message: /127\.0\.0\.1.*DNS_PROVIDER_PRIVATE_HOSTS/ })
  t.match(await strict.test('p1', saved.id), { ok: false, message: /may not be called: its host "127\.0\.0\.1" is an internal address/ }, 'the test action says why')
})
