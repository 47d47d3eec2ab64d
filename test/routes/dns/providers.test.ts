import t from 'tap'
import { createServer } from 'node:net'
import { buildTestApp, call, orgWithRoles, tempDir } from '../../helper.js'
import { dig } from '../../services/dns/dig.js'
import { startPowerDns } from '../../services/dns/providers/pdns-server.js'
import { startRoute53Api } from '../../services/dns/providers/route53-api.js'

t.test('providers: configured with sealed credentials, tested, used, and left alone when the project goes', async (t) => {
  const pdns = await startPowerDns(tempDir(t, 'plinth-pdns-'))
  t.teardown(pdns.stop)
  // The peers these tests start listen on loopback, which only an operator's DNS_PROVIDER_PRIVATE_HOSTS opens.
  const app = await buildTestApp(t, { env: { DNS_PROVIDER_PRIVATE_HOSTS: '127.0.0.1' } })
  const { owner, viewer, outsider, orgId } = await orgWithRoles(app)
  const projectId = (await call(app, 'POST', '/api/projects', owner.auth, { orgId, name: 'Site' })).body.data.id as string
  const base = `/api/projects/${projectId}/dns/providers`

  const listed = await call(app, 'GET', base, viewer.auth)
  t.same(listed.body.data.map((provider: { id: string, kind: string }) => [provider.id, provider.kind]), [['builtin', 'builtin']], 'the built-in server is always there')

  const refusals: Array<[string, Record<string, string>, unknown, number, string]> = [
    ['viewer', viewer.auth, { name: 'p', kind: 'powerdns', endpoint: pdns.apiUrl, credentials: { apiKey: 'k' } }, 403, 'APP_FORBIDDEN'],
    ['outsider', outsider.auth, { name: 'p', kind: 'powerdns', endpoint: pdns.apiUrl, credentials: { apiKey: 'k' } }, 404, 'APP_PROJECT_NOT_FOUND'],
    ['no endpoint', owner.auth, { name: 'p', kind: 'powerdns', credentials: { apiKey: 'k' } }, 400, 'APP_DNS_PROVIDER_INVALID'],
    ['no key', owner.auth, { name: 'p', kind: 'powerdns', endpoint: pdns.apiUrl, credentials: {} }, 400, 'APP_DNS_PROVIDER_INVALID'],
    ['the other kind\'s key', owner.auth, { name: 'p', kind: 'cloudflare', credentials: { apiKey: 'k' } }, 400, 'APP_DNS_PROVIDER_INVALID'],
    ['not http', owner.auth, { name: 'p', kind: 'powerdns', endpoint: 'file:///etc/passwd', credentials: { apiKey: 'k' } }, 400, 'APP_DNS_PROVIDER_INVALID'],
    ['credentials in the URL', owner.auth, { name: 'p', kind: 'powerdns', endpoint: 'http://u:p@127.0.0.1:1', credentials: { apiKey: 'k' } }, 400, 'APP_DNS_PROVIDER_INVALID'],
    ['Route 53 without its secret', owner.auth, { name: 'p', kind: 'route53', credentials: { accessKeyId: 'AKID' } }, 400, 'APP_DNS_PROVIDER_INVALID'],
    ['unknown kind', owner.auth, { name: 'p', kind: 'bind', credentials: {} }, 400, 'APP_VALIDATION_FAILED'],
    ['cloud metadata', owner.auth, { name: 'p', kind: 'powerdns', endpoint: 'http://169.254.169.254/latest', credentials: { apiKey: 'k' } }, 400, 'APP_DNS_PROVIDER_ENDPOINT_INTERNAL'],
    ['another loopback address', owner.auth, { name: 'p', kind: 'powerdns', endpoint: 'http://127.0.0.2:8081', credentials: { apiKey: 'k' } }, 400, 'APP_DNS_PROVIDER_ENDPOINT_INTERNAL'],
    ['a private range', owner.auth, { name: 'p', kind: 'cloudflare', endpoint: 'https://10.1.2.3/client/v4', credentials: { apiToken: 't' } }, 400, 'APP_DNS_PROVIDER_ENDPOINT_INTERNAL'],
    ['IPv6 loopback', owner.auth, { name: 'p', kind: 'powerdns', endpoint: 'http://[::1]:8081', credentials: { apiKey: 'k' } }, 400, 'APP_DNS_PROVIDER_ENDPOINT_INTERNAL'],
    ['IPv4-mapped loopback', owner.auth, { name: 'p', kind: 'powerdns', endpoint: 'http://[::ffff:127.0.0.2]:8081', credentials: { apiKey: 'k' } }, 400, 'APP_DNS_PROVIDER_ENDPOINT_INTERNAL']
  ]
  for (const [name, headers, payload, status, code] of refusals) {
    const res = await call(app, 'POST', base, headers, payload)
    t.same([res.status, res.body.code], [status, code], name)
  }

  const created = await call(app, 'POST', base, owner.auth, { name: 'Our PowerDNS', kind: 'powerdns', endpoint: `${pdns.apiUrl}/`, credentials: { apiKey: pdns.apiKey } })
  t.equal(created.status, 201)
  t.match(created.body.data, { name: 'Our PowerDNS', kind: 'powerdns', endpoint: pdns.apiUrl, serverId: 'localhost', hasCredentials: true })
  t.notOk(JSON.stringify(created.body).includes(pdns.apiKey), 'the key is never returned')
  const providerId = created.body.data.id as string
  t.notOk(JSON.stringify((await call(app, 'GET', `${base}/${providerId}`, viewer.auth)).body).includes(pdns.apiKey))
  const stored = await app.store.collection('dns_providers').findOne({ _id: providerId })
  t.notOk(JSON.stringify(stored).includes(pdns.apiKey), 'nor stored in the clear')
  t.match(stored?.sealed, /^v1\./)

  t.same((await call(app, 'POST', `${base}/${providerId}/test`, owner.auth)).body.data, { ok: true, message: 'powerdns answered with these credentials' })
  const wrong = (await call(app, 'POST', base, owner.auth, { name: 'Wrong key', kind: 'powerdns', endpoint: pdns.apiUrl, credentials: { apiKey: 'nope' } })).body.data.id as string
  t.match((await call(app, 'POST', `${base}/${wrong}/test`, owner.auth)).body.data, { ok: false, message: /^PowerDNS refused the credentials \(401\)/ })
  const unused = createServer()
  await new Promise<void>((resolve) => unused.listen(0, '127.0.0.1', resolve))
  const { port } = unused.address() as { port: number }
  await new Promise((resolve) => unused.close(resolve))
  const closed = (await call(app, 'POST', base, owner.auth, { name: 'Nobody', kind: 'powerdns', endpoint: `http://127.0.0.1:${port}`, credentials: { apiKey: 'k' } })).body.data.id as string
  t.match((await call(app, 'POST', `${base}/${closed}/test`, owner.auth)).body.data, { ok: false, message: `Could not reach PowerDNS at 127.0.0.1:${port}: ECONNREFUSED` })
  t.equal((await call(app, 'POST', `${base}/${providerId}/test`, viewer.auth)).status, 403)
  const route53 = await startRoute53Api({ accessKeyId: 'AKID', secretAccessKey: 'secret/key' })
  t.teardown(route53.stop)
  const aws = await call(app, 'POST', base, owner.auth, { name: 'AWS', kind: 'route53', endpoint: route53.url, credentials: { accessKeyId: 'AKID', secretAccessKey: 'secret/key' } })
  t.notOk(JSON.stringify(aws.body).includes('secret/key'))
  t.same((await call(app, 'POST', `${base}/${aws.body.data.id as string}/test`, owner.auth)).body.data, { ok: true, message: 'route53 answered with these credentials' }, 'the sealed keys sign requests Route 53 accepts')
  t.equal((await call(app, 'DELETE', `${base}/${aws.body.data.id as string}`, owner.auth)).status, 200)

  // The same endpoint on a server whose operator did not name the host.
  const strict = await buildTestApp(t)
  const strictOwner = await orgWithRoles(strict)
  const strictProject = (await call(strict, 'POST', '/api/projects', strictOwner.owner.auth, { orgId: strictOwner.orgId, name: 'Strict' })).body.data.id as string
  const notAllowed = await call(strict, 'POST', `/api/projects/${strictProject}/dns/providers`, strictOwner.owner.auth, { name: 'p', kind: 'powerdns', endpoint: pdns.apiUrl, credentials: { apiKey: pdns.apiKey } })
  t.same([notAllowed.status, notAllowed.body.code], [400, 'APP_DNS_PROVIDER_ENDPOINT_INTERNAL'], 'without the operator\'s word, loopback is refused')
  t.match(notAllowed.body.message, /127\.0\.0\.1.*DNS_PROVIDER_PRIVATE_HOSTS/)

  const dns = `/api/projects/${projectId}/dns`
  const zone = await call(app, 'POST', `${dns}/zones`, owner.auth, { name: 'external.example', providerId })
  t.match([zone.status, zone.body.data], [201, { providerId, providerKind: 'powerdns' }])
  const failing = await call(app, 'POST', `${dns}/zones`, owner.auth, { name: 'other.example', providerId: wrong })
  t.match([failing.status, failing.body.code, failing.body.message], [502, 'APP_DNS_PROVIDER_FAILED', /PowerDNS refused the credentials/])
  t.same((await call(app, 'GET', `${dns}/zones`, owner.auth)).body.data.map((z: { name: string }) => z.name), ['external.example'], 'a zone the provider refused is not kept')
  const record = await call(app, 'POST', `${dns}/records`, owner.auth, { zoneId: zone.body.data.id, name: 'www', type: 'A', content: '192.0.2.44', ttl: 60 })
  t.equal(record.status, 201)
  t.same((await dig(pdns.dnsPort, 'www.external.example', 'A')).answer, ['www.external.example. 60 IN A 192.0.2.44'], 'written through PowerDNS\'s API, served by PowerDNS')
  const inUse = await call(app, 'DELETE', `${base}/${providerId}`, owner.auth)
  t.same([inUse.status, inUse.body.code], [409, 'APP_DNS_PROVIDER_IN_USE'])
  t.equal((await call(app, 'DELETE', `${base}/${wrong}`, owner.auth)).status, 200)
  t.equal((await call(app, 'DELETE', `${base}/builtin`, owner.auth)).status, 404, 'the built-in server cannot be removed')

  await call(app, 'POST', `${dns}/zones`, owner.auth, { name: 'local.example' })
  t.equal((await call(app, 'DELETE', `/api/projects/${projectId}`, owner.auth)).status, 200)
  t.equal(await app.dns.builtin.zoneFor('www.local.example'), null, 'the built-in zone went with the project')
  t.same((await dig(pdns.dnsPort, 'www.external.example', 'A')).answer, ['www.external.example. 60 IN A 192.0.2.44'], 'the PowerDNS zone was left alone')
  t.equal(await app.store.collection('dns_providers').countDocuments({ projectId }), 0, 'the project\'s sealed credentials went with it')
})
