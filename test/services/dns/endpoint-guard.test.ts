import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { createSecretBox } from '../../../services/platform/crypto.js'
import { tempStore } from '../../helper.js'
import { ManualClock } from '../../../services/platform/clock.js'
import { createIdGenerator } from '../../../services/platform/ids.js'
import { parseDnsConfig } from '../../../services/dns/config.js'
import { buildDnsServices } from '../../../services/dns/index.js'
import { DnsProviders } from '../../../services/dns/providers.js'
import { BuiltinProvider } from '../../../services/dns/providers/builtin.js'
import { internalEndpointProblem } from '../../../services/dns/endpoint-guard.js'
import { AddressGuard } from '../../../services/outbound/internal-addresses.js'
import { startCloudflareApi } from './providers/cloudflare-api.js'

t.test('internal addresses are named, public ones and allowed hosts pass', async (t) => {
  const closed = new AddressGuard({ allowedHosts: [] })
  const internal = ['http://127.0.0.1:8081', 'http://127.9.9.9', 'http://localhost:1', 'http://10.0.0.1', 'http://172.20.1.1', 'http://192.168.1.1',
    'http://169.254.169.254', 'http://100.64.0.1', 'http://0.0.0.0', 'http://[::1]', 'http://[fd00::1]', 'http://[fe80::1]', 'http://[::ffff:10.0.0.1]', 'http://[::]', 'http://192.0.2.1', 'http://[2001:db8::1]']
  for (const endpoint of internal) t.match(await internalEndpointProblem(closed, endpoint), /is an internal address/, endpoint)
  for (const endpoint of ['http://9.9.9.9', 'https://8.8.8.8/x', 'http://[2606:4700:4700::1111]', 'http://172.32.0.1']) t.equal(await internalEndpointProblem(closed, endpoint), null, endpoint)
  t.equal(await internalEndpointProblem(new AddressGuard({ allowedHosts: ['127.0.0.1'] }), 'http://127.0.0.1:8081'), null, 'a host the operator named')
  t.equal(await internalEndpointProblem(new AddressGuard({ allowedHosts: ['::1'] }), 'http://[::1]:8081'), null)
  t.equal(await internalEndpointProblem(closed, 'http://no-such-host.invalid'), null, 'a name that does not resolve is left to the call, which fails')
})

const ports = async (t: Test) => {
  const store = await tempStore(t)
  const clock = new ManualClock(Date.UTC(2026, 4, 17, 12))
  return { store, clock, newId: createIdGenerator(() => clock.nowMs()), secrets: createSecretBox(randomBytes(32)), reservedHosts: [], ownershipKey: randomBytes(32), onQueryError: () => {} }
}

t.test('a provider saved while its host was allowed is refused at every call once it is not', async (t) => {
  const api = await startCloudflareApi('cf-token')
  t.teardown(api.stop)
  const base = await ports(t)
  const { providers: open } = await buildDnsServices({ ...base, config: parseDnsConfig({ DNS_PROVIDER_PRIVATE_HOSTS: '127.0.0.1' }) })
  const saved = await open.create('p1', { name: 'Inside', kind: 'cloudflare', endpoint: api.url, credentials: { apiToken: 'cf-token' } })
  t.same(await open.test('p1', saved.id), { ok: true, message: 'cloudflare answered with these credentials' })
  const { providers: strict } = await buildDnsServices({ ...base, config: parseDnsConfig({}) })
  const { provider } = await strict.open('p1', saved.id)
  await t.rejects(provider.check(), { status: 502, code: 'APP_DNS_PROVIDER_FAILED', message: /127\.0\.0\.1.*DNS_PROVIDER_PRIVATE_HOSTS/ })
  t.match(await strict.test('p1', saved.id), { ok: false, message: /may not be called: its host "127\.0\.0\.1" is an internal address/ }, 'the test action says why')
})

t.test('a provider call connects to the addresses the guard checked, not to a second resolution', async (t) => {
  const api = await startCloudflareApi('cf-token')
  t.teardown(api.stop)
  const { port } = new URL(api.url)
  const { store, clock, newId, secrets } = await ports(t)
  // A name only the guard's resolver knows: were the call to resolve it again itself, it would reach nothing.
  const guard = new AddressGuard({ allowedHosts: ['127.0.0.1/32'], resolveAll: async (host) => host === 'pdns.plinth.test' ? ['127.0.0.1'] : [] })
  const providers = new DnsProviders(store, { clock, newId, secrets, builtin: new BuiltinProvider(store, { clock }), guard, zonesOn: async () => 0 })
  await providers.init()
  const saved = await providers.create('p1', { name: 'Pinned', kind: 'cloudflare', endpoint: `http://pdns.plinth.test:${port}`, credentials: { apiToken: 'cf-token' } })
  t.same(await providers.test('p1', saved.id), { ok: true, message: 'cloudflare answered with these credentials' })

  // And a resolver that now answers an address outside the allowance is refused before any connection.
  const moved = new AddressGuard({ allowedHosts: ['127.0.0.1/32'], resolveAll: async () => ['127.0.0.2'] })
  const elsewhere = new DnsProviders(store, { clock, newId, secrets, builtin: new BuiltinProvider(store, { clock }), guard: moved, zonesOn: async () => 0 })
  t.match(await elsewhere.test('p1', saved.id), { ok: false, message: /its host "pdns\.plinth\.test" is an internal address \(127\.0\.0\.2\)/ })
})
